package workload

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// The UTF-8 check passes text on as it is, whatever the reads cut, and
// stops at the first byte that is not UTF-8 with its line and column.
func TestUTF8Reader(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		line, col int // 0: valid
		b         byte
	}{
		{name: "ascii", in: "a\nb\n"},
		{name: "runes of every length", in: "é€𝄞\nü"},
		{name: "a stray continuation byte", in: "ab\ncd\x80e", line: 2, col: 3, b: 0x80},
		{name: "a sequence cut short by the end", in: "ok\ncaf\xc3", line: 2, col: 4, b: 0xc3},
		{name: "a sequence cut short by the next rune", in: "x\xe2\x82y", line: 1, col: 2, b: 0xe2},
		{name: "columns count characters", in: "€€\xff", line: 1, col: 3, b: 0xff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range map[string]io.Reader{"one byte a read": iotest.OneByteReader(strings.NewReader(tc.in)), "one read": strings.NewReader(tc.in)} {
				got, err := io.ReadAll(&utf8Reader{r: r})
				if tc.line == 0 {
					if err != nil || string(got) != tc.in {
						t.Fatalf("read %q, %v; want %q", got, err, tc.in)
					}
					if bad := InvalidUTF8([]byte(tc.in)); bad != nil {
						t.Errorf("InvalidUTF8: %v", bad)
					}
					continue
				}
				var ue *UTF8Error
				if !errors.As(err, &ue) || !errors.Is(err, ErrNotUTF8) || ue.Line != tc.line || ue.Col != tc.col || ue.Byte != tc.b {
					t.Fatalf("error %v, want %d:%d byte 0x%02x", err, tc.line, tc.col, tc.b)
				}
				if bad := InvalidUTF8([]byte(tc.in)); bad == nil || *bad != *ue {
					t.Errorf("InvalidUTF8 %v, the reader %v", bad, ue)
				}
			}
		})
	}
}

func TestCheckRole(t *testing.T) {
	for _, tc := range []struct{ name, role, want string }{
		{name: "known", role: "developer"},
		{name: "a typo", role: "usr", want: `unknown role "usr" (one of system, developer, user, assistant) (did you mean "user"?)`},
		{name: "missing", role: "", want: "missing (one of system, developer, user, assistant)"},
		{name: "tool needs a call id", role: "tool", want: `unknown role "tool"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRole(tc.role)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
}
