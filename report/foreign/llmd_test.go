package foreign

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// llmdWant checks a point's statistics against the fixture's Statistics
// objects, scaled to tollgate's units by factor.
func llmdWant(t *testing.T, lat map[string]any, lp *report.LoadPoint, factor float64) {
	t.Helper()
	for _, m := range []struct {
		name string
		st   report.Stat
	}{{"time_to_first_token", lp.TTFTMS}, {"time_per_output_token", lp.TPOTMS}, {"inter_token_latency", lp.ITLMS}, {"request_latency", lp.E2EMS}} {
		s := lat[m.name].(map[string]any)
		for _, k := range []string{"min", "p50", "p90", "p95", "p99", "max"} {
			wantNear(t, m.name+"."+k, m.st.Field(k), s[k].(float64)*factor)
		}
		wantNear(t, m.name+".mean", m.st.Mean, s["mean"].(float64)*factor)
		if m.st.Count != lp.Succeeded {
			t.Errorf("%s count %d, want the %d succeeded", m.name, m.st.Count, lp.Succeeded)
		}
	}
}

// TestLLMDVersions: each version's layout maps onto one load point, its
// latencies in ms whatever the units the report gave (ms in the v0.1
// fixture, s in the v0.2.1 one), with the harness named and the notes.
func TestLLMDVersions(t *testing.T) {
	for _, tc := range []struct {
		name, file, latency, version string
		factor                       float64
		concurrency                  int
	}{
		{"v0.1 in ms", "llmd-v0_1-vllm.json", "metrics/latency", "v0.1, load by vllm-benchmark", 1, 4},
		{"v0.2.1 in s", "llmd-v0_2_1-inference-perf.json", "results/request_performance/aggregate/latency", "v0.2.1, load by inference-perf 0.3.0", 1000, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx, r := fixture(t, tc.file), read(t, tc.file)
			if r.Imported.Tool != LLMDTool || r.Imported.Version != tc.version || r.Imported.Samples {
				t.Fatalf("imported %+v", r.Imported)
			}
			lat := fx
			for _, k := range strings.Split(tc.latency, "/") {
				lat = lat[k].(map[string]any)
			}
			_, lp := only(t, r)
			if lp.Concurrency != tc.concurrency || lp.Rate != 0 || lp.Requests != 12 || lp.Succeeded != 12 {
				t.Errorf("point: concurrency %d rate %v requests %d succeeded %d", lp.Concurrency, lp.Rate, lp.Requests, lp.Succeeded)
			}
			llmdWant(t, lat, lp, tc.factor)
			wantNear(t, "completion_tokens.mean", lp.CompletionTokens.Mean, 16)
			wantNear(t, "prompt_tokens.mean", lp.PromptTokens.Mean, 64)
			if lp.DurationS <= 0 || lp.OutputTokensPerS == nil || lp.RequestThroughputPerS == nil || lp.TotalTokensPerS == nil {
				t.Errorf("duration %v, throughputs %v %v %v", lp.DurationS, lp.OutputTokensPerS, lp.RequestThroughputPerS, lp.TotalTokensPerS)
			}
			if r.Runs[r.RunOrder[0]].Target.Model != "Qwen/Qwen2.5-0.5B-Instruct" || r.StartedAt.IsZero() {
				t.Errorf("model %q, started %v", r.Runs[r.RunOrder[0]].Target.Model, r.StartedAt)
			}
			wantNotes(t, r, "tpot_ms ← time_per_output_token: the schema's TPOT, (request_latency − time_to_first_token) ÷ (output tokens − 1)",
				"itl_ms ← inter_token_latency: the harness's ITL", "normalized_time_per_output_token", "noise cannot be told")
		})
	}
}

// TestLLMDVersionsOfTheV02Line: 0.2, 0.2.0 and 0.2.1 read alike (the
// line only adds optional fields); 0.3 and 1.0 are refused by version.
func TestLLMDVersionsOfTheV02Line(t *testing.T) {
	body := string(must(os.ReadFile("testdata/llmd-v0_2_1-inference-perf.json")))
	for _, tc := range []struct {
		name, version string
		ok            bool
	}{{"0.2", "0.2", true}, {"0.2.0", "0.2.0", true}, {"0.2.7", "0.2.7", true}, {"0.3", "0.3", false}, {"1.0", "1.0", false}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Decode("x.json", []byte(strings.Replace(body, `"version": "0.2.1"`, `"version": "`+tc.version+`"`, 1)))
			if tc.ok {
				if err != nil || r.Imported.Version != "v"+tc.version+", load by inference-perf 0.3.0" {
					t.Fatalf("%v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), `x.json (read as a result of llm-d benchmark report): /version: "`+tc.version+`": this tollgate reads llm-d benchmark reports 0.1 and 0.2.x`) {
				t.Errorf("%v", err)
			}
		})
	}
}

// TestLLMDUnits: the unit each statistic gives scales it (s → ms ×1000,
// s/token → ms ×1000, ms and ms/token as they are); a unit the schema
// does not allow there is refused naming the field.
func TestLLMDUnits(t *testing.T) {
	base := string(must(os.ReadFile("testdata/llmd-v0_1-vllm.json")))
	_, want := only(t, must(Decode("x.json", []byte(base))))
	swap := func(name, from, to string, scale float64) string {
		// Rewrites one statistic to the other unit, scaling its figures.
		var doc map[string]any
		if err := json.Unmarshal([]byte(base), &doc); err != nil {
			t.Fatal(err)
		}
		s := doc["metrics"].(map[string]any)["latency"].(map[string]any)[name].(map[string]any)
		if s["units"] != from {
			t.Fatalf("%s in %v", name, s["units"])
		}
		s["units"] = to
		for k, v := range s {
			if f, ok := v.(float64); ok {
				s[k] = f * scale
			}
		}
		return string(must(json.Marshal(doc)))
	}
	for _, tc := range []struct {
		name, body string
		stat       func(*report.LoadPoint) report.Stat
	}{
		{"ttft in s", swap("time_to_first_token", "ms", "s", 1e-3), func(lp *report.LoadPoint) report.Stat { return lp.TTFTMS }},
		{"e2e in s", swap("request_latency", "ms", "s", 1e-3), func(lp *report.LoadPoint) report.Stat { return lp.E2EMS }},
		{"tpot in s/token", swap("time_per_output_token", "ms/token", "s/token", 1e-3), func(lp *report.LoadPoint) report.Stat { return lp.TPOTMS }},
		{"itl in s/token", swap("inter_token_latency", "ms/token", "s/token", 1e-3), func(lp *report.LoadPoint) report.Stat { return lp.ITLMS }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, lp := only(t, must(Decode("x.json", []byte(tc.body))))
			got, w := tc.stat(lp), tc.stat(want)
			for _, k := range []string{"mean", "min", "p50", "p90", "p95", "p99", "max"} {
				wantNear(t, k, got.Field(k), *w.Field(k))
			}
		})
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"ms/token for a time", `"units": "ms", "mean": `, `"units": "ms/token", "mean": `, `/metrics/latency/time_to_first_token/units: "ms/token": want ms or s`},
		{"a time for tpot", `"units": "ms/token"`, `"units": "ms"`, `/metrics/latency/time_per_output_token/units: "ms": want ms/token or s/token`},
		{"an unknown unit", `"units": "ms", "mean": `, `"units": "fortnights", "mean": `, `/metrics/latency/time_to_first_token/units: "fortnights"`},
		{"tokens not counted", `"units": "count", "mean": 64.0`, `"units": "tokens", "mean": 64.0`, `/metrics/requests/input_length/units: "tokens": want count`},
		{"no units", `"units": "ms", "mean": `, `"mean": `, `/metrics/latency/time_to_first_token/units: missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(base, tc.from) {
				t.Fatalf("fixture lacks %q", tc.from)
			}
			_, err := Decode("x.json", []byte(strings.Replace(base, tc.from, tc.to, 1)))
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "x.json (read as a result of llm-d benchmark report): "+tc.want) {
				t.Errorf("error lacks %q: %v", tc.want, err)
			}
		})
	}
}

// TestLLMDRefused: a malformed report is refused naming the file and the
// field, never a panic; the v0.2 layout's pointers are its own.
func TestLLMDRefused(t *testing.T) {
	v01 := string(must(os.ReadFile("testdata/llmd-v0_1-vllm.json")))
	v02 := string(must(os.ReadFile("testdata/llmd-v0_2_1-inference-perf.json")))
	edit := func(body, from, to string) string {
		if !strings.Contains(body, from) {
			t.Fatalf("fixture lacks %q", from)
		}
		return strings.Replace(body, from, to, 1)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"v0.1: no requests", edit(v01, `"requests": {`, `"requestz": {`), "/metrics/requests: missing"},
		{"v0.1: a string total", edit(v01, `"total": 12`, `"total": "12"`), "/metrics/requests/total: want a number, got a string"},
		{"v0.1: no ttft", edit(v01, `"time_to_first_token"`, `"time_to_first_tokens"`), "/metrics/latency/time_to_first_token: missing"},
		{"v0.1: no duration", edit(v01, `"duration": 0.6021, `, ``), "/metrics/time/duration: missing"},
		{"v0.1: no load", edit(v01, `"request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4`, `"num_workers": 4`), "/scenario/load/args: names no load (request_rate or max_concurrency)"},
		{"v0.1: more failures than requests", edit(v01, `"total": 12,`, `"total": 12, "failures": 13,`), "/metrics/requests/total: 12, fewer than its failures (13)"},
		{"v0.2: a median above the max", edit(v02, `"max": 0.2`, `"max": 0.0001`), "is above the max"},
		{"v0.2: a bad duration", edit(v02, `"duration": "PT0.6113S"`, `"duration": "soon"`), `/run/time/duration: "soon": want an ISO 8601 duration`},
		{"v0.2: a fractional concurrency", edit(v02, `"concurrency": 4`, `"concurrency": 4.5`), "/scenario/load/standardized/concurrency: want a whole number ≥ 1, got 4.5"},
		{"v0.2: no aggregate", edit(v02, `"aggregate": {`, `"aggregated": {`), "/results/request_performance/aggregate/requests: missing"},
		{"v0.2: a throughput in bytes", edit(v02, `"units": "queries/s"`, `"units": "MB/s"`), `/results/request_performance/aggregate/throughput/request_rate/units: "MB/s": want queries/s`},
		{"v0.2: latency a list", edit(v02, `"latency": {`, `"latency": [], "x": {`), "/results/request_performance/aggregate/latency: want an object, got a list"},
		{"no version string", `{"version": 0.1, "scenario": {}, "metrics": {}}`, "/version: want a string, got a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode("x.json", []byte(tc.body))
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, report.ErrNotReport) || !strings.Contains(err.Error(), "x.json (read as a result of llm-d benchmark report): ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error lacks %q:\n%v", tc.want, err)
			}
		})
	}
}

// TestISOSeconds: the durations pydantic writes for a timedelta.
func TestISOSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{{"PT49.97206788184121S", 49.97206788184121, true}, {"PT1M30S", 90, true}, {"P1DT2H", 93600, true}, {"PT0S", 0, true},
		{"P", 0, false}, {"PT", 0, false}, {"49.9", 0, false}, {"PT-1S", 0, false}} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := isoSeconds(tc.in)
			if ok != tc.ok || (ok && !near(got, tc.want)) {
				t.Errorf("%v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
