package workload

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/internal/suggest"
)

// Roles are the roles a message of a prompt may have: those every chat
// API takes without more fields (a "tool" message needs the id of the call
// it answers, which a prompt file cannot give).
var Roles = []string{"system", "developer", "user", "assistant"}

// CheckRole is nil for one of Roles; otherwise it says which are, and the
// one meant when it can tell.
func CheckRole(role string) error {
	if slices.Contains(Roles, role) {
		return nil
	}
	what := "missing"
	if role != "" {
		what = fmt.Sprintf("unknown role %q", role)
	}
	return fmt.Errorf("%s (one of %s)%s", what, strings.Join(Roles, ", "), suggest.DidYouMean(role, Roles))
}

// ErrNotUTF8 is text that is not valid UTF-8: a JSON decoder would send
// U+FFFD in its place, a prompt other than the one in the file.
var ErrNotUTF8 = errors.New("not valid UTF-8")

// UTF8Error is where text stops being UTF-8: the line and column (in
// characters, 1-based) of the first byte that is not.
type UTF8Error struct {
	Line, Col int
	Byte      byte
}

func (e *UTF8Error) Error() string {
	return fmt.Sprintf("%d:%d: byte 0x%02x is %v (prompts are UTF-8 text)", e.Line, e.Col, e.Byte, ErrNotUTF8)
}

func (e *UTF8Error) Unwrap() error { return ErrNotUTF8 }

// InvalidUTF8 is where b, whose first byte is at line 1 column 1, stops
// being UTF-8; nil when it is UTF-8 throughout. A sequence cut short at
// the end of b counts as invalid.
func InvalidUTF8(b []byte) *UTF8Error {
	var p utf8Pos
	if i := p.scan(b, true); i >= 0 {
		return &UTF8Error{Line: p.line, Col: p.col, Byte: b[i]}
	}
	return nil
}

// utf8Pos is a position in text: the line and column of the next byte.
type utf8Pos struct{ line, col int }

// scan advances p over b and returns the index of the first byte of b that
// is not UTF-8, or -1. Without atEnd, a sequence cut short at the end of b
// is left unread: scan returns -1 and rest is its length.
func (p *utf8Pos) scan(b []byte, atEnd bool) int {
	i, _ := p.scanRest(b, atEnd)
	return i
}

func (p *utf8Pos) scanRest(b []byte, atEnd bool) (bad, rest int) {
	if p.line == 0 {
		p.line, p.col = 1, 1
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == '\n' {
				p.line, p.col = p.line+1, 1
			} else {
				p.col++
			}
			i++
			continue
		}
		if !atEnd && !utf8.FullRune(b[i:]) {
			return -1, len(b) - i
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i, 0
		}
		p.col++
		i += size
	}
	return -1, 0
}

// utf8Reader passes r's bytes on as they are, and fails at the first that
// is not UTF-8, with its position (a *UTF8Error).
type utf8Reader struct {
	r     io.Reader
	pos   utf8Pos
	carry []byte // a sequence cut short by the last read
	err   *UTF8Error
}

func (u *utf8Reader) Read(b []byte) (int, error) {
	if u.err != nil {
		return 0, u.err
	}
	n, err := u.r.Read(b)
	data := append(u.carry, b[:n]...)
	bad, rest := u.pos.scanRest(data, err != nil)
	if bad >= 0 {
		u.err = &UTF8Error{Line: u.pos.line, Col: u.pos.col, Byte: data[bad]}
		return 0, u.err
	}
	u.carry = append(u.carry[:0], data[len(data)-rest:]...)
	return n, err
}
