package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// What a signal does once tollgate is interrupted (docs/ci.md, README):
//
//   - SIGTERM never ends it at once. It is how tools stop a process
//     (timeout, CI runners, kubectl, systemd), often sent to the whole
//     process group, or to the process and then its group, so one
//     stop arrives twice; their way to insist is SIGKILL, after their
//     grace period, which is longer than tollgate's (5 s for requests in
//     flight).
//   - SIGINT is a person at a terminal, or a runner's cancel: a second
//     one quits at once, without the report, unless it comes within
//     sameInterrupt of the first interrupt (the same Ctrl-C, delivered
//     again). tollgate says when it listens ("interrupt again").
//
// The kernel merges two deliveries of a signal only while the first is
// still pending, so whether one stop arrived once or twice was chance.

// sameInterrupt is how long after the first interrupt a SIGINT is taken
// as that interrupt.
const sameInterrupt = time.Second

// quitsAtOnce reports whether sig, arriving at, ends a run interrupted at
// first without waiting for the report.
func quitsAtOnce(sig os.Signal, at, first time.Time) bool {
	return sig == os.Interrupt && at.Sub(first) >= sameInterrupt
}

// signalContext is canceled by the first SIGINT or SIGTERM, so the run
// stops sending, lets the requests in flight finish and writes what it
// has (samples streamed so far are written out at once). A later signal
// that quitsAtOnce exits 130 at once (samples written out first). samples
// may be nil.
func signalContext(stderr io.Writer, samples *sampleWriter) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	// Each signal is stamped as it arrives, by a goroutine that does
	// nothing else: the handler below may be busy writing samples out
	// when the second of a pair arrives, and must not take its lateness
	// in reading it for a second interrupt.
	type arrival struct {
		sig os.Signal
		at  time.Time
	}
	arrived := make(chan arrival, 8)
	go func() {
		for {
			select {
			case sig := <-ch:
				select {
				case arrived <- arrival{sig, time.Now()}:
				default: // eight unread: one more says nothing new
				}
			case <-done:
				return
			}
		}
	}()
	go func() {
		var first arrival
		select {
		case first = <-arrived:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "tollgate: interrupted; finishing the partial report")
		cancel()
		samples.flush()
		listen := time.NewTimer(time.Until(first.at.Add(sameInterrupt)))
		defer listen.Stop()
		for {
			select {
			case a := <-arrived:
				if quitsAtOnce(a.sig, a.at, first.at) {
					samples.flushForExit()
					os.Exit(ExitInterrupted)
				}
			case <-listen.C:
				fmt.Fprintln(stderr, "tollgate: interrupt again (Ctrl-C, SIGINT) to quit now, without the report")
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}
