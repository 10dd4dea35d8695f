//go:build linux

package openai

import (
	"syscall"
	"testing"
	"unsafe"
)

func TestParseTimestampNS(t *testing.T) {
	cmsg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, syscall.CmsgSpace(len(data)))
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = level, typ
		h.SetLen(syscall.CmsgLen(len(data)))
		copy(b[syscall.CmsgLen(0):], data)
		return b
	}
	ts := syscall.Timespec{Sec: 1700000000, Nsec: 123456789}
	tsBytes := unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts))
	other := cmsg(syscall.SOL_SOCKET, syscall.SCM_RIGHTS, []byte{1, 2, 3, 4})
	for _, tc := range []struct {
		name string
		oob  []byte
		want int64
		ok   bool
	}{
		{name: "timestamp alone", oob: cmsg(syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, tsBytes), want: ts.Nano(), ok: true},
		{name: "after another message", oob: append(other, cmsg(syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, tsBytes)...), want: ts.Nano(), ok: true},
		{name: "none", oob: other},
		{name: "empty", oob: nil},
		{name: "truncated", oob: cmsg(syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, tsBytes)[:20]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseTimestampNS(tc.oob)
			if ok != tc.ok || got != tc.want {
				t.Errorf("got %d %v, want %d %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
