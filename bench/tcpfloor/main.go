// Command tcpfloor measures the floor under tollgate's per-event client
// cost on this machine: the CPU a bare Go program spends receiving small
// messages that arrive one per read, with no HTTP and no parsing, at the
// same shape as bench/client's CPU run (256 streams × 256 events, one event
// every 10 ms per stream). Run: go run ./bench/tcpfloor
package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/bare"
)

const streams, events, size = 256, 256, 160

func main() {
	if len(os.Args) > 1 && os.Args[1] == "server" {
		server()
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := exec.Command(os.Args[0], "server", addr)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Process.Kill()
	time.Sleep(300 * time.Millisecond)

	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	var wg sync.WaitGroup
	var total int64
	var mu sync.Mutex
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				panic(err)
			}
			defer c.Close()
			n, err := bare.Drain(c, make([]byte, bare.ReadBytes), nil)
			if err != nil {
				panic(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	n := total / size
	fmt.Printf("bare Go TCP reads: %d events of %d bytes on %d streams in %v; client CPU %v = %.2f µs/event (user %.2f, sys %.2f)\n",
		n, size, streams, time.Since(start).Round(time.Millisecond), cpu.Round(time.Millisecond), float64(cpu.Microseconds())/float64(n),
		float64((after.Utime.Nano()-before.Utime.Nano())/1000)/float64(n), float64((after.Stime.Nano()-before.Stime.Nano())/1000)/float64(n))
}

// server accepts streams and writes one message per stream every 10 ms,
// like a decode step, then closes.
func server() {
	ln, err := net.Listen("tcp", os.Args[2])
	if err != nil {
		panic(err)
	}
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = 'x'
	}
	var conns []net.Conn
	for len(conns) < streams {
		c, err := ln.Accept()
		if err != nil {
			panic(err)
		}
		conns = append(conns, c)
	}
	t := time.NewTicker(10 * time.Millisecond)
	for e := 0; e < events; e++ {
		<-t.C
		for _, c := range conns {
			if _, err := c.Write(msg); err != nil {
				panic(err)
			}
		}
	}
	for _, c := range conns {
		c.Close()
	}
}
