package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
)

// A request's first write on a connection the server has already closed
// writes nothing and says so; on a live connection it writes.
func TestFirstWriteOnClosedConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var dialed atomic.Bool
	dial := hintDialer(kernelTimestampDialer((&net.Dialer{}).DialContext), &dialed)
	for _, closeFirst := range []bool{false, true} {
		if closeFirst && runtime.GOOS != "linux" {
			continue // the kernel's TCP state is read on Linux only
		}
		c, err := dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		p := c.(*poolConn)
		srv := <-accepted
		if closeFirst {
			_ = srv.Close()
			// Bounded wait for the FIN: the check reads the kernel's state.
			deadline := time.Now().Add(5 * time.Second)
			for !peerClosed(p.Conn) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}
		p.acquired()
		n, err := p.Write([]byte("POST / HTTP/1.1\r\n"))
		if closeFirst {
			if n != 0 || !errors.Is(err, errClosedBeforeSend) || !p.closedUnsent() {
				t.Errorf("closed by the server: wrote %d, %v, unsent %v; want 0, %v", n, err, p.closedUnsent(), errClosedBeforeSend)
			}
		} else if err != nil || p.closedUnsent() {
			t.Errorf("live connection: %v, unsent %v", err, p.closedUnsent())
		}
		_ = c.Close()
		_ = srv.Close()
	}
	if !dialed.Load() {
		t.Error("dialed not set")
	}
}

type nameWire struct{ Wire }

func (nameWire) Name() string { return "test" }

// Every connection failure names its likely cause, the class unchanged.
func TestErrorMessagesNameTheCause(t *testing.T) {
	c, err := New(Config{BaseURL: "http://127.0.0.1:1"}, nameWire{})
	if err != nil {
		t.Fatal(err)
	}
	dialErr := func(call string, e syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError(call, e)}
	}
	tests := []struct {
		name    string
		err     error
		during  string
		dialed  bool
		class   measure.ErrorClass
		message string
	}{
		{"EOF before any response byte", fmt.Errorf("read: %w", io.EOF), "await response", false, measure.ClassReset, "the server closed the connection before any response byte"},
		{"reset mid-stream", syscall.ECONNRESET, "read stream", false, measure.ClassReset, "the server closed the connection mid-response"},
		{"cut body", fmt.Errorf("body: %w", io.ErrUnexpectedEOF), "read body", false, measure.ClassReset, "the server closed the connection mid-response"},
		{"EMFILE", dialErr("socket", syscall.EMFILE), "connect", false, measure.ClassConnect, "open-file limit (ulimit -n"},
		{"refused, never connected", dialErr("connect", syscall.ECONNREFUSED), "connect", false, measure.ClassConnect, "nothing is listening at that address"},
		{"refused after connecting", dialErr("connect", syscall.ECONNREFUSED), "connect", true, measure.ClassConnect, "its listen backlog overflowed or it stopped listening"},
		{"out of ports", dialErr("connect", syscall.EADDRNOTAVAIL), "connect", false, measure.ClassConnect, "no local port left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.dialed.Store(tt.dialed)
			e := c.classify(context.Background(), tt.err, tt.during)
			if e.Class != tt.class || !strings.Contains(e.Message, tt.message) {
				t.Errorf("%s %q, want %s containing %q", e.Class, e.Message, tt.class, tt.message)
			}
			if !errors.Is(e, tt.err) {
				t.Errorf("the cause %v is not wrapped", tt.err)
			}
		})
	}
	if n := OpenFileLimit(); n > 0 {
		e := c.classify(context.Background(), dialErr("socket", syscall.EMFILE), "connect")
		if want := "(ulimit -n " + strconv.FormatUint(n, 10) + ") reached"; !strings.Contains(e.Message, want) {
			t.Errorf("%q lacks %q", e.Message, want)
		}
	}
}
