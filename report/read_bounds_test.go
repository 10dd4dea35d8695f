package report

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ReadFile refuses what it could not read in bounded time and memory
// before reading it: a device, a directory, a file over MaxReportBytes.
func TestReadFileBounds(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: the size is what matters, not the bytes.
	if err := f.Truncate(MaxReportBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, tc := range []struct {
		name, path string
		is         error
		want       string
	}{
		{name: "a directory", path: dir, is: ErrNotRegular, want: dir + ": not a regular file: it is a directory, and a report must be a regular file"},
		{name: "an endless device", path: "/dev/zero", is: ErrNotRegular, want: "/dev/zero: not a regular file: it is a character device"},
		{name: "over the cap", path: big, is: ErrReportTooLarge, want: big + ": file too large: 536870913 bytes (512.0 MiB), over the 512 MiB cap on a report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.path); err != nil {
				t.Skip(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := ReadFile(tc.path); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, tc.is) || !errors.Is(err, ErrNotReport) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v: want %q, wrapping %v and ErrNotReport", err, tc.want, tc.is)
				}
			case <-ctx.Done():
				t.Fatal("ReadFile did not return in a minute")
			}
		})
	}
	// Decode, given a stream, stops reading past the cap (a small one
	// here, so the test holds kilobytes, not 512 MiB).
	if _, err := readAtMost(zeros{}, 1<<10); !errors.Is(err, ErrReportTooLarge) || !errors.Is(err, ErrNotReport) {
		t.Fatalf("reading an endless stream: %v, want ErrReportTooLarge", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// A report an earlier tollgate wrote is still read (a baseline from last
// night must be): fields added since are optional, their absence zero.
// The fixture is examples/agent.yaml's report from before the agent's
// anomaly counts and byte bounds (1c80024).
func TestReportsOfEarlierVersionsAreRead(t *testing.T) {
	for _, name := range []string{"testdata/agent-before-anomalies.report.json"} {
		t.Run(name, func(t *testing.T) {
			r, err := ReadFile(name)
			if err != nil {
				t.Fatalf("an earlier tollgate's report is refused: %v", err)
			}
			if len(r.Runs) == 0 {
				t.Fatal("no runs read")
			}
		})
	}
}
