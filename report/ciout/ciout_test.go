package ciout

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/gates"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

var update = flag.Bool("update", false, "rewrite golden files")

func f(x float64) *float64 { return &x }
func i(x int) *int         { return &x }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func stat(vals ...float64) report.Stat { return report.NewStat(vals) }

// seamReport is a seam scenario that failed: one gate fails, one errors, an
// optional one fails, and one run could not complete. Samples are typed, as
// in-process.
func seamReport() *report.Report {
	tok := func(n int) *int { return &n }
	samples := []report.SeamSample{
		{Phase: "decode", TokenIndex: tok(0), SessionID: "s1", ActivationID: "s1-a2", Seam: "head->tail", Mode: "direct", CacheMode: "cached",
			VirtualStartMS: 3.1185, ModelMS: 0.45, EncodeMS: 0.06, TransportMS: 0.32045, SeamLatencyMS: 1.03545, PayloadBytes: 4096, WireBytes: 45, CompressionRatio: 91.02222222222223},
		{Phase: "decode", TokenIndex: tok(1), SessionID: "s1", ActivationID: "s1-a3", Seam: "head->tail", Mode: "direct", CacheMode: "cached",
			VirtualStartMS: 4.154, ModelMS: 0.45, EncodeMS: 0.06, TransportMS: 0.32045, SeamLatencyMS: 1.03545, PayloadBytes: 4096, WireBytes: 45, CompressionRatio: 91.02222222222223},
	}
	prefill := []report.SeamSample{{Phase: "prefill", SessionID: "s1", ActivationID: "s1-a1", Seam: "head->tail", Mode: "direct", CacheMode: "cached",
		ModelMS: 1.6, ConnectionSetupMS: 0.8, SeamLatencyMS: 3.1185, PayloadBytes: 4096, WireBytes: 50, CompressionRatio: 81.92, ConnectionAttempted: true}}
	dec := &report.SeamMetrics{Transfers: 2, Tokens: 2, SeamLatencyMS: stat(1.03545, 1.03545), QueueWaitMS: stat(0, 0),
		TotalLatencyMS: 2.0709, TokensPerS: f(965.7636776280843), BytesPerToken: f(45), PayloadBytes: 8192, WireBytes: 90, CompressionRatio: f(91.0222)}
	pre := &report.SeamMetrics{Transfers: 1, SeamLatencyMS: stat(3.1185), QueueWaitMS: stat(0), PayloadBytes: 4096, WireBytes: 50, ConnectionAttempts: 1}
	return &report.Report{
		SchemaVersion: 1, Tool: report.Tool{Name: "tollgate", Version: "test"},
		Scenario:  report.ScenarioInfo{Name: "route|session", File: "examples/route-session.yaml", SHA256: "1b2fbdcbe213aefd96d808fe4df1a3a98539f32e77f576cd5c46e345a8867cdd"},
		Host:      report.Host{Hostname: "ci-1", OS: "linux", Arch: "amd64"},
		StartedAt: t0, EndedAt: t0.Add(1500 * time.Millisecond),
		Status:   report.StatusFail,
		RunOrder: []string{"direct/cached", "relay/cached"},
		Runs: map[string]*report.Run{
			"direct/cached": {Name: "direct/cached", Params: map[string]string{"transport": "direct"}, Status: "ok",
				Target: report.Target{Name: "route", Kind: "seam"}, PhaseOrder: []string{"prefill", "decode"},
				Phases: map[string]*report.Phase{
					"prefill": {Kind: "prefill", SeamMetrics: pre, Samples: prefill},
					"decode":  {Kind: "decode", SeamMetrics: dec, Samples: samples},
				},
				Connections: &report.Connections{Attempts: 1},
				Seams:       map[string]*report.SeamMetrics{"head->tail": {PayloadBytes: 12288, WireBytes: 140}},
			},
			"relay/cached": {Name: "relay/cached", Status: "error", Error: "seam: relay refused: connection reset",
				Target: report.Target{Name: "route", Kind: "seam"}},
		},
		Gates: []report.GateResult{
			{Name: "cached beats stateless", Expr: "a <= b", Status: "pass", Value: true,
				Observations: []report.Observation{{Expr: "a <= b", Op: "<=", Left: 1.03545, Right: 1.46836, Result: true}}},
			{Name: "p95, under 1.5 ms", Expr: "all(runs, #.p95 < 1.5)", Status: "fail", Value: false, Message: "x",
				Observations: []report.Observation{
					{Expr: "#.p95 < 1.5", Op: "<", Left: 1.2, Right: 1.5, Result: true},
					{Expr: "#.p95\n  < 1.5", Op: "<", Left: 1.55545, Right: 1.5, Result: false},
				}},
			{Name: "relay runs", Expr: `runs["relay/cached"].connections.attempts == 1`, Status: "error",
				Message: `runs["relay/cached"] has no "connections" (100% of <runs>)`},
			{Name: "bytes per `token`", Expr: "x < 40", Optional: true, Status: "fail",
				Observations: []report.Observation{{Expr: "x < 40", Op: "<", Left: 45.0, Right: 40.0, Result: false}}},
		},
	}
}

// liveReport is a live scenario that was interrupted, with prompt-size
// points, prefix-cache variants, warnings, request errors and samples.
func liveReport() *report.Report {
	m := func(n, ok int, ttft ...float64) *report.ServingMetrics {
		return &report.ServingMetrics{Requests: n, Succeeded: ok, TTFTMS: stat(ttft...), E2EMS: stat(ttft...),
			PrefillTokensPerS: stat(23564), CachedTokens: stat(0), Errors: report.ErrorSummary{Count: n - ok, ByClass: map[string]int{}}, Warnings: []string{}}
	}
	decode := m(3, 2, 10.51, 10.80)
	decode.TPOTMS = stat(10, 10.2)
	decode.DecodeTokensPerS = stat(99.8, 98.1)
	decode.Errors.Examples = []report.RequestError{{Class: "http_status", Status: 500, Message: "upstream | `boom`\nretry", Request: "decode #2"}}
	decode.Warnings = []string{"100% of tokens counted from SSE events: no usage"}
	identical := m(2, 2, 5.81, 5.87)
	identical.CachedTokens = stat(2048, 2048)
	samples := []report.RequestSample{
		{Phase: "decode", Index: 0, OK: true, HTTPStatus: 200, BytesReceived: 13121, TTFBMS: f(0.174487), TTFTMS: f(10.51), E2EMS: 641.1,
			DecodeTokensPerS: f(99.8), TPOTMS: f(10), PrefillTokensPerS: f(23511.9), PromptTokens: i(254), CompletionTokens: i(64), CachedTokens: i(0),
			TokenCountSource: "usage", SSETokenEvents: 64, FinishReason: "length", DoneSeen: true, UsageSeen: true},
		{Phase: "decode", Index: 1, StartMS: 641.5, OK: true, HTTPStatus: 200, TTFTMS: f(10.8), E2EMS: 650, DecodeTokensPerS: f(98.1), TPOTMS: f(10.2),
			PromptTokens: i(254), CompletionTokens: i(64), SSETokenEvents: 64, TokenCountSource: "sse_events"},
		{Phase: "decode", Index: 2, StartMS: 1291.5, OK: false, HTTPStatus: 500, E2EMS: 3.25,
			Error: &report.RequestError{Class: "http_status", Status: 500, Message: "upstream | `boom`\nretry"}},
	}
	return &report.Report{
		SchemaVersion: 1, Tool: report.Tool{Name: "tollgate", Version: "test"},
		Scenario:  report.ScenarioInfo{Name: "quickstart", File: "examples/quickstart.yaml", SHA256: "abc"},
		StartedAt: t0, EndedAt: t0.Add(2 * time.Second),
		Status: report.StatusIncomplete, Incomplete: true,
		RunOrder: []string{"embedded"},
		Runs: map[string]*report.Run{"embedded": {Name: "embedded", Status: "ok",
			Target:     report.Target{Name: "embedded", Kind: "embedded", BaseURL: "http://127.0.0.1:1234", Model: "tollgate-sim"},
			PhaseOrder: []string{"warmup", "prefill", "decode", "prefix_cache"},
			Phases: map[string]*report.Phase{
				"warmup": {Kind: "warmup", ServingMetrics: m(2, 2)},
				"prefill": {Kind: "prefill", ServingMetrics: m(4, 4, 10.78, 10.81, 26.84, 26.86), ByPromptTokens: map[string]*report.Point{
					"1024": {ServingMetrics: m(2, 2, 26.84, 26.86), TargetPromptTokens: 1024},
					"256":  {ServingMetrics: m(2, 2, 10.78, 10.81), TargetPromptTokens: 256},
				}},
				"decode": {Kind: "decode", ServingMetrics: decode, Samples: samples},
				"prefix_cache": {Kind: "prefix_cache", ServingMetrics: m(4, 4, 47.08, 47.28, 5.81, 5.87), Variants: map[string]*report.Point{
					"identical": {ServingMetrics: identical, Speedup: f(8.1)},
					"fresh":     {ServingMetrics: m(2, 2, 47.08, 47.28)},
				}},
			}}},
		Gates: []report.GateResult{
			{Name: "decode floor", Expr: "decode_tokens_per_s.p50 >= 50", Status: "pass",
				Observations: []report.Observation{{Expr: "p50 >= 50", Op: ">=", Left: 99.8, Right: 50.0, Result: true}}},
		},
	}
}

// routeSession runs examples/route-session.yaml for real and judges its
// gates, with the wall-clock and machine facts pinned.
func routeSession(t *testing.T, extra ...gates.Spec) *report.Report {
	t.Helper()
	sc, err := scenarios.Load("../../examples/route-session.yaml", scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{ToolVersion: "test", Now: func() time.Time { return time.Time{} }}
	r := engine.New(sc, opts)
	if err := engine.Run(context.Background(), sc, r, opts); err != nil {
		t.Fatal(err)
	}
	specs := make([]gates.Spec, 0, len(sc.Gates))
	for _, g := range sc.Gates {
		specs = append(specs, gates.Spec{Name: g.Name, Expr: g.Expr, Description: g.Description, Optional: g.Optional})
	}
	specs = append(specs, extra...)
	env, err := gates.Env(r, sc.Vars)
	if err != nil {
		t.Fatal(err)
	}
	set, problems := gates.Compile(specs, env)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	r.Gates = set.Evaluate(env)
	r.Status = report.StatusPass
	for _, g := range r.Gates {
		if g.Status == report.StatusFail && !g.Optional {
			r.Status = report.StatusFail
		}
	}
	r.StartedAt, r.EndedAt = time.Time{}, time.Time{}
	r.Host = report.Host{}
	return r
}

// roundTrip is the report as compare or a CI step reads it: JSON, decoded,
// samples as []any of maps.
func roundTrip(t *testing.T, r *report.Report) *report.Report {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var out report.Report
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

type writer struct {
	ext   string
	write func(io.Writer, *report.Report) error
}

func writers() []writer {
	return []writer{
		{"junit.xml", JUnit},
		{"md", Markdown},
		{"annotations.txt", func(w io.Writer, r *report.Report) error {
			return GitHubAnnotations(w, r, r.Scenario.File)
		}},
		{"csv", CSV},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report/ciout -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed; if intended, run go test ./report/ciout -update\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestGolden(t *testing.T) {
	reports := []struct {
		name string
		r    func(*testing.T) *report.Report
	}{
		{"seam-fail", func(*testing.T) *report.Report { return seamReport() }},
		{"live-incomplete", func(*testing.T) *report.Report { return liveReport() }},
		{"route-session", func(t *testing.T) *report.Report { return routeSession(t) }},
		{"route-session-fail", func(t *testing.T) *report.Report {
			return routeSession(t,
				gates.Spec{Name: "relay decode p95 under 1.5 ms", Expr: `all(["direct", "relay"], runs[# + "/cached"].phases.decode.seam_latency_ms.p95 < 1.5)`},
				gates.Spec{Name: "stateless: at most 4 connections", Optional: true, Expr: `runs["relay/stateless"].connections.attempts <= 4`})
		}},
	}
	for _, rc := range reports {
		r := rc.r(t)
		for _, wr := range writers() {
			t.Run(rc.name+"."+wr.ext, func(t *testing.T) {
				var buf bytes.Buffer
				if err := wr.write(&buf, r); err != nil {
					t.Fatal(err)
				}
				golden(t, rc.name+"."+wr.ext, buf.Bytes())

				// A report read back from JSON gives the same bytes.
				var back bytes.Buffer
				if err := wr.write(&back, roundTrip(t, r)); err != nil {
					t.Fatal(err)
				}
				if back.String() != buf.String() {
					t.Errorf("output differs after a JSON round trip\n--- in-process\n%s\n--- decoded\n%s", buf.String(), back.String())
				}
			})
		}
	}
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errDiskFull
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteErrorsAreReturned(t *testing.T) {
	for _, wr := range writers() {
		for _, at := range []int{0, 10, 200} {
			t.Run(wr.ext, func(t *testing.T) {
				err := wr.write(&failWriter{n: at}, seamReport())
				if !errors.Is(err, errDiskFull) {
					t.Errorf("failing after %d bytes: got %v, want an error wrapping %v", at, err, errDiskFull)
				}
			})
		}
	}
}

func TestJUnitCounts(t *testing.T) {
	for _, tc := range []struct {
		name                             string
		r                                *report.Report
		tests, failures, errors, skipped int
		runCase                          bool
	}{
		{name: "failed gate, errored gate, optional, failed run", r: seamReport(), tests: 5, failures: 1, errors: 2, skipped: 1, runCase: true},
		{name: "interrupted", r: liveReport(), tests: 2, errors: 1, runCase: true},
		{name: "error from a gate only", r: func() *report.Report {
			r := seamReport()
			r.Runs["relay/cached"].Status, r.Status = "ok", report.StatusError
			r.Gates = r.Gates[2:3]
			return r
		}(), tests: 1, errors: 1},
		{name: "error with nothing to blame", r: func() *report.Report {
			r := seamReport()
			r.Runs["relay/cached"].Status, r.Status = "ok", report.StatusError
			r.Gates = nil
			return r
		}(), tests: 1, errors: 1, runCase: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := JUnit(&buf, tc.r); err != nil {
				t.Fatal(err)
			}
			var doc junitSuites
			if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
				t.Fatalf("not XML: %v\n%s", err, buf.String())
			}
			s := doc.Suites[0]
			if s.Tests != tc.tests || s.Failures != tc.failures || s.Errors != tc.errors || s.Skipped != tc.skipped {
				t.Errorf("tests/failures/errors/skipped = %d/%d/%d/%d, want %d/%d/%d/%d",
					s.Tests, s.Failures, s.Errors, s.Skipped, tc.tests, tc.failures, tc.errors, tc.skipped)
			}
			if len(s.Cases) != s.Tests {
				t.Errorf("%d testcases, tests=%d", len(s.Cases), s.Tests)
			}
			hasRun := len(s.Cases) > 0 && s.Cases[len(s.Cases)-1].Name == "run"
			if hasRun != tc.runCase {
				t.Errorf("run testcase present = %v, want %v", hasRun, tc.runCase)
			}
		})
	}
}

func TestEscaping(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		fn             func(string) string
	}{
		{name: "data percent and newlines", in: "100%\r\nnext", want: "100%25%0D%0Anext", fn: escapeData},
		{name: "data keeps colon and comma", in: "a: b, c", want: "a: b, c", fn: escapeData},
		{name: "property colon and comma", in: "p95: 1,5%", want: "p95%3A 1%2C5%25", fn: escapeProperty},
		{name: "cell pipe and backtick", in: "a|b `c`", want: "a\\|b \\`c\\`", fn: cell},
		{name: "cell html and newline", in: "<b>x\ny", want: "&lt;b>x y", fn: cell},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.fn(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCSVHeaderLayout(t *testing.T) {
	h := CSVHeader()
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
	if err := CSV(&buf, seamReport()); err != nil {
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
	if err := CSV(io.Discard, &report.Report{RunOrder: []string{"r"}, Runs: map[string]*report.Run{"r": {
		PhaseOrder: []string{"p"}, Phases: map[string]*report.Phase{"p": p}}}}); err == nil || !strings.Contains(err.Error(), "run r, phase p") {
		t.Fatalf("CSV error %v, want one naming the run and phase", err)
	}
}
