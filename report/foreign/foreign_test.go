package foreign

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// fixture is a testdata file decoded as generic JSON: the figures the
// mapped report must carry are read from it, not copied into the test.
func fixture(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// fixtureLines is a JSON-lines testdata file, an object a line.
func fixtureLines(t *testing.T, name string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func read(t *testing.T, name string) *report.Report {
	t.Helper()
	r, err := ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// only is the one load phase and point of an import.
func only(t *testing.T, r *report.Report) (*report.Phase, *report.LoadPoint) {
	t.Helper()
	if len(r.RunOrder) != 1 {
		t.Fatalf("runs %v, want one", r.RunOrder)
	}
	ph := r.Runs[r.RunOrder[0]].Phases[phaseName]
	if ph == nil || len(ph.Points) == 0 {
		t.Fatalf("no load phase with points: %+v", r.Runs[r.RunOrder[0]].PhaseOrder)
	}
	return ph, ph.Points[0]
}

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func wantNear(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: absent, want %v", what, want)
		return
	}
	if !near(*got, want) {
		t.Errorf("%s = %v, want %v", what, *got, want)
	}
}

func num(t *testing.T, m map[string]any, k string) float64 {
	t.Helper()
	f, ok := m[k].(float64)
	if !ok {
		t.Fatalf("fixture has no number %s", k)
	}
	return f
}

func floats(v any) []float64 {
	var out []float64
	for _, x := range v.([]any) {
		out = append(out, x.(float64))
	}
	return out
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// wantNotes checks that every fragment is in some definition note.
func wantNotes(t *testing.T, r *report.Report, fragments ...string) {
	t.Helper()
	all := strings.Join(r.Imported.Notes, "\n")
	for _, f := range fragments {
		if !strings.Contains(all, f) {
			t.Errorf("definition notes lack %q:\n%s", f, all)
		}
	}
}

// TestVLLMDetailed: a --save-detailed chat result becomes a load point
// of concurrency 4 whose request samples are vLLM's lists, folded as a
// run's; the means equal vLLM's own, and the notes name TTFT at the role
// chunk, TPOT's ends and ITL per chunk.
func TestVLLMDetailed(t *testing.T) {
	const name = "vllm-chat-detailed.json"
	fx, r := fixture(t, name), read(t, name)
	if r.Imported == nil || r.Imported.Tool != VLLMTool || !r.Imported.Samples {
		t.Fatalf("imported %+v", r.Imported)
	}
	ph, lp := only(t, r)
	if lp.Concurrency != 4 || lp.Rate != 0 {
		t.Errorf("load: concurrency %d rate %v, want concurrency 4 (max_concurrency, request_rate inf)", lp.Concurrency, lp.Rate)
	}
	if lp.Requests != int(num(t, fx, "num_prompts")) || lp.Succeeded != int(num(t, fx, "completed")) {
		t.Errorf("requests %d succeeded %d", lp.Requests, lp.Succeeded)
	}
	if lp.DurationS != num(t, fx, "duration") {
		t.Errorf("duration_s %v", lp.DurationS)
	}
	wantNear(t, "request_throughput_per_s", lp.RequestThroughputPerS, num(t, fx, "request_throughput"))
	wantNear(t, "output_tokens_per_s", lp.OutputTokensPerS, num(t, fx, "output_throughput"))
	wantNear(t, "total_tokens_per_s", lp.TotalTokensPerS, num(t, fx, "total_token_throughput"))
	wantNear(t, "ttft_ms.mean", lp.TTFTMS.Mean, num(t, fx, "mean_ttft_ms"))
	wantNear(t, "itl_ms.mean", lp.ITLMS.Mean, num(t, fx, "mean_itl_ms"))
	// Samples: vLLM's lists, in tollgate's units.
	reqs, _, err := report.PhaseSamples(ph, report.TargetOpenAI)
	if err != nil || len(reqs) != 12 {
		t.Fatalf("%d samples, %v", len(reqs), err)
	}
	ttfts, itls := floats(fx["ttfts"]), fx["itls"].([]any)
	gaps := 0
	var tpots []float64
	for i, s := range reqs {
		g := floats(itls[i])
		gaps += len(g)
		sum := 0.0
		for _, x := range g {
			sum += x
		}
		wantNear(t, "ttft", s.TTFTMS, ttfts[i]*1000)
		if e := (ttfts[i] + sum) * 1000; !near(s.E2EMS, e) {
			t.Errorf("request %d: e2e %v, want ttft + Σ itls = %v", i, s.E2EMS, e)
		}
		out := *s.CompletionTokens
		wantNear(t, "tpot", s.TPOTMS, sum*1000/float64(out-1))
		tpots = append(tpots, sum*1000/float64(out-1))
		if s.Point != "concurrency 4" || s.Phase != phaseName {
			t.Errorf("request %d: phase %q point %q", i, s.Phase, s.Point)
		}
	}
	if lp.ITLMS.Count != gaps {
		t.Errorf("itl_ms.count %d, want every gap (%d)", lp.ITLMS.Count, gaps)
	}
	wantNear(t, "tpot_ms.mean", lp.TPOTMS.Mean, mean(tpots))
	// vLLM's TPOT ends at the last chunk, the usage chunk of a chat
	// stream, a little after the last token: within 1%, never below.
	if vt := num(t, fx, "mean_tpot_ms"); *lp.TPOTMS.Mean > vt || *lp.TPOTMS.Mean < 0.99*vt {
		t.Errorf("tpot_ms.mean %v against vLLM's %v", *lp.TPOTMS.Mean, vt)
	}
	wantNotes(t, r, "carrying the role and no token", "the first token excluded as in tollgate's tpot_ms", "one gap per chunk", "nearest-rank percentiles")
	if r.Runs["vllm"].Target.Model != fx["model_id"] || r.Runs["vllm"].Target.Endpoint != "chat" {
		t.Errorf("target %+v", r.Runs["vllm"].Target)
	}
}

// TestVLLMSummaryOnly: without --save-detailed the statistics are vLLM's
// own summaries, number for number, and the notes say noise cannot be
// told.
func TestVLLMSummaryOnly(t *testing.T) {
	const name = "vllm-serve-summary.json"
	fx, r := fixture(t, name), read(t, name)
	if r.Imported.Samples {
		t.Error("samples from a summary")
	}
	ph, lp := only(t, r)
	if ph.Samples != nil {
		t.Error("phase has samples")
	}
	for _, m := range []struct {
		vllm string
		st   report.Stat
	}{{"ttft", lp.TTFTMS}, {"tpot", lp.TPOTMS}, {"itl", lp.ITLMS}} {
		wantNear(t, m.vllm+" mean", m.st.Mean, num(t, fx, "mean_"+m.vllm+"_ms"))
		wantNear(t, m.vllm+" p50", m.st.P50, num(t, fx, "median_"+m.vllm+"_ms"))
		wantNear(t, m.vllm+" p99", m.st.P99, num(t, fx, "p99_"+m.vllm+"_ms"))
		if m.st.P90 != nil || m.st.Min != nil {
			t.Errorf("%s: statistics vLLM did not write: %+v", m.vllm, m.st)
		}
	}
	if lp.TTFTMS.Count != int(num(t, fx, "completed")) {
		t.Errorf("ttft count %d", lp.TTFTMS.Count)
	}
	if lp.PeakInFlight != 4 {
		t.Errorf("peak_in_flight %d, want max_concurrent_requests", lp.PeakInFlight)
	}
	if got := r.Runs["vllm"].Target.Metadata["gpu"]; got != "H100" {
		t.Errorf("--metadata gpu=H100 read as %v", got)
	}
	wantNotes(t, r, "summaries only", "numpy's linear interpolation", "noise cannot be told")
}

// TestVLLMAppendedResults: an --append-result file is a sweep, a point a
// line, and a failed request is an error of the class its text names.
func TestVLLMAppendedResults(t *testing.T) {
	const name = "vllm-completions-sweep.jsonl"
	lines, r := fixtureLines(t, name), read(t, name)
	ph, _ := only(t, r)
	if len(ph.Points) != len(lines) {
		t.Fatalf("%d points for %d results", len(ph.Points), len(lines))
	}
	for i, l := range lines {
		lp := ph.Points[i]
		if lp.Rate != num(t, l, "request_rate") {
			t.Errorf("point %d: rate %v", i, lp.Rate)
		}
		if lp.Succeeded != int(num(t, l, "completed")) || lp.Requests != int(num(t, l, "num_prompts")) {
			t.Errorf("point %d: %d of %d", i, lp.Succeeded, lp.Requests)
		}
		wantNear(t, "ttft mean", lp.TTFTMS.Mean, num(t, l, "mean_ttft_ms"))
		// Completions: vLLM's latency is ttft + Σ itls, so TPOT is vLLM's.
		wantNear(t, "tpot mean", lp.TPOTMS.Mean, num(t, l, "mean_tpot_ms"))
	}
	if got := ph.Points[1].Errors.ByClass["http_status"]; got != 1 {
		t.Errorf("a failure with vLLM's \"Internal Server Error\": by_class %v", ph.Points[1].Errors.ByClass)
	}
	if ph.Requests != 16 || ph.Succeeded != 15 {
		t.Errorf("phase: %d of %d", ph.Succeeded, ph.Requests)
	}
	if r.Runs["vllm"].Target.Endpoint != "completions" {
		t.Errorf("backend openai is the completions endpoint, got %q", r.Runs["vllm"].Target.Endpoint)
	}
	wantNotes(t, r, "first streamed chunk with choices, even when its text is empty")
}

// TestGuideLLM: per-request values become samples (each request once:
// GuideLLM's ITL is tollgate's TPOT); sampled requests leave GuideLLM's
// summaries, number for number.
func TestGuideLLM(t *testing.T) {
	t.Run("every request kept", func(t *testing.T) {
		const name = "guidellm-concurrent.json"
		fx, r := fixture(t, name), read(t, name)
		if r.Imported.Tool != GuideLLMTool || !r.Imported.Samples || !strings.Contains(r.Imported.Version, "v0.2") {
			t.Fatalf("imported %+v", r.Imported)
		}
		ph, lp := only(t, r)
		if lp.Concurrency != 4 {
			t.Errorf("concurrent strategy of 4 streams read as %+v", lp)
		}
		b := fx["benchmarks"].([]any)[0].(map[string]any)
		succ := b["requests"].(map[string]any)["successful"].([]any)
		reqs, _, _ := report.PhaseSamples(ph, report.TargetOpenAI)
		if len(reqs) != len(succ) {
			t.Fatalf("%d samples for %d requests", len(reqs), len(succ))
		}
		var ttft, itl []float64
		for i, s := range reqs {
			q := succ[i].(map[string]any)
			wantNear(t, "ttft", s.TTFTMS, q["time_to_first_token_ms"].(float64))
			wantNear(t, "tpot ← GuideLLM ITL", s.TPOTMS, q["inter_token_latency_ms"].(float64))
			if !near(s.E2EMS, q["request_latency"].(float64)*1000) {
				t.Errorf("e2e %v, want request_latency × 1000", s.E2EMS)
			}
			ttft = append(ttft, q["time_to_first_token_ms"].(float64))
			itl = append(itl, q["inter_token_latency_ms"].(float64))
		}
		wantNear(t, "ttft_ms.mean", lp.TTFTMS.Mean, mean(ttft))
		wantNear(t, "tpot_ms.mean (each request once)", lp.TPOTMS.Mean, mean(itl))
		if lp.ITLMS.Count != 0 {
			t.Errorf("itl_ms from GuideLLM, which keeps no gaps: %+v", lp.ITLMS)
		}
		dur := b["end_time"].(float64) - b["start_time"].(float64)
		if math.Abs(lp.DurationS-dur) > 1e-6 {
			t.Errorf("duration_s %v, want %v", lp.DurationS, dur)
		}
		wantNear(t, "request_throughput_per_s", lp.RequestThroughputPerS, float64(len(succ))/lp.DurationS)
		wantNotes(t, r, "GuideLLM's inter_token_latency_ms: (last_token_time − first_token_time) ÷ (output_tokens − 1)",
			"time_per_output_token_ms is (last_token_time − start_time) ÷ output_tokens", "each request once")
	})
	t.Run("sampled requests", func(t *testing.T) {
		const name = "guidellm-constant-sampled.json"
		fx, r := fixture(t, name), read(t, name)
		if r.Imported.Samples {
			t.Fatal("samples from a sampled benchmark")
		}
		ph, _ := only(t, r)
		for i, bv := range fx["benchmarks"].([]any) {
			b := bv.(map[string]any)
			lp := ph.Points[i]
			if want := b["args"].(map[string]any)["strategy"].(map[string]any)["rate"].(float64); lp.Rate != want {
				t.Errorf("point %d: rate %v, want %v", i, lp.Rate, want)
			}
			met := b["metrics"].(map[string]any)
			for _, m := range []struct {
				guide string
				st    report.Stat
				scale float64
			}{{"time_to_first_token_ms", lp.TTFTMS, 1}, {"inter_token_latency_ms", lp.TPOTMS, 1}, {"request_latency", lp.E2EMS, 1000}} {
				d := met[m.guide].(map[string]any)["successful"].(map[string]any)
				ps := d["percentiles"].(map[string]any)
				wantNear(t, m.guide+" mean", m.st.Mean, d["mean"].(float64)*m.scale)
				wantNear(t, m.guide+" p50", m.st.P50, ps["p50"].(float64)*m.scale)
				wantNear(t, m.guide+" p99", m.st.P99, ps["p99"].(float64)*m.scale)
				wantNear(t, m.guide+" max", m.st.Max, d["max"].(float64)*m.scale)
			}
		}
		wantNotes(t, r, "weighted by tokens", "--output-sampling", "noise cannot be told")
	})
}

// TestGuideLLMLoads: each strategy of a sweep is its load point's load;
// the throughput strategy's matches no tollgate point, and says so.
func TestGuideLLMLoads(t *testing.T) {
	data := string(must(os.ReadFile("testdata/guidellm-constant-sampled.json")))
	for _, tc := range []struct {
		strategy          string
		concurrency       int
		rate, secondsRate float64
	}{
		{`{"type_": "synchronous"}`, 1, 0, 4},
		{`{"type_": "concurrent", "streams": 16}`, 16, 0, 4},
		{`{"type_": "throughput", "max_concurrency": null}`, 0, 0, 4},
		{`{"type_": "poisson", "rate": 1.5, "initial_burst": true, "random_seed": 42}`, 0, 1.5, 4},
	} {
		body := strings.Replace(data, `{"type_": "constant", "rate": 2.0, "initial_burst": true, "max_concurrency": null}`, tc.strategy, 1)
		if body == data {
			t.Fatal("fixture lacks its first strategy")
		}
		r, err := Decode("g.json", []byte(body))
		if err != nil {
			t.Fatalf("%s: %v", tc.strategy, err)
		}
		ph, lp := only(t, r)
		if lp.Concurrency != tc.concurrency || lp.Rate != tc.rate || ph.Points[1].Rate != tc.secondsRate {
			t.Errorf("%s: concurrency %d rate %v, then rate %v", tc.strategy, lp.Concurrency, lp.Rate, ph.Points[1].Rate)
		}
	}
}

// TestAIPerf: AIPerf's records map number for number; what has no
// tollgate metric is named, and noise cannot be told.
func TestAIPerf(t *testing.T) {
	const name = "aiperf-chat-records.json"
	fx, r := fixture(t, name), read(t, name)
	if r.Imported.Tool != AIPerfTool || r.Imported.Samples {
		t.Fatalf("imported %+v", r.Imported)
	}
	_, lp := only(t, r)
	recs := fx["records"].(map[string]any)
	for _, m := range []struct {
		tag string
		st  report.Stat
	}{{"time_to_first_token", lp.TTFTMS}, {"request_latency", lp.E2EMS}, {"inter_token_latency", lp.TPOTMS},
		{"output_token_throughput_per_user", lp.DecodeTokensPerS}, {"output_sequence_length", lp.CompletionTokens}} {
		rec := recs[m.tag].(map[string]any)
		for _, s := range []string{"p50", "p90", "p95", "p99", "min", "max"} {
			if v, ok := rec[s].(float64); ok {
				wantNear(t, m.tag+"."+s, m.st.Field(s), v)
			} else if m.st.Field(s) != nil {
				t.Errorf("%s.%s: %v, which AIPerf did not write", m.tag, s, *m.st.Field(s))
			}
		}
		wantNear(t, m.tag+".avg", m.st.Mean, rec["avg"].(float64))
		if m.st.Count != int(rec["count"].(float64)) {
			t.Errorf("%s count %d", m.tag, m.st.Count)
		}
	}
	if lp.Concurrency != 4 || lp.Requests != 12 || lp.Succeeded != 12 {
		t.Errorf("point %+v", lp)
	}
	wantNear(t, "request_throughput_per_s", lp.RequestThroughputPerS, recs["request_throughput"].(map[string]any)["avg"].(float64))
	if lp.DurationS != recs["benchmark_duration"].(map[string]any)["avg"].(float64) {
		t.Errorf("duration_s %v", lp.DurationS)
	}
	wantNotes(t, r, "AIPerf's inter_token_latency: (request_latency − time_to_first_token) ÷ (output_sequence_length − 1)",
		"not mapped (no tollgate metric is defined as they are): time_to_second_token", "noise cannot be told")
}

// TestAIPerfLayouts: the records by tag, as a list, or at the top level
// (GenAI-Perf's layout) are one summary.
func TestAIPerfLayouts(t *testing.T) {
	fx := fixture(t, "aiperf-chat-records.json")
	want := read(t, "aiperf-chat-records.json")
	recs := fx["records"].(map[string]any)
	var list []any
	flat := map[string]any{"input_config": fx["input_config"]}
	for tag, rec := range recs {
		list = append(list, rec)
		flat[tag] = rec
	}
	asList := map[string]any{"records": list, "input_config": fx["input_config"], "start_time": fx["start_time"]}
	for name, doc := range map[string]any{"list": asList, "flat": flat} {
		body, _ := json.Marshal(doc)
		r, err := Decode("a.json", body)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, lp := only(t, r)
		_, wlp := only(t, want)
		a, _ := json.Marshal(lp)
		b, _ := json.Marshal(wlp)
		if !bytes.Equal(a, b) {
			t.Errorf("%s layout:\n%s\nwant\n%s", name, a, b)
		}
	}
}

// TestImportsAreSoundReports: every import, written as JSON, passes the
// checks a tollgate report passes (the schema, min ≤ p50 ≤ … ≤ max,
// succeeded + errors = requests) but for the host, which no tool records.
func TestImportsAreSoundReports(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json*")
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasPrefix(name, "tollgate-") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			r := read(t, name)
			r.Host = report.Host{OS: "linux", Arch: "amd64", CPUCores: 1, GoVersion: "go"}
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			if v := report.Check(doc); len(v) > 0 {
				t.Errorf("%d violations, first %v", len(v), v[0])
			}
		})
	}
}

// TestRefused: a file recognised as a tool's and wrong is refused naming
// the file and the field (a JSON pointer), and what was expected.
func TestRefused(t *testing.T) {
	vllm := string(must(os.ReadFile("testdata/vllm-serve-summary.json")))
	edit := func(from, to string) string {
		if !strings.Contains(vllm, from) {
			t.Fatalf("fixture lacks %q", from)
		}
		return strings.Replace(vllm, from, to, 1)
	}
	guide := string(must(os.ReadFile("testdata/guidellm-constant-sampled.json")))
	aiperf := string(must(os.ReadFile("testdata/aiperf-chat-records.json")))
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"vLLM: a key of no version", edit(`"gpu": "H100"`, `"gpu": 8`), []string{"x.json (read as a result of vLLM bench serve): /gpu: unknown key (a number)", "vLLM v0.6 to v0.11", "newer vLLM?"}},
		{"vLLM: missing duration", edit(`"duration": 0.5874,`, ``), []string{"x.json (read as a result of vLLM bench serve): /duration: missing", "every vLLM result since v0.6"}},
		{"vLLM: a string count", edit(`"completed": 12`, `"completed": "12"`), []string{"/completed: want a number, got a string"}},
		{"vLLM: a bad rate", edit(`"request_rate": "inf"`, `"request_rate": "fast"`), []string{`/request_rate: "fast": want a number or "inf"`}},
		{"vLLM: a number that is no key", edit(`"median_ttft_ms": `, `"median_ttft_ms": 1e6, "x_median": `), []string{"/x_median: unknown key"}},
		{"vLLM: a median above the p99", regexp.MustCompile(`"p99_ttft_ms": [0-9.]+`).ReplaceAllString(vllm, `"p99_ttft_ms": 1.5`), []string{"/median_ttft_ms: 35.8105 is above the p99 (1.5 at /p99_ttft_ms)"}},
		{"vLLM: a list too short", edit(`"max_concurrency": 4`, `"max_concurrency": 4, "ttfts": [0.1], "itls": [[]], "output_lens": [1], "input_lens": [1], "errors": [""]`),
			[]string{"/ttfts: 1 entries, but num_prompts is 12"}},
		{"GuideLLM: unknown strategy", strings.Replace(guide, `"type_": "constant", "rate": 2.0`, `"type_": "sweepy", "rate": 2.0`, 1),
			[]string{`/benchmarks/0/args/strategy/type_: "sweepy"`, "synchronous, concurrent, throughput, constant and poisson"}},
		{"GuideLLM: no version", strings.Replace(guide, `"args": {`, `"argz": {`, 1), []string{"/benchmarks/0: neither args (GuideLLM v0.2) nor config (v0.3)"}},
		{"GuideLLM: empty", `{"benchmarks": []}`, []string{"no benchmark in it"}},
		{"AIPerf: unknown unit", strings.Replace(aiperf, `"unit": "ms", "avg": 33.41`, `"unit": "fortnights", "avg": 33.41`, 1),
			[]string{`/records/time_to_first_token/unit: "fortnights": want one of`}},
		{"AIPerf: no request count", strings.Replace(aiperf, `"request_count": {`, `"requests_counted": {`, 1), []string{"/records/request_count: missing"}},
		{"llm-d: empty", `{"version": "0.1", "scenario": {}, "metrics": {}}`, []string{"x.json (read as a result of llm-d benchmark report): /metrics/requests: missing"}},
		{"unknown JSON", `{"name": "x"}`, []string{"not a tollgate report: no schema_version", "tollgate reads a tollgate report", "vLLM bench serve", "GuideLLM", "AIPerf", "llm-d"}},
		{"an array", `[1, 2]`, []string{"not a tollgate report"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode("x.json", []byte(tc.body))
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, report.ErrNotReport) {
				t.Errorf("not an ErrNotReport: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestPythonFloats: vLLM's json.dump writes NaN for the mean of no values
// (every request failed); it reads as absent, never as a number.
func TestPythonFloats(t *testing.T) {
	body := []byte(`{"date": "20250611-101500", "backend": "vllm", "model_id": "m", "num_prompts": 2, "request_rate": "inf", "max_concurrency": 2,
	"duration": 1.5, "completed": 0, "total_input_tokens": 0, "total_output_tokens": 0, "request_throughput": 0.0, "output_throughput": 0.0,
	"mean_ttft_ms": NaN, "median_ttft_ms": NaN, "std_ttft_ms": NaN, "p99_ttft_ms": NaN, "note": "NaN in a string stays"}`)
	r, err := Decode("x.json", body)
	if err != nil {
		t.Fatal(err)
	}
	_, lp := only(t, r)
	if lp.TTFTMS.Count != 0 || lp.TTFTMS.Mean != nil || lp.Errors.Count != 2 {
		t.Errorf("point %+v", lp.ServingMetrics)
	}
	if r.Runs["vllm"].Target.Metadata["note"] != "NaN in a string stays" {
		t.Errorf("metadata %v", r.Runs["vllm"].Target.Metadata)
	}
}

// TestTollgateReportsReadAsBefore: a tollgate report is decoded as
// report.ReadFile decodes it, unchanged.
func TestTollgateReportsReadAsBefore(t *testing.T) {
	path := filepath.Join("testdata", "tollgate-small-load.json")
	a, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := report.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) || a.Imported != nil {
		t.Error("a tollgate report read otherwise through foreign")
	}
}

// TestAlign: an import takes the names of the other side's one run and
// load phase, samples included, and says so.
func TestAlign(t *testing.T) {
	tg, err := report.ReadFile("testdata/tollgate-small-load.json")
	if err != nil {
		t.Fatal(err)
	}
	r := read(t, "vllm-chat-detailed.json")
	if !Align(r, tg) {
		t.Fatal("not aligned")
	}
	if !slices.Equal(r.RunOrder, []string{"server"}) || r.Runs["server"].PhaseOrder[0] != "load" || r.Runs["server"].Name != "server" {
		t.Errorf("runs %v", r.RunOrder)
	}
	wantNotes(t, r, `runs["server"].phases["load"]`)
	if Align(tg, r) {
		t.Error("a tollgate report renamed")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// FuzzDecode: no input makes a reader panic; whatever it accepts is a
// sound report.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json*")
	for _, name := range files {
		if !strings.HasPrefix(filepath.Base(name), "tollgate-") {
			f.Add(must(os.ReadFile(name)))
		}
	}
	f.Add([]byte(`{"model_id": "m", "num_prompts": 1, "backend": "vllm"}`))
	f.Add([]byte(`{"benchmarks": [{"args": {"strategy": {"type_": "synchronous"}}}]}`))
	f.Add([]byte(`{"records": {"time_to_first_token": {"unit": "ms", "avg": 1}}}`))
	f.Add([]byte(`{"version": "0.2.1", "scenario": {}, "results": {}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode("f.json", data)
		if err == nil && r.Imported != nil {
			if err := sound(r); err != nil {
				t.Fatalf("accepted an unsound import: %v", err)
			}
		}
	})
}
