// Package safefile opens the files a scenario names (includes, datasets,
// traces, prompt files) and the reports the CLI reads, under one set of
// rules: a regular file only, never more than a cap of bytes, and, when
// the caller gives roots, only inside them after symlinks are resolved.
// A FIFO, a device, a directory or a socket is refused before a byte is
// read, so no such path blocks or streams forever; a file outside the
// roots is refused before it is opened, so a scenario cannot read a file
// its author does not own into an error or a report.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Caps on what is read of one file. A scenario (and each included file)
// is a page of YAML; datasets, traces and prompt files may be large but
// are streamed; a report with samples is a few hundred MiB at most; a CA
// bundle a few hundred KiB. Traces have a cap of their own: the public
// ones are long logs, and Azure's 2024 conversation week is 1.14 GB, over
// the cap of a dataset; 4 GiB holds over three times that, and streaming
// it (twice: at load and while it replays) costs time, not memory.
const (
	MaxScenarioBytes = 1 << 20
	MaxDataBytes     = 1 << 30
	MaxTraceBytes    = 4 << 30
	MaxReportBytes   = 512 << 20
	MaxCAFileBytes   = 16 << 20
)

// Errors the rules return, wrapped with the path and the details.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
	ErrOutside    = errors.New("outside the scenario's tree")
)

// Rules are what Open checks besides the file's kind.
type Rules struct {
	// Limit is the most bytes the file may hold (and Read returns); 0
	// means MaxDataBytes.
	Limit int64
	// What names the class of file in errors ("dataset", "include").
	What string
	// Roots, when not nil, are the directories the file must resolve
	// into (absolute, symlinks resolved: see Root). Nil allows any path.
	Roots []string
}

// File is an opened file whose reads stop with ErrTooLarge past the cap
// (the file may grow after it was checked).
type File struct {
	f *os.File
	// Name is the path as given; Resolved is where it led after symlinks
	// (empty when no roots were checked).
	Name, Resolved string
	left, limit    int64
}

// Open opens name for reading under r.
func Open(name string, r Rules) (*File, error) {
	limit := r.Limit
	if limit <= 0 {
		limit = MaxDataBytes
	}
	resolved := ""
	if r.Roots != nil {
		var err error
		if resolved, err = Within(name, r.Roots); err != nil {
			return nil, err
		}
	}
	// Stat before open: opening a FIFO for reading waits for a writer.
	st, err := os.Stat(name)
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		// Said as opening would say it: the user asked to read the file.
		return nil, &fs.PathError{Op: "open", Path: pe.Path, Err: pe.Err}
	}
	if err != nil {
		return nil, err
	}
	if err := check(name, st, limit, r.What); err != nil {
		return nil, err
	}
	f, err := openChecked(name, limit, r.What)
	if err != nil {
		return nil, err
	}
	f.Resolved = resolved
	return f, nil
}

// openChecked opens name without blocking, in case the path was swapped
// for a FIFO since the Stat, and checks the opened file's own mode, which
// is what counts.
func openChecked(name string, limit int64, what string) (*File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	fst, err := f.Stat()
	if err == nil {
		err = check(name, fst, limit, what)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &File{f: f, Name: name, left: limit, limit: limit}, nil
}

func check(name string, st fs.FileInfo, limit int64, what string) error {
	if what == "" {
		what = "file"
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: %w: it is %s, and a %s must be a regular file", name, ErrNotRegular, Kind(st.Mode()), what)
	}
	if n := st.Size(); n > limit {
		size := fmt.Sprintf("%d bytes", n)
		if n >= 1<<10 {
			size += " (" + Size(n) + ")"
		}
		return fmt.Errorf("%s: %w: %s, over the %s cap on a %s", name, ErrTooLarge, size, Size(limit), what)
	}
	return nil
}

// Read reads up to the cap; past it, ErrTooLarge.
func (f *File) Read(p []byte) (int, error) {
	if f.left <= 0 {
		// One byte more than the cap tells a file of exactly the cap from
		// one that grew past it.
		var b [1]byte
		if n, _ := f.f.Read(b[:]); n > 0 {
			return 0, fmt.Errorf("%s grew past %s while read: %w", f.Name, Size(f.limit), ErrTooLarge)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.f.Read(p)
	f.left -= int64(n)
	return n, err
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// ReadAll opens name under r and reads it whole.
func ReadAll(name string, r Rules) ([]byte, error) {
	f, err := Open(name, r)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Root is dir made absolute with its symlinks resolved, as Within
// compares; a directory that does not exist is only made absolute.
func Root(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// Within resolves name's symlinks and returns where it leads, or an error
// wrapping ErrOutside when that is in none of roots (see Root). A name
// that does not exist is judged by its path as written.
func Within(name string, roots []string) (string, error) {
	resolved := Root(name)
	for _, root := range roots {
		if rel, err := filepath.Rel(root, resolved); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return resolved, nil
		}
	}
	return resolved, &OutsideError{Name: name, Resolved: resolved, Roots: roots}
}

// OutsideError is a path that resolved outside every root.
type OutsideError struct {
	Name, Resolved string
	Roots          []string
}

func (e *OutsideError) Error() string {
	via := " is"
	if e.Resolved != filepath.Clean(e.Name) {
		via = " resolves to " + e.Resolved + ", which is"
	}
	return fmt.Sprintf("%s%s %v (allowed: %s)", e.Name, via, ErrOutside, strings.Join(e.Roots, ", "))
}

func (e *OutsideError) Unwrap() error { return ErrOutside }

// Kind names a non-regular file mode for errors.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "not a regular file"
}

// Size writes a byte count for errors: 1 GiB, 3.5 MiB, 900 bytes.
func Size(n int64) string {
	for _, u := range []struct {
		v    int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.v {
			if n%u.v == 0 {
				return fmt.Sprintf("%d %s", n/u.v, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.v), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// MaxExcerpt is the most runes of a file's content an error quotes.
const MaxExcerpt = 40

// Excerpt is s as an error may quote it from a file: at most MaxExcerpt
// runes, control and invalid bytes escaped, quoted; an error never
// carries more of a file than this.
func Excerpt(s string) string {
	cut := false
	if utf8.RuneCountInString(s) > MaxExcerpt {
		i, n := 0, 0
		for i = range s {
			if n == MaxExcerpt {
				break
			}
			n++
		}
		s, cut = s[:i], true
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case !unicode.IsPrint(r) && r != ' ':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += w
	}
	b.WriteByte('"')
	if cut {
		b.WriteString("…")
	}
	return b.String()
}
