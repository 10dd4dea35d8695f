package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/engine/live"
	"github.com/tollgate-dev/tollgate/report"
)

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressLine redraws one status line per load point on a terminal.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
	last  string
}

func newProgressLine(w io.Writer) *progressLine {
	_, noColor := os.LookupEnv("NO_COLOR")
	return &progressLine{w: w, color: !noColor && os.Getenv("TERM") != "dumb"}
}

func (p *progressLine) update(pr live.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := pr.Run + "/" + pr.Phase + "/" + pr.Point
	if p.last != "" && p.last != key {
		fmt.Fprintln(p.w)
	}
	p.last = key
	total := "?"
	if pr.Total > 0 {
		total = fmt.Sprint(pr.Total)
	}
	rate := 0.0
	if s := pr.Elapsed.Seconds(); s > 0 {
		rate = float64(pr.Done) / s
	}
	errs := fmt.Sprintf("errors %d", pr.Errors)
	if pr.Errors > 0 && p.color {
		errs = "\x1b[31m" + errs + "\x1b[0m"
	}
	ttft := "-"
	if pr.TTFTP50MS != nil {
		ttft = fmt.Sprintf("%.1f ms", *pr.TTFTP50MS)
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s %s %s  %d/%s  %.1fs  %.1f req/s  in flight %d  %s  ttft p50 %s",
		pr.Run, pr.Phase, pr.Point, pr.Done, total, pr.Elapsed.Seconds(), rate, pr.InFlight, errs, ttft)
}

func (p *progressLine) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last != "" {
		fmt.Fprintln(p.w)
		p.last = ""
	}
}

// sampleFlushEvery bounds what a kill can lose of --samples-out: lines are
// written out at least this often, and on every signal.
const sampleFlushEvery = time.Second

// errSamplesGone: the --samples-out file was removed or replaced while the
// run wrote to it, so what it wrote is not at its path.
var errSamplesGone = errors.New("the file was removed or replaced during the run; its samples are lost")

// sampleWriter streams request samples as JSON lines, so a long run keeps
// none of them in memory. Whole lines reach the file at least every
// sampleFlushEvery. The first write error is kept and reported.
type sampleWriter struct {
	mu   sync.Mutex
	path string
	f    *os.File
	bw   *bufio.Writer
	enc  *json.Encoder
	err  error
	stop chan struct{}
	done chan struct{}
}

// openSamples creates path and starts the periodic flush; nil for no path.
func openSamples(path string) (*sampleWriter, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	s := &sampleWriter{path: path, f: f, bw: bw, enc: json.NewEncoder(bw), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(sampleFlushEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				s.flush()
			case <-s.stop:
				return
			}
		}
	}()
	return s, nil
}

func (s *sampleWriter) write(run string, smp report.RequestSample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	s.err = s.enc.Encode(struct {
		Run string `json:"run"`
		report.RequestSample
	}{run, smp})
}

// flush writes out the buffered lines; safe on a nil writer.
func (s *sampleWriter) flush() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *sampleWriter) flushLocked() {
	if err := s.bw.Flush(); err != nil && s.err == nil {
		s.err = err
	}
}

// flushForExit writes out the buffered lines and keeps the lock, so no
// half line follows before the process exits; safe on a nil writer.
func (s *sampleWriter) flushForExit() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.flushLocked()
}

// close flushes and closes the file, and reports the first error any write
// met, or errSamplesGone when the file is no longer at its path.
func (s *sampleWriter) close() error {
	if s == nil {
		return nil
	}
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	if s.err == nil {
		mine, err := s.f.Stat()
		if err == nil {
			var there os.FileInfo
			if there, err = os.Stat(s.path); err != nil || !os.SameFile(mine, there) {
				err = errSamplesGone
			}
		}
		s.err = err
	}
	if err := s.f.Close(); err != nil && s.err == nil {
		s.err = err
	}
	return s.err
}
