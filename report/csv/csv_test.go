package csv

import (
	"bytes"
	"context"
	stdcsv "encoding/csv"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
	"github.com/tollgate-dev/tollgate/scenarios"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestWriter(t *testing.T) {
	testfixture.CheckWriter(t, "csv", *update, func(w io.Writer, r *report.Report) error { return Write(w, r) })
}

func TestCSVHeaderLayout(t *testing.T) {
	h := Header()
	if len(h) != csvWidth || h[csvSeamStart] != "seam" || h[0] != "kind" || h[csvLaterStart-1] != "connection_attempted" ||
		h[csvLaterStart] != "connect_ms" || h[csvShipped-1] != "target_prompt_tokens" {
		t.Fatalf("header layout changed: %d columns, [%d]=%q, [%d]=%q", len(h), csvSeamStart, h[csvSeamStart], csvLaterStart, h[csvLaterStart])
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
	if err := Write(&buf, testfixture.SeamReport()); err != nil {
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

// allKinds is every live phase kind on the embedded simulator, small.
const allKinds = `
name: every-kind
targets:
  sim: {kind: embedded, sim: {decode_step: 1ms}, metrics: false, metadata: false}
phases:
  warmup: {requests: 2, prompt_tokens: 16, max_tokens: 2}
  prefill: {prompt_tokens: [32, 64], repeat: 2, max_tokens: 2}
  decode: {prompt_tokens: 16, max_tokens: 8, repeat: 2}
  prefix_cache: {prompt_tokens: 128, suffix_tokens: 8, repeat: 2, max_tokens: 2}
  profile:
    kind: requests
    requests: [{prompt: hello, max_tokens: 3}, {prompt: again, max_tokens: 3}]
  load: {sweep: {concurrency: [1, 2]}, requests: 5, prompt_tokens: 16, max_tokens: 3}
`

// runAll runs allKinds for real, with report.samples as given.
func runAll(t *testing.T, samples bool) *report.Report {
	t.Helper()
	src := allKinds
	if !samples {
		src += "report: {samples: false}\n"
	}
	sc, err := scenarios.Parse("every-kind.yaml", []byte(src), scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{ToolVersion: "test"}
	r := engine.New(sc, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := engine.Run(ctx, sc, r, opts); err != nil {
		t.Fatal(err)
	}
	return r
}

// A real run writes one row per measured request of every phase kind, each
// naming its slice, both in-process and as tollgate report reads it back.
func TestEveryPhaseKindHasRows(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded simulator")
	}
	r := runAll(t, true)
	for _, tc := range []struct {
		name string
		r    *report.Report
	}{{"in-process", r}, {"read back from JSON", testfixture.RoundTrip(t, r)}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, tc.r); err != nil {
				t.Fatal(err)
			}
			rows, err := stdcsv.NewReader(&buf).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := map[string]int{}
			for k, c := range rows[0] {
				col[c] = k
			}
			type key struct{ phase, point string }
			got := map[key]int{}
			for _, row := range rows[1:] {
				if row[col["kind"]] != "request" || row[col["run"]] != "sim" || row[col["ok"]] != "true" || row[col["ttft_ms"]] == "" || row[col["e2e_ms"]] == "" {
					t.Errorf("row %v: want a successful request of run sim with ttft_ms and e2e_ms", row)
				}
				got[key{row[col["phase"]], row[col["point"]]}]++
			}
			want := map[key]int{
				{"prefill", "32"}: 2, {"prefill", "64"}: 2,
				{"decode", ""}:            2,
				{"prefix_cache", "fresh"}: 2, {"prefix_cache", "identical"}: 2, {"prefix_cache", "small_suffix"}: 2,
				{"profile", ""}:           2,
				{"load", "concurrency 1"}: 5, {"load", "concurrency 2"}: 5,
			}
			for k, n := range want {
				if got[k] != n {
					t.Errorf("phase %s, point %q: %d rows, want %d", k.phase, k.point, got[k], n)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("unexpected rows for phase %s, point %q (warmup is not measured)", k.phase, k.point)
				}
			}
		})
	}
}

// With report.samples off a measured phase has no rows to give: the CSV
// says so, naming the phase, rather than writing a header alone.
func TestNoSamplesRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded simulator")
	}
	err := Write(io.Discard, runAll(t, false))
	if !errors.Is(err, ErrNoSamples) || !strings.Contains(err.Error(), "run sim, phase prefill (prefill) measured 4 requests") ||
		!strings.Contains(err.Error(), "report.samples") {
		t.Fatalf("got %v, want a refusal naming the phase and report.samples", err)
	}
}
