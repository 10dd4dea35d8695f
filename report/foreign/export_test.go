package foreign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// numpyPercentile is numpy.percentile's default (linear) method, written
// here from numpy's documentation: the value at fractional index
// (n − 1) · p / 100 of the sorted values, between its neighbours.
func numpyPercentile(values []float64, p float64) float64 {
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	pos := p / 100 * float64(len(v)-1)
	i := int(pos)
	if i+1 >= len(v) {
		return v[len(v)-1]
	}
	return v[i] + (pos-float64(i))*(v[i+1]-v[i])
}

func exported(t *testing.T, rep *report.Report) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteVLLM(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestExportRoundTrip: a tollgate run written as a vLLM result has its
// figures by vLLM's definitions, from its samples, and read back through
// the importer the figures are the export's.
func TestExportRoundTrip(t *testing.T) {
	rep, err := report.ReadFile("testdata/tollgate-small-load.json")
	if err != nil {
		t.Fatal(err)
	}
	res := exported(t, rep)
	if len(res) != 1 {
		t.Fatalf("%d results for one load point", len(res))
	}
	v := res[0]
	ph := rep.Runs["server"].Phases["load"]
	lp := ph.Points[0]
	reqs, _, _ := report.PhaseSamples(ph, rep.Runs["server"].Target.Kind)
	if v["num_prompts"] != float64(lp.Requests) || v["completed"] != float64(lp.Succeeded) || v["duration"] != lp.DurationS ||
		v["max_concurrency"] != float64(lp.Concurrency) || v["request_rate"] != "inf" || v["backend"] != "openai-chat" {
		t.Errorf("head %v", v)
	}
	wantNear(t, "request_throughput", lp.RequestThroughputPerS, v["request_throughput"].(float64))
	wantNear(t, "output_throughput", lp.OutputTokensPerS, v["output_throughput"].(float64))
	wantNear(t, "total_token_throughput", lp.TotalTokensPerS, v["total_token_throughput"].(float64))
	var ttft, e2e, tpot []float64
	for i, s := range reqs {
		wantNear(t, fmt.Sprintf("ttfts[%d] × 1000", i), s.TTFTMS, v["ttfts"].([]any)[i].(float64)*1000)
		if v["output_lens"].([]any)[i] != float64(*s.CompletionTokens) || v["input_lens"].([]any)[i] != float64(*s.PromptTokens) {
			t.Errorf("request %d: lens", i)
		}
		ttft = append(ttft, *s.TTFTMS)
		e2e = append(e2e, s.E2EMS)
		tpot = append(tpot, (s.E2EMS-*s.TTFTMS)/float64(*s.CompletionTokens-1)) // vLLM's TPOT
	}
	for _, m := range []struct {
		name string
		vals []float64
	}{{"ttft", ttft}, {"e2el", e2e}, {"tpot", tpot}} {
		if got := v["mean_"+m.name+"_ms"].(float64); !near(got, mean(m.vals)) {
			t.Errorf("mean_%s_ms %v, want %v", m.name, got, mean(m.vals))
		}
		for _, p := range []float64{50, 90, 95, 99} {
			k := fmt.Sprintf("p%g_%s_ms", p, m.name)
			if got := v[k].(float64); !near(got, numpyPercentile(m.vals, p)) {
				t.Errorf("%s %v, want numpy's %v", k, got, numpyPercentile(m.vals, p))
			}
		}
	}
	wantNear(t, "mean_itl_ms", lp.ITLMS.Mean, v["mean_itl_ms"].(float64))
	wantNear(t, "p99_itl_ms", lp.ITLMS.P99, v["p99_itl_ms"].(float64))
	for _, k := range []string{"itls", "generated_texts", "std_itl_ms"} {
		if _, ok := v[k]; ok {
			t.Errorf("%s written: a tollgate sample keeps no gaps or text", k)
		}
	}
	if !strings.Contains(v["tollgate_definitions"].(string), "TPOT = (e2e − ttft) ÷ (output tokens − 1)") || v["tollgate_run"] != "server" {
		t.Errorf("metadata %v %v", v["tollgate_definitions"], v["tollgate_run"])
	}

	// Read back: the export's figures, number for number.
	var buf bytes.Buffer
	if err := WriteVLLM(&buf, rep); err != nil {
		t.Fatal(err)
	}
	back, err := Decode("v.json", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	_, blp := only(t, back)
	if blp.Requests != lp.Requests || blp.Succeeded != lp.Succeeded || blp.DurationS != lp.DurationS || blp.Concurrency != lp.Concurrency {
		t.Errorf("read back %+v", blp)
	}
	wantNear(t, "request_throughput_per_s", blp.RequestThroughputPerS, *lp.RequestThroughputPerS)
	wantNear(t, "output_tokens_per_s", blp.OutputTokensPerS, *lp.OutputTokensPerS)
	wantNear(t, "total_tokens_per_s", blp.TotalTokensPerS, *lp.TotalTokensPerS)
	for _, m := range []struct {
		name string
		st   report.Stat
	}{{"ttft", blp.TTFTMS}, {"tpot", blp.TPOTMS}, {"e2el", blp.E2EMS}, {"itl", blp.ITLMS}} {
		wantNear(t, m.name+" mean", m.st.Mean, v["mean_"+m.name+"_ms"].(float64))
		wantNear(t, m.name+" p50", m.st.P50, v["median_"+m.name+"_ms"].(float64))
		for _, p := range []string{"p90", "p95", "p99"} {
			wantNear(t, m.name+" "+p, m.st.Field(p), v[p+"_"+m.name+"_ms"].(float64))
		}
	}
	wantNear(t, "ttft mean against the run's", blp.TTFTMS.Mean, *lp.TTFTMS.Mean)
	wantNear(t, "e2e mean against the run's", blp.E2EMS.Mean, *lp.E2EMS.Mean)
	wantNotes(t, back, "a tollgate export keeps no itls")
	if back.Runs["vllm"].Target.Metadata["tollgate_scenario"] != "small-load" {
		t.Errorf("metadata %v", back.Runs["vllm"].Target.Metadata)
	}
}

// TestVLLMToTollgateToVLLM: a vLLM sweep read and written again has vLLM's
// own summary keys, but ITL's percentiles (tollgate keeps the gaps'
// distribution, nearest rank) and std (none).
func TestVLLMToTollgateToVLLM(t *testing.T) {
	lines := fixtureLines(t, "vllm-completions-sweep.jsonl")
	res := exported(t, read(t, "vllm-completions-sweep.jsonl"))
	if len(res) != len(lines) {
		t.Fatalf("%d results for %d", len(res), len(lines))
	}
	for i, l := range lines {
		for k, want := range l {
			got, ok := res[i][k]
			switch {
			case k == "date", k == "tokenizer_id", k == "itls", k == "generated_texts", k == "burstiness", k == "request_goodput:",
				strings.HasSuffix(k, "_itl_ms") && k != "mean_itl_ms":
				continue // vLLM's own, not carried (see WriteVLLM)
			case !ok:
				t.Errorf("line %d: %s not written", i+1, k)
			case strings.HasSuffix(k, "_ms") || strings.HasSuffix(k, "throughput"):
				if !near(got.(float64), want.(float64)) {
					t.Errorf("line %d: %s %v, want %v", i+1, k, got, want)
				}
			case k == "ttfts":
				for j, x := range want.([]any) {
					if g := got.([]any)[j].(float64); !near(g, x.(float64)) {
						t.Errorf("line %d: ttfts[%d] %v, want %v", i+1, j, g, x)
					}
				}
			case k == "errors" || k == "input_lens" || k == "output_lens":
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("line %d: %s %v, want %v", i+1, k, got, want)
				}
			case fmt.Sprint(got) != fmt.Sprint(want):
				t.Errorf("line %d: %s %v, want %v", i+1, k, got, want)
			}
		}
	}
}

// TestExportWithoutSamples: a report that kept no samples is written from
// its statistics, and says so.
func TestExportWithoutSamples(t *testing.T) {
	r := read(t, "vllm-serve-summary.json")
	v := exported(t, r)[0]
	if _, ok := v["ttfts"]; ok {
		t.Error("per-request lists without samples")
	}
	if !strings.Contains(v["tollgate_definitions"].(string), "the report kept no samples") {
		t.Errorf("definitions %q", v["tollgate_definitions"])
	}
	_, lp := only(t, r)
	if v["mean_ttft_ms"] != *lp.TTFTMS.Mean || v["p99_ttft_ms"] != *lp.TTFTMS.P99 {
		t.Errorf("ttft %v %v", v["mean_ttft_ms"], v["p99_ttft_ms"])
	}
	if v["total_output_tokens"] != math.Round(*lp.CompletionTokens.Mean*float64(lp.CompletionTokens.Count)) {
		t.Errorf("total_output_tokens %v", v["total_output_tokens"])
	}
}

func TestExportNeedsALoadPoint(t *testing.T) {
	rep, err := report.ReadFile("testdata/tollgate-small-load.json")
	if err != nil {
		t.Fatal(err)
	}
	rep.Runs["server"].Phases["load"].Points = nil
	err = WriteVLLM(&bytes.Buffer{}, rep)
	if !errors.Is(err, ErrNoLoadPoint) {
		t.Fatalf("%v", err)
	}
}
