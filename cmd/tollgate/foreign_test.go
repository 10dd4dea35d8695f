package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/foreign"
)

// smallLoad is the workload of report/foreign's fixtures of other tools'
// results (12 requests, 4 in flight, 64-token prompts, 16-token answers),
// on the embedded simulator.
const smallLoad = "cmd/tollgate/testdata/small-load.yaml"

// fixtureDir holds those fixtures, each written from its tool's format.
const fixtureDir = "report/foreign/testdata/"

// foreignFixtures are the results of other tools compared with a run of
// smallLoad, each with a definition note its comparison must show and
// whether it carries per-request values.
var foreignFixtures = []struct {
	file, note string
	samples    bool
}{
	{"vllm-chat-detailed.json", "vLLM's chat client takes TTFT at the first streamed chunk with choices", true},
	{"vllm-serve-summary.json", "tpot_ms: vLLM's TPOT is (latency − ttft) ÷ (output tokens − 1), the first token excluded", false},
	{"guidellm-concurrent.json", "tpot_ms ← GuideLLM's inter_token_latency_ms", true},
	{"aiperf-chat-records.json", "tpot_ms ← AIPerf's inter_token_latency", false},
	{"llmd-v0_1-vllm.json", "tpot_ms ← time_per_output_token: the schema's TPOT", false},
	{"llmd-v0_2_1-inference-perf.json", "itl_ms ← inter_token_latency: the harness's ITL", false},
}

// runSmallLoad runs smallLoad through the binary and returns its report.
func runSmallLoad(t *testing.T, extra ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "tollgate.json")
	if r := tollgate(t, append([]string{"run", smallLoad, "-q", "--json-out", out}, extra...)...); r.code != ExitPass {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	return out
}

// rowOf is the line of a compare table for path.
func rowOf(table, path string) string {
	for l := range strings.Lines(table) {
		if f := strings.Fields(l); len(f) > 1 && f[1] == path {
			return l
		}
	}
	return ""
}

// TestCompareOtherToolsResults: compare takes a vLLM, GuideLLM, AIPerf or llm-d
// result, by its content, beside a tollgate run of a similar workload:
// only with --baseline-any, with the tool's figures in the table and its
// definition notes under it; a summary without per-request values
// cannot tell noise, so a --fail-on is inconclusive (exit 4).
func TestCompareOtherToolsResults(t *testing.T) {
	t.Parallel()
	tg := runSmallLoad(t)
	for _, fx := range foreignFixtures {
		t.Run(fx.file, func(t *testing.T) {
			path := fixtureDir + fx.file
			if r := tollgate(t, "compare", tg, path); r.code != ExitInvalid || !strings.Contains(r.stderr, "results of two tools never share a scenario identity; pass --baseline-any") {
				t.Errorf("without --baseline-any: exit %d\n%s", r.code, r.stderr)
			}
			r := tollgate(t, "compare", tg, path, "--baseline-any")
			if r.code != ExitPass {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			for _, want := range []string{"definition notes (new): " + path + " is a ", fx.note} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			// The mapped figure is the tool's, in the row of the point
			// the run measured (the import takes its names).
			imp, err := foreign.ReadFile("../../" + path)
			if err != nil {
				t.Fatal(err)
			}
			p50 := *imp.Runs[imp.RunOrder[0]].Phases["load"].Points[0].TTFTMS.P50
			row := rowOf(r.stdout, "runs.server.phases.load.points[0].ttft_ms")
			if !strings.Contains(row, strconv.FormatFloat(p50, 'g', 6, 64)) {
				t.Errorf("ttft row lacks the tool's p50 %v:\n%s", p50, row)
			}
			if noSamples := strings.Contains(row, "no samples: noise unknown"); noSamples == fx.samples {
				t.Errorf("samples %v, but the row says: %s", fx.samples, row)
			}
			fail := tollgate(t, "compare", tg, path, "--baseline-any", "--fail-on", "points[0].ttft_ms.p50:+5000%")
			want := ExitPass
			if !fx.samples {
				want = ExitInconclusive
			}
			if fail.code != want {
				t.Errorf("--fail-on: exit %d, want %d\n%s\n%s", fail.code, want, fail.stdout, fail.stderr)
			}
			md := tollgate(t, "compare", tg, path, "--baseline-any", "--markdown", "-")
			if md.code != ExitPass || !strings.Contains(md.stdout, "### Definition notes (new)") || !strings.Contains(md.stdout, fx.note) {
				t.Errorf("--markdown: exit %d\n%s", md.code, md.stdout)
			}
		})
	}
	t.Run("one tool's results", func(t *testing.T) {
		// Two vLLM results of one benchmark (backend, prompts, load) compare
		// without --baseline-any; both sides' notes are listed.
		r := tollgate(t, "compare", fixtureDir+"vllm-chat-detailed.json", fixtureDir+"vllm-serve-summary.json")
		if r.code != ExitPass || !strings.Contains(r.stdout, "definition notes (old)") || !strings.Contains(r.stdout, "definition notes (new)") {
			t.Errorf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		r = tollgate(t, "compare", fixtureDir+"vllm-chat-detailed.json", fixtureDir+"vllm-completions-sweep.jsonl")
		if r.code != ExitInvalid || !strings.Contains(r.stderr, "backend") {
			t.Errorf("another benchmark: exit %d\n%s", r.code, r.stderr)
		}
	})
	t.Run("unknown format", func(t *testing.T) {
		odd := filepath.Join(t.TempDir(), "results.json")
		if err := os.WriteFile(odd, []byte(`{"benchmark": "mine", "p99": 3}`), 0o644); err != nil {
			t.Fatal(err)
		}
		r := tollgate(t, "compare", tg, odd)
		for _, want := range []string{odd + ": not a tollgate report: no schema_version", "tollgate reads a tollgate report", "vLLM bench serve result", "GuideLLM", "AIPerf", "llm-d benchmark report"} {
			if r.code != ExitInvalid || !strings.Contains(r.stderr, want) {
				t.Errorf("exit %d, stderr lacks %q:\n%s", r.code, want, r.stderr)
			}
		}
		bad := filepath.Join(t.TempDir(), "vllm.json")
		data, _ := os.ReadFile("../../" + fixtureDir + "vllm-serve-summary.json")
		if err := os.WriteFile(bad, []byte(strings.Replace(string(data), `"duration": 0.5874`, `"duration": "long"`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := tollgate(t, "compare", tg, bad, "--baseline-any"); r.code != ExitInvalid || !strings.Contains(r.stderr, bad+" (read as a result of vLLM bench serve): /duration: want a number, got a string") {
			t.Errorf("a bad vLLM field: exit %d\n%s", r.code, r.stderr)
		}
	})
}

// TestReportRendersOtherToolsResults: tollgate report renders another
// tool's result, with its definition notes on the page and in Markdown,
// alone and as a baseline.
func TestReportRendersOtherToolsResults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, fx := range foreignFixtures {
		page, md := filepath.Join(dir, fx.file+".html"), filepath.Join(dir, fx.file+".md")
		if r := tollgate(t, "report", fixtureDir+fx.file, "--html", page, "--markdown", md); r.code != ExitPass {
			t.Fatalf("%s: exit %d\n%s", fx.file, r.code, r.stderr)
		}
		html, _ := os.ReadFile(page)
		text, _ := os.ReadFile(md)
		for _, want := range []string{"Definition notes", "not measured by tollgate"} {
			if !strings.Contains(string(html), want) || !strings.Contains(string(text), want) {
				t.Errorf("%s: page or Markdown lacks %q", fx.file, want)
			}
		}
	}
	tg := runSmallLoad(t)
	page := filepath.Join(dir, "against.html")
	// As compare: another tool's result is never the same scenario, so a
	// baseline of one needs --baseline-any.
	if r := tollgate(t, "report", tg, "--baseline", fixtureDir+"vllm-chat-detailed.json", "--html", page); r.code != ExitInvalid || !strings.Contains(r.stderr, "--baseline-any") {
		t.Fatalf("without --baseline-any: exit %d\n%s", r.code, r.stderr)
	}
	if r := tollgate(t, "report", tg, "--baseline", fixtureDir+"vllm-chat-detailed.json", "--baseline-any", "--html", page); r.code != ExitPass {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	html, _ := os.ReadFile(page)
	if !strings.Contains(string(html), "<b>The baseline</b>") || !strings.Contains(string(html), "carrying the role and no token") {
		t.Error("the page does not give the baseline's definition notes")
	}
}

// TestJudgeOtherToolsResults: judge applies a scenario's gates to
// another tool's result, read as the scenario's one load phase; stderr
// says what cannot be checked; it never writes it as a tollgate report.
func TestJudgeOtherToolsResults(t *testing.T) {
	t.Parallel()
	for _, fx := range foreignFixtures {
		path := fixtureDir + fx.file
		r := tollgate(t, "judge", smallLoad, path)
		if r.code != ExitPass || !strings.Contains(r.stderr, "is not checked against "+smallLoad) ||
			!strings.Contains(r.stderr, `gates read it as runs["server"].phases["load"]`) || !strings.Contains(r.stdout, "definition notes:") {
			t.Errorf("%s: exit %d\n%s\n%s", fx.file, r.code, r.stdout, r.stderr)
		}
		if r := tollgate(t, "judge", smallLoad, path, "--set", "vars.ttft_p99_ms=5"); r.code != ExitGateFailed {
			t.Errorf("%s: a gate its p99 TTFT fails: exit %d\n%s", fx.file, r.code, r.stdout)
		}
	}
	out := filepath.Join(t.TempDir(), "r.json")
	if r := tollgate(t, "judge", smallLoad, fixtureDir+"vllm-chat-detailed.json", "--json-out", out); r.code != ExitInvalid ||
		!strings.Contains(r.stderr, "does not write it as a tollgate report") {
		t.Errorf("--json-out: exit %d\n%s", r.code, r.stderr)
	}
	tg := runSmallLoad(t)
	if r := tollgate(t, "judge", smallLoad, tg, "--baseline", fixtureDir+"vllm-chat-detailed.json"); r.code != ExitInvalid ||
		!strings.Contains(r.stderr, "the baseline is a vLLM bench serve result") {
		t.Errorf("a vLLM baseline without --baseline-any: exit %d\n%s", r.code, r.stderr)
	}
	if r := tollgate(t, "judge", smallLoad, tg, "--baseline", fixtureDir+"vllm-chat-detailed.json", "--baseline-any"); r.code != ExitPass {
		t.Errorf("a vLLM baseline: exit %d\n%s", r.code, r.stderr)
	}
	// A gate on the baseline reads the import under the scenario's names.
	if r := tollgate(t, "run", smallLoad, "-q", "--baseline", fixtureDir+"guidellm-concurrent.json", "--baseline-any",
		"--set", `gates=[{name: "against GuideLLM", expr: "baseline.runs.server.phases.load.points[0].ttft_ms.p50 > 0"}]`); r.code != ExitPass {
		t.Errorf("run --baseline GuideLLM: exit %d\n%s", r.code, r.stderr)
	}
}

// TestVLLMOut: --vllm-out writes a run's load points as a vLLM result,
// the same from run and from report; read back through the importer its
// figures are the run's.
func TestVLLMOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	v := filepath.Join(dir, "vllm.json")
	tg := runSmallLoad(t, "--vllm-out", v)
	v2 := filepath.Join(dir, "again.json")
	if r := tollgate(t, "report", tg, "--vllm-out", v2); r.code != ExitPass {
		t.Fatalf("report --vllm-out: exit %d\n%s", r.code, r.stderr)
	}
	a, _ := os.ReadFile(v)
	b, _ := os.ReadFile(v2)
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("run and report wrote different vLLM results:\n%s\n%s", a, b)
	}
	run, err := report.ReadFile(tg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := foreign.ReadFile(v)
	if err != nil {
		t.Fatal(err)
	}
	lp, blp := run.Runs["server"].Phases["load"].Points[0], back.Runs["vllm"].Phases["load"].Points[0]
	same := func(what string, x, y float64) {
		if d := x - y; d > 1e-9*max(x, y) || -d > 1e-9*max(x, y) {
			t.Errorf("%s: run %v, read back %v", what, x, y)
		}
	}
	same("requests", float64(lp.Requests), float64(blp.Requests))
	same("succeeded", float64(lp.Succeeded), float64(blp.Succeeded))
	same("duration_s", lp.DurationS, blp.DurationS)
	same("request_throughput_per_s", *lp.RequestThroughputPerS, *blp.RequestThroughputPerS)
	same("output_tokens_per_s", *lp.OutputTokensPerS, *blp.OutputTokensPerS)
	same("total_tokens_per_s", *lp.TotalTokensPerS, *blp.TotalTokensPerS)
	same("ttft_ms.mean", *lp.TTFTMS.Mean, *blp.TTFTMS.Mean)
	same("e2e_ms.mean", *lp.E2EMS.Mean, *blp.E2EMS.Mean)
	same("itl_ms.mean", *lp.ITLMS.Mean, *blp.ITLMS.Mean)
	same("itl_ms.p99", *lp.ITLMS.P99, *blp.ITLMS.P99)

	if r := tollgate(t, "report", tg, "--vllm-out", "-"); r.code != ExitPass || !strings.HasPrefix(r.stdout, `{"date": `) {
		t.Errorf("--vllm-out -: exit %d\n%s", r.code, r.stdout)
	}
	if r := tollgate(t, "run", "examples/quickstart.yaml", "--vllm-out", filepath.Join(dir, "q.json")); r.code != ExitInvalid ||
		!strings.Contains(r.stderr, "has no load phase") {
		t.Errorf("a scenario with no load phase: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "q.json")); err == nil {
		t.Error("a refused --vllm-out was written")
	}
}
