package scenarios

import (
	"fmt"
	"sort"
	"strings"

	suggestpkg "github.com/tollgate-dev/tollgate/internal/suggest"
)

// Pos is where a value came from: a file position, or a --set flag.
type Pos struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
	// Set is the flag that produced the value (e.g. "--set a.b=1" or
	// "--var n=2"), when it did not come from a file.
	Set string `json:"set,omitempty"`
}

func (p Pos) String() string {
	switch {
	case p.Set != "":
		return p.Set
	case p.Line > 0:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	default:
		return p.File
	}
}

// Error is one problem in a scenario, with its position.
type Error struct {
	Pos Pos
	Msg string
	// Err is the error the message was made from, when there was one
	// (a file that could not be read), for errors.Is and As.
	Err error
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// ErrorList holds every problem found in a scenario, so users fix them in one pass.
type ErrorList []*Error

// Unwrap is every problem, so errors.Is finds the cause of any of them.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// sorted orders errors by file position and keeps the first error at each
// position: the same mistake is seen in every matrix expansion, and a value
// that failed to decode would otherwise also fail every later check.
func (l ErrorList) sorted() ErrorList {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.Set != b.Set {
			return a.Set > b.Set // --set errors first: the flag is what the user typed last
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	out := l[:0]
	seen := map[string]bool{}
	for _, e := range l {
		k := e.key() // whole-file errors have no position to share
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out
}

// maxErrors bounds the problems one load reports: past it more help no one,
// and building each message (with its suggestions) costs time.
const maxErrors = 200

type errs struct {
	list    ErrorList
	seen    map[string]bool
	dropped int
}

// key is what sorted deduplicates on.
func (e *Error) key() string {
	if e.Pos.Line == 0 && e.Pos.Set == "" {
		return e.Error()
	}
	return e.Pos.String()
}

func (e *errs) add(p Pos, format string, args ...any) {
	if e.full() {
		e.dropped++
		return
	}
	x := &Error{Pos: p, Msg: fmt.Sprintf(format, args...)}
	// The message says the error in words; the first error among the
	// arguments stays reachable as its cause.
	for _, a := range args {
		if err, ok := a.(error); ok {
			x.Err = err
			break
		}
	}
	e.append(x)
}

func (e *errs) append(x *Error) {
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	// The same mistake is met in every matrix expansion; only the first
	// at a position is kept (as sorted does), so repeats never fill the cap.
	if k := x.key(); !e.seen[k] {
		e.seen[k] = true
		e.list = append(e.list, x)
	}
}

// full reports whether further errors are only counted.
func (e *errs) full() bool { return len(e.list) >= maxErrors }

func (e *errs) err() error {
	if len(e.list) == 0 {
		return nil
	}
	out := e.list.sorted()
	if e.dropped > 0 {
		out = append(out, &Error{Pos: out[len(out)-1].Pos, Msg: fmt.Sprintf("… and more problems not shown (%d reported at most); fix these first", maxErrors)})
	}
	return out
}

// suggest returns ` (did you mean "x"?)` for the closest known word, or "".
func suggest(word string, known []string) string { return suggestpkg.DidYouMean(word, known) }
