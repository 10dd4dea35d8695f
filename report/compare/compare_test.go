package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

var update = flag.Bool("update", false, "rewrite golden files")

func fp(x float64) *float64 { return &x }

// liveReport is a one-run live report whose decode phase has the given TTFT
// and decode-rate samples (nil: samples not kept).
func liveReport(ttft, rate []float64, keepSamples bool) *report.Report {
	m := &report.ServingMetrics{Requests: len(ttft), Succeeded: len(ttft), TTFTMS: report.NewStat(ttft),
		DecodeTokensPerS: report.NewStat(rate), Errors: report.ErrorSummary{Rate: fp(0), ByClass: map[string]int{}}}
	p := &report.Phase{Kind: "decode", ServingMetrics: m}
	if keepSamples {
		ss := make([]report.RequestSample, len(ttft))
		for i := range ttft {
			ss[i] = report.RequestSample{Phase: "decode", Index: i, OK: true, RequestMetrics: report.RequestMetrics{TTFTMS: fp(ttft[i]), DecodeTokensPerS: fp(rate[i])}}
		}
		p.Samples = ss
	}
	return &report.Report{
		SchemaVersion: 1, Tool: report.Tool{Name: "tollgate"},
		Scenario:  report.ScenarioInfo{Name: "s", SHA256: "abc"},
		Host:      report.Host{Hostname: "h", OS: "linux", Arch: "amd64", CPUModel: "cpu", CPUCores: 8},
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Status:    "pass", RunOrder: []string{"server"},
		Runs: map[string]*report.Run{"server": {Name: "server", Status: "ok",
			Target:     report.Target{Kind: "openai", Model: "m"},
			PhaseOrder: []string{"decode"}, Phases: map[string]*report.Phase{"decode": p}}},
	}
}

// draw returns n lognormal values around median, seeded.
func draw(seed uint64, n int, median, sigma float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]float64, n)
	for i := range out {
		out[i] = median * math.Exp(rng.NormFloat64()*sigma)
	}
	return out
}

func scale(v []float64, k float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		out[i] = v[i] * k
	}
	return out
}

func thresholds(t *testing.T, s ...string) []Threshold {
	t.Helper()
	var out []Threshold
	for _, x := range s {
		th, err := ParseThreshold(x)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, th)
	}
	return out
}

func metric(t *testing.T, res *Result, path string) *Metric {
	t.Helper()
	for _, m := range res.Metrics {
		if m.Path == path {
			return m
		}
	}
	t.Fatalf("no metric %s", path)
	return nil
}

const ttftPath = "runs.server.phases.decode.ttft_ms"

func TestNoise(t *testing.T) {
	for _, tc := range []struct {
		name          string
		old, new      *report.Report
		failOn        []string
		failOnUnknown bool
		verdict       Verdict
		regressions   int
		withinNoise   int
		cannotTell    int
	}{
		{name: "same distribution, 50 samples: within noise",
			old: liveReport(draw(1, 50, 100, 0.2), draw(2, 50, 50, 0.1), true), new: liveReport(draw(3, 50, 100, 0.2), draw(4, 50, 50, 0.1), true),
			failOn: []string{"ttft_ms.p50:+10%"}, verdict: Within},
		{name: "shifted 30%, 50 samples: beyond noise and a regression",
			old: liveReport(draw(1, 50, 100, 0.2), draw(2, 50, 50, 0.1), true), new: liveReport(scale(draw(3, 50, 100, 0.2), 1.3), scale(draw(4, 50, 50, 0.1), 0.7), true),
			failOn: []string{"ttft_ms.p50:+10%", "decode_tokens_per_s.p50:-5%"}, verdict: Beyond, regressions: 2},
		{name: "shifted 30% but the threshold allows 50%",
			old: liveReport(draw(1, 50, 100, 0.2), draw(2, 50, 50, 0.1), true), new: liveReport(scale(draw(3, 50, 100, 0.2), 1.3), draw(4, 50, 50, 0.1), true),
			failOn: []string{"ttft_ms.p50:+50%"}, verdict: Beyond},
		{name: "improvement is no regression",
			old: liveReport(draw(1, 50, 100, 0.2), draw(2, 50, 50, 0.1), true), new: liveReport(scale(draw(3, 50, 100, 0.2), 0.7), draw(4, 50, 50, 0.1), true),
			failOn: []string{"ttft_ms.p50:+10%"}, verdict: Beyond},
		{name: "over the threshold within wide noise: not failed",
			old: liveReport(draw(1, 8, 100, 1.0), draw(2, 8, 50, 0.1), true), new: liveReport(scale(draw(1, 8, 100, 1.0), 1.15), draw(4, 8, 50, 0.1), true),
			failOn: []string{"ttft_ms.p50:+10%"}, verdict: Within, withinNoise: 1},
		{name: "no samples: cannot tell, not failed",
			old: liveReport(draw(1, 50, 100, 0.2), draw(2, 50, 50, 0.1), false), new: liveReport(scale(draw(3, 50, 100, 0.2), 1.3), draw(4, 50, 50, 0.1), false),
			failOn: []string{"ttft_ms.p50:+10%"}, verdict: Unknown, cannotTell: 1},
		{name: "no samples, --fail-on-unknown: failed",
			old: liveReport(draw(1, 50, 100, 0.2), draw(2, 50, 50, 0.1), false), new: liveReport(scale(draw(3, 50, 100, 0.2), 1.3), draw(4, 50, 50, 0.1), false),
			failOn: []string{"ttft_ms.p50:+10%"}, failOnUnknown: true, verdict: Unknown, regressions: 1, cannotTell: 1},
		{name: "four samples 50% slower: cannot tell, not failed",
			old: liveReport([]float64{10, 11, 12, 13}, []float64{1, 2, 3, 4}, true), new: liveReport([]float64{15, 16.5, 18, 19.5}, []float64{1, 2, 3, 4}, true),
			failOn: []string{"ttft_ms.p50:+10%"}, verdict: Unknown, cannotTell: 1},
		{name: "four samples 50% slower, --fail-on-unknown: failed",
			old: liveReport([]float64{10, 11, 12, 13}, []float64{1, 2, 3, 4}, true), new: liveReport([]float64{15, 16.5, 18, 19.5}, []float64{1, 2, 3, 4}, true),
			failOn: []string{"ttft_ms.p50:+10%"}, failOnUnknown: true, verdict: Unknown, regressions: 1, cannotTell: 1},
		{name: "too few samples: noise unknown",
			old: liveReport([]float64{1, 2, 3}, []float64{1, 2, 3}, true), new: liveReport([]float64{10, 20, 30}, []float64{1, 2, 3}, true),
			verdict: Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Compare(tc.old, tc.new, Options{FailOn: thresholds(t, tc.failOn...), FailOnUnknown: tc.failOnUnknown})
			if err != nil {
				t.Fatal(err)
			}
			m := metric(t, res, ttftPath)
			if got := m.Verdict("p50"); got != tc.verdict {
				t.Errorf("verdict %v, want %v (noise %+v)", got, tc.verdict, m.Noise)
			}
			if len(res.Regressions) != tc.regressions || len(res.WithinNoise) != tc.withinNoise || len(res.CannotTell) != tc.cannotTell {
				t.Errorf("regressions %d, within noise %d, cannot tell %d; want %d, %d, %d\n%+v\n%+v\n%+v", len(res.Regressions), len(res.WithinNoise),
					len(res.CannotTell), tc.regressions, tc.withinNoise, tc.cannotTell, res.Regressions, res.WithinNoise, res.CannotTell)
			}
			for _, r := range res.CannotTell {
				if r.Need != DefaultMinSamples || !strings.Contains(r.Reason, "cannot tell") {
					t.Errorf("cannot tell %+v: want Need %d and a reason saying so", r, DefaultMinSamples)
				}
			}
		})
	}
}

// The 95% interval of identical distributions excludes 0 about 5% of the
// time or less from DefaultMinSamples on (see its doc comment).
func TestBootstrapFalsePositives(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		stat string
		max  float64
	}{
		{name: "p50 at the minimum sample size", n: DefaultMinSamples, stat: "p50", max: 0.06},
		{name: "p95 at its minimum", n: minSamplesFor("p95", DefaultMinSamples), stat: "p95", max: 0.08},
		{name: "mean at its minimum", n: minSamplesFor("mean", DefaultMinSamples), stat: "mean", max: 0.08},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const trials = 200
			fp := 0
			for k := range trials {
				a, b := draw(uint64(2*k+1), tc.n, 10, 0.3), draw(uint64(2*k+2), tc.n, 10, 0.3)
				if bootstrap(a, b, 1000, 0.95, uint64(k+1), "x")[tc.stat].Excludes0() {
					fp++
				}
			}
			if rate := float64(fp) / trials; rate > tc.max {
				t.Errorf("false-positive rate %.3f at n=%d, want ≤ %.2f", rate, tc.n, tc.max)
			}
		})
	}
}

func TestBootstrapIsSeeded(t *testing.T) {
	a, b := draw(1, 20, 10, 0.3), draw(2, 20, 11, 0.3)
	x := bootstrap(a, b, 2000, 0.95, 1, "p")
	y := bootstrap(a, b, 2000, 0.95, 1, "p")
	if x["p50"] != y["p50"] {
		t.Fatalf("same seed, different intervals: %v %v", x["p50"], y["p50"])
	}
	// A constant shift gives a degenerate interval at the shift.
	c := bootstrap([]float64{1, 1, 1, 1, 1}, []float64{2, 2, 2, 2, 2}, 100, 0.95, 1, "p")
	if c["p50"] != (Interval{1, 1}) {
		t.Errorf("constant shift interval %v, want [1, 1]", c["p50"])
	}
}

func TestParseThreshold(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Threshold
		err      string
	}{
		{name: "rise", in: "ttft_ms.p50:+10%", want: Threshold{Selector: []string{"ttft_ms"}, Stat: "p50", Percent: 10, Increase: true}},
		{name: "drop", in: "decode_tokens_per_s.p50:-5%", want: Threshold{Selector: []string{"decode_tokens_per_s"}, Stat: "p50", Percent: 5}},
		{name: "fraction and path", in: "prefill.256.ttft_ms.p95:+2.5%", want: Threshold{Selector: []string{"prefill", "256", "ttft_ms"}, Stat: "p95", Percent: 2.5, Increase: true}},
		{name: "gate path", in: `runs["direct/cached"].phases.decode.seam_latency_ms.mean:+0.1%`,
			want: Threshold{Selector: []string{"runs", "direct/cached", "phases", "decode", "seam_latency_ms"}, Stat: "mean", Percent: 0.1, Increase: true}},
		{name: "scalar value", in: "speedup.value:-10%", want: Threshold{Selector: []string{"speedup"}, Stat: "value", Percent: 10}},
		{name: "no sign", in: "ttft_ms.p50:10%", err: "needs a sign"},
		{name: "a limit of zero", in: "ttft_ms.p50:+0%", err: "a limit of 0% is breached by any noise; give the smallest change that matters, e.g. +1%"},
		{name: "a drop of zero", in: "decode_tokens_per_s.p50:-0.0%", err: "e.g. -1%"},
		{name: "no percent", in: "ttft_ms.p50:+10", err: "must end in %"},
		{name: "no colon", in: "ttft_ms.p50", err: "no ':'"},
		{name: "no stat", in: "ttft_ms:+10%", err: "names no statistic"},
		{name: "unknown stat", in: "ttft_ms.p42:+10%", err: `"p42" is not a statistic`},
		{name: "two stats", in: "ttft_ms.p50.p95:+10%", err: "two statistics"},
		{name: "not a number", in: "ttft_ms.p50:+ten%", err: "not a number"},
		{name: "exponent", in: "ttft_ms.p50:+1e3%", err: "not a number"},
		{name: "infinity", in: "ttft_ms.p50:+Inf%", err: "not a number"},
		{name: "double sign", in: "ttft_ms.p50:+-5%", err: "not a number"},
		{name: "empty segment", in: "a..ttft_ms.p50:+5%", err: "empty segment"},
		{name: "unclosed bracket", in: `runs["a.p50:+5%`, err: "unclosed"},
		{name: "empty", in: "", err: "no ':'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseThreshold(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Raw = tc.in
			if got.Raw != tc.want.Raw || got.Stat != tc.want.Stat || got.Percent != tc.want.Percent || got.Increase != tc.want.Increase ||
				strings.Join(got.Selector, "|") != strings.Join(tc.want.Selector, "|") {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestThresholdMatches(t *testing.T) {
	path := []string{"runs", "embedded", "phases", "prefill", "by_prompt_tokens", "256", "ttft_ms"}
	for _, tc := range []struct {
		name, sel string
		want      bool
	}{
		{name: "metric name", sel: "ttft_ms", want: true},
		{name: "phase and metric", sel: "prefill.ttft_ms", want: true},
		{name: "point", sel: "256.ttft_ms", want: true},
		{name: "full path", sel: `runs.embedded.phases.prefill.by_prompt_tokens["256"].ttft_ms`, want: true},
		{name: "other metric", sel: "e2e_ms", want: false},
		{name: "other phase", sel: "decode.ttft_ms", want: false},
		{name: "out of order", sel: "256.prefill.ttft_ms", want: false},
		{name: "metric must be last", sel: "ttft_ms.256", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th, err := ParseThreshold(tc.sel + ".p50:+1%")
			if err != nil {
				t.Fatal(err)
			}
			if got := th.matches(path); got != tc.want {
				t.Errorf("matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIncomparable(t *testing.T) {
	base := func() *report.Report { return liveReport([]float64{1}, []float64{1}, false) }
	for _, tc := range []struct {
		name     string
		edit     func(r *report.Report)
		allowAny bool
		err      string // "" when comparable
		sentinel error
	}{
		{name: "same", edit: func(*report.Report) {}},
		{name: "host name alone differs", edit: func(r *report.Report) { r.Host.Hostname = "other" }},
		{name: "schema version", edit: func(r *report.Report) { r.SchemaVersion = 2 }, allowAny: true, err: "schema_version 1 (old) vs 2 (new)", sentinel: ErrIncomparable},
		{name: "not tollgate", edit: func(r *report.Report) { r.Tool.Name = "other" }, allowAny: true, err: "new report: not a tollgate report", sentinel: ErrNotReport},
		{name: "scenario sha", edit: func(r *report.Report) { r.Scenario.SHA256 = "def" }, err: `scenario differs in: sha256 (old abc, new def`, sentinel: ErrIncomparable},
		{name: "scenario name", edit: func(r *report.Report) { r.Scenario.Name = "t" }, err: `scenario name: old "s", new "t"`, sentinel: ErrIncomparable},
		{name: "model", edit: func(r *report.Report) { r.Runs["server"].Target.Model = "n" }, err: `run server model: old "m", new "n"`, sentinel: ErrIncomparable},
		{name: "cpu", edit: func(r *report.Report) { r.Host.CPUCores = 16 }, err: "host cpu_cores: old 8, new 16", sentinel: ErrIncomparable},
		{name: "says how to override", edit: func(r *report.Report) { r.Host.CPUModel = "x" }, err: "pass --baseline-any", sentinel: ErrIncomparable},
		{name: "allowed with --baseline-any", edit: func(r *report.Report) {
			r.Scenario.SHA256, r.Host.CPUModel, r.Runs["server"].Target.Model = "d", "x", "n"
		}, allowAny: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := base()
			tc.edit(n)
			_, err := Compare(base(), n, Options{AllowAny: tc.allowAny})
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, tc.sentinel) {
				t.Fatalf("error %v, want one containing %q wrapping %v", err, tc.err, tc.sentinel)
			}
		})
	}
}

func TestThresholdErrors(t *testing.T) {
	r := liveReport(draw(1, 10, 100, 0.2), draw(2, 10, 50, 0.1), true)
	for _, tc := range []struct{ name, failOn, want string }{
		{"misspelt metric", "ttfttt_ms.p50:+10%", `no metric is named "ttfttt_ms" (did you mean "ttft_ms"?)`},
		{"misspelt phase", "decod.ttft_ms.p50:+10%", `no run, phase or slice is named "decod" (did you mean "decode"?)`},
		{"statistic a scalar lacks", "errors.rate.p50:+10%", "no errors.rate has a p50"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compare(r, r, Options{FailOn: thresholds(t, tc.failOn)})
			if !errors.Is(err, ErrNoMetric) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrNoMetric saying %q", err, tc.want)
			}
		})
	}
	// A metric that vanished from the new report is a regression, not a pass.
	n := liveReport(draw(1, 10, 100, 0.2), draw(2, 10, 50, 0.1), true)
	n.Runs["server"].Phases["decode"].TTFTMS = report.Stat{}
	res, err := Compare(r, n, Options{FailOn: thresholds(t, "ttft_ms.p50:+10%")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Regressions) != 1 || !strings.Contains(res.Regressions[0].Reason, "absent in new") {
		t.Fatalf("regressions %+v, want ttft_ms absent in new", res.Regressions)
	}
}

// routeSession runs the route-session example for real, with --set values.
func routeSession(t *testing.T, sets ...string) *report.Report {
	t.Helper()
	sc, err := scenarios.Load("../../examples/route-session.yaml", scenarios.Options{Sets: sets})
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{ToolVersion: "test", Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	r := engine.New(sc, opts)
	if err := engine.Run(context.Background(), sc, r, opts); err != nil {
		t.Fatal(err)
	}
	r.Status = report.StatusPass
	r.Host = report.Host{OS: "linux", Arch: "amd64", CPUCores: 1} // schema-valid: Decode checks it
	// As read back by tollgate compare.
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := report.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func TestRouteSession(t *testing.T) {
	old := routeSession(t)
	same, err := Compare(old, routeSession(t), Options{FailOn: thresholds(t, "seam_latency_ms.p50:+0.1%")})
	if err != nil {
		t.Fatal(err)
	}
	if v := same.Verdict(); v != NoRegression {
		t.Errorf("a deterministic rerun: verdict %s, want no regression", v)
	}
	if len(same.Regressions) != 0 {
		t.Fatalf("a deterministic rerun regressed: %+v", same.Regressions)
	}
	for _, m := range same.Metrics {
		if m.Noise.Method != NoiseNone || m.Verdict(m.Headline()) != Within {
			t.Errorf("%s: %s %v, want deterministic and within", m.Path, m.Noise.Method, m.Verdict(m.Headline()))
		}
	}

	slower := routeSession(t, "targets.route.costs.transport_ms.relay=0.9")
	if _, err := Compare(old, slower, Options{}); !errors.Is(err, ErrIncomparable) {
		t.Fatalf("an edited scenario compared without --baseline-any: %v", err)
	}
	res, err := Compare(old, slower, Options{AllowAny: true,
		FailOn: thresholds(t, "relay/cached.decode.seam_latency_ms.p50:+10%", "relay/stateless.decode.seam_latency_ms.p50:+10%", "direct/cached.tokens_per_s.value:-1%")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Regressions {
		got = append(got, r.Path+"."+r.Stat)
	}
	want := []string{`runs["relay/cached"].phases.decode.seam_latency_ms.p50`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("regressions %v, want %v (relay/stateless rose 10.0%%, not more)", got, want)
	}

	var buf bytes.Buffer
	if err := Table(&buf, res); err != nil {
		t.Fatal(err)
	}
	golden(t, "route-session-relay-slower.txt", buf.Bytes())
}

func TestTableGolden(t *testing.T) {
	old := liveReport(draw(1, 50, 100, 0.2), draw(2, 50, 50, 0.1), true)
	n := liveReport(scale(draw(3, 50, 100, 0.2), 1.3), draw(4, 50, 50, 0.1), true)
	n.Host.Hostname = "other"
	res, err := Compare(old, n, Options{FailOn: thresholds(t, "ttft_ms.p50:+10%", "decode_tokens_per_s.p95:-1%")})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Table(&buf, res); err != nil {
		t.Fatal(err)
	}
	golden(t, "live-shifted.txt", buf.Bytes())
}

type failWriter struct{}

var errBroken = errors.New("broken pipe")

func (failWriter) Write([]byte) (int, error) { return 0, errBroken }

func TestTableWriteError(t *testing.T) {
	r := liveReport([]float64{1}, []float64{1}, false)
	res, err := Compare(r, r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Table(failWriter{}, res); !errors.Is(err, errBroken) {
		t.Fatalf("Table error %v, want it to wrap %v", err, errBroken)
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
		t.Fatalf("%v (run go test ./report/compare -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed; if intended, run go test ./report/compare -update\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestTableCleansNames: a scenario, run or phase named with control bytes
// reaches the terminal escaped, not raw.
func TestTableCleansNames(t *testing.T) {
	hostile := func() *report.Report {
		r := liveReport([]float64{1, 2}, []float64{3, 4}, false)
		r.Scenario.Name = "s\x1b[31m\r\x00\xff"
		run := r.Runs["server"]
		run.Name = "srv\x1b]0;title\x07"
		r.Runs = map[string]*report.Run{run.Name: run}
		r.RunOrder = []string{run.Name}
		run.Phases["de\x1bcode"] = run.Phases["decode"]
		delete(run.Phases, "decode")
		run.PhaseOrder = []string{"de\x1bcode"}
		return r
	}
	res, err := Compare(hostile(), hostile(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Table(&buf, res); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, b := range []string{"\x1b", "\r", "\x00", "\x07", "\xff"} {
		if strings.Contains(out, b) {
			t.Errorf("raw %q in the table:\n%s", b, out)
		}
	}
	if !strings.Contains(out, `s\x1b[31m`) {
		t.Errorf("scenario name not shown escaped:\n%s", out)
	}
}
