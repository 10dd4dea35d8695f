//go:build linux

package transport

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestParseTimestampNS(t *testing.T) {
	cmsg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, unix.CmsgSpace(len(data)))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = level, typ
		h.SetLen(unix.CmsgLen(len(data)))
		copy(b[unix.CmsgLen(0):], data)
		return b
	}
	ts := unix.Timespec{Sec: 1700000000, Nsec: 123456789}
	tsBytes := unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts))
	other := cmsg(unix.SOL_SOCKET, unix.SCM_RIGHTS, []byte{1, 2, 3, 4})
	for _, tc := range []struct {
		name string
		oob  []byte
		want int64
		ok   bool
	}{
		{name: "timestamp alone", oob: cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, tsBytes), want: ts.Nano(), ok: true},
		{name: "after another message", oob: append(other, cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, tsBytes)...), want: ts.Nano(), ok: true},
		{name: "none", oob: other},
		{name: "empty", oob: nil},
		{name: "truncated", oob: cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, tsBytes)[:20]},
		{name: "shorter than a header", oob: []byte{1, 2, 3, 4}},
		{name: "another level", oob: cmsg(unix.SOL_IP, unix.SO_TIMESTAMPNS, tsBytes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseTimestampNS(tc.oob)
			if ok != tc.ok || got != tc.want {
				t.Errorf("got %d %v, want %d %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseTimestampNSDoesNotAllocate(t *testing.T) {
	b := make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.SOL_SOCKET, unix.SO_TIMESTAMPNS
	h.SetLen(unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))))
	if n := testing.AllocsPerRun(100, func() { parseTimestampNS(b) }); n != 0 {
		t.Errorf("%v allocations per parse, want 0", n)
	}
}

// Through a real socket: the dialer wraps the connection and each read
// records the kernel's receive time, which cannot be before the peer wrote
// nor after the read returned. The kernel turns timestamping on for the
// whole host lazily (a deferred static key), so a read just after the
// option was set may carry none; the client falls back then, and the test
// asks again until one does.
func TestKernelTimestampDialerRecordsReceiveTime(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wrote := make(chan time.Time, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		// Answer each "?" once asked, as a server does.
		b := make([]byte, 1)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
			wrote <- time.Now()
			if _, err := c.Write([]byte("hello")); err != nil {
				return
			}
		}
	}()
	d := &net.Dialer{}
	c, err := kernelTimestampDialer(d.DialContext)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc, ok := c.(*tsConn)
	if !ok {
		t.Fatalf("dialer returned %T, want *tsConn", c)
	}
	if _, ok := tc.lastReceive(); ok {
		t.Error("a receive time before anything was read")
	}
	buf := make([]byte, 16)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := tc.Write([]byte("?")); err != nil {
			t.Fatal(err)
		}
		n, err := io.ReadFull(tc, buf[:5])
		read, before := time.Now(), <-wrote
		if err != nil || string(buf[:n]) != "hello" {
			t.Fatalf("read %q, %v", buf[:n], err)
		}
		if got, ok := tc.lastReceive(); ok {
			if got.Before(before) || got.After(read) {
				t.Errorf("receive time %v outside [%v, %v]", got, before, read)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no kernel receive time on any read")
		}
	}
}

// A read of data already in the socket, and the EOF at the end, go
// through recvmsg without a heap allocation: Read runs once per data read
// of every stream.
func TestTSConnReadDoesNotAllocate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const runs = 200
	sent := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			sent <- err
			return
		}
		// Everything at once, then the close: every read finds data.
		_, err = c.Write(make([]byte, runs+1))
		sent <- err
		_ = c.Close()
	}()
	d := &net.Dialer{}
	c, err := kernelTimestampDialer(d.DialContext)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	// The first read waits for the bytes to cross loopback.
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(runs-1, func() {
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per read, want 0", n)
	}
	for {
		_, err := c.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := c.(*tsConn).lastReceive(); !ok {
		t.Log("no kernel receive time on any read (the host turns timestamping on lazily)")
	}
}
