package csv

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/internal/fixture"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestWriter(t *testing.T) {
	fixture.CheckWriter(t, "csv", *update, func(w io.Writer, r *report.Report) error { return Write(w, r) })
}

func TestCSVHeaderLayout(t *testing.T) {
	h := Header()
	if len(h) != csvWidth || h[csvSeamStart] != "seam" || h[0] != "kind" || h[csvWidth-1] != "connection_attempted" {
		t.Fatalf("header layout changed: %d columns, [%d]=%q", len(h), csvSeamStart, h[csvSeamStart])
	}
	seen := map[string]bool{}
	for _, c := range h {
		if seen[c] {
			t.Errorf("duplicate column %q", c)
		}
		seen[c] = true
	}
	// Every row has exactly the header's width.
	var buf bytes.Buffer
	if err := Write(&buf, fixture.SeamReport()); err != nil {
		t.Fatal(err)
	}
	for n, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if got := len(strings.Split(line, ",")); got != csvWidth {
			t.Errorf("line %d has %d fields, want %d: %s", n+1, got, csvWidth, line)
		}
	}
}

func TestPhaseSamplesBadShape(t *testing.T) {
	p := &report.Phase{Samples: []any{"not a sample"}}
	if _, _, err := report.PhaseSamples(p, "embedded"); err == nil {
		t.Fatal("want an error for samples that are not objects")
	}
	if err := Write(io.Discard, &report.Report{RunOrder: []string{"r"}, Runs: map[string]*report.Run{"r": {
		PhaseOrder: []string{"p"}, Phases: map[string]*report.Phase{"p": p}}}}); err == nil || !strings.Contains(err.Error(), "run r, phase p") {
		t.Fatalf("CSV error %v, want one naming the run and phase", err)
	}
}
