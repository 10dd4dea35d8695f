//go:build unix

package safefile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test, rather than hang it, when fn blocks: a FIFO
// opened for reading waits for a writer forever.
func within(t *testing.T, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	outside := filepath.Join(dir, "outside")
	for _, d := range []string{tree, outside, filepath.Join(tree, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, body string) string {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ok := write(filepath.Join(tree, "ok.jsonl"), "{}\n")
	far := write(filepath.Join(outside, "secret.txt"), "root:x:0:0\n")
	fifo := filepath.Join(tree, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tree, "link.txt")
	if err := os.Symlink(far, link); err != nil {
		t.Fatal(err)
	}
	inLink := filepath.Join(tree, "in-link.jsonl")
	if err := os.Symlink("ok.jsonl", inLink); err != nil {
		t.Fatal(err)
	}
	sparse := write(filepath.Join(tree, "huge.jsonl"), "")
	if err := os.Truncate(sparse, MaxDataBytes+1); err != nil {
		t.Fatal(err)
	}
	roots := []string{Root(tree)}
	for _, tc := range []struct {
		name  string
		path  string
		rules Rules
		want  error  // nil: opens
		text  string // in the error
	}{
		{name: "regular file in the tree", path: ok, rules: Rules{Roots: roots}},
		{name: "symlink within the tree", path: inLink, rules: Rules{Roots: roots}},
		{name: "fifo", path: fifo, rules: Rules{Roots: roots, What: "dataset"}, want: ErrNotRegular, text: "a named pipe (FIFO), and a dataset must be a regular file"},
		{name: "directory", path: filepath.Join(tree, "sub"), rules: Rules{Roots: roots}, want: ErrNotRegular, text: "a directory"},
		{name: "dev zero", path: "/dev/zero", want: ErrNotRegular, text: "a character device"},
		{name: "dev zero outside the tree", path: "/dev/zero", rules: Rules{Roots: roots}, want: ErrOutside, text: "/dev/zero is " + ErrOutside.Error()},
		{name: "path outside", path: filepath.Join(tree, "..", "outside", "secret.txt"), rules: Rules{Roots: roots}, want: ErrOutside},
		{name: "symlink to outside", path: link, rules: Rules{Roots: roots}, want: ErrOutside, text: "resolves to " + Root(far)},
		{name: "outside but allowed", path: far, rules: Rules{Roots: append(roots, Root(outside))}},
		{name: "sparse file over the cap", path: sparse, rules: Rules{Roots: roots, What: "trace"}, want: ErrTooLarge, text: "1073741825 bytes (1.0 GiB), over the 1 GiB cap on a trace"},
		{name: "missing", path: filepath.Join(tree, "nope"), rules: Rules{Roots: roots}, want: fs.ErrNotExist, text: "open "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			within(t, 5*time.Second, func() {
				f, err := Open(tc.path, tc.rules)
				if tc.want == nil {
					if err != nil {
						t.Fatal(err)
					}
					f.Close()
					return
				}
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				if !strings.Contains(err.Error(), tc.text) {
					t.Errorf("error %q does not say %q", err, tc.text)
				}
				if strings.Contains(err.Error(), "root:x") {
					t.Errorf("error quotes the file: %v", err)
				}
			})
		})
	}
}

// A FIFO that replaces the file between the Stat and the open neither
// blocks the open nor is read.
func TestOpenCheckedFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, func() {
		if _, err := openChecked(fifo, 10, "trace"); !errors.Is(err, ErrNotRegular) {
			t.Errorf("got %v, want ErrNotRegular", err)
		}
	})
}

// A file that grows past the cap after it was checked stops there.
func TestReadStopsAtTheCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, Rules{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "12345" {
		t.Fatalf("at the cap: %q, %v", b, err)
	}
	g, err := Open(path, Rules{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := os.WriteFile(path, []byte("1234567"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(g); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("past the cap: %v, want ErrTooLarge", err)
	}
}

func TestExcerpt(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"short", "ten", `"ten"`},
		{"control bytes", "a\x1b[31mb\x00", `"a\u001b[31mb\u0000"`},
		{"invalid utf-8", "a\xffb", `"a\xffb"`},
		{"long", strings.Repeat("x", 100), `"` + strings.Repeat("x", MaxExcerpt) + `"…`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Excerpt(tc.in); got != tc.want {
				t.Errorf("Excerpt(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}
