package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// regressionGate reads baseline: on the first night there is none.
const regressionGate = `gates=[{name: no slower than the baseline, expr: "all(values(runs), .phases.decode.seam_latency_ms.p50 <= 1.1 * baseline.runs[.name].phases.decode.seam_latency_ms.p50)"}, {name: one connection when cached, expr: "runs[\"direct/cached\"].connections.attempts == 1"}]`

// The first nightly run has no baseline: the gate that reads one is
// reported skipped in every output, the others are judged, and the exit
// code is theirs. --require-baseline makes a missing baseline exit 2.
func TestFirstNightWithoutBaseline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	outputs := []string{"--json-out", out("r.json"), "--junit", out("r.xml"), "--markdown", out("r.md"), "--html", out("r.html")}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{name: "no --baseline", code: ExitPass},
		{name: "a --baseline not there yet", args: []string{"--baseline", out("main.json")}, code: ExitPass,
			stderr: "no such file; gates that read baseline are skipped (--require-baseline makes this an error)"},
		{name: "a failing gate still fails", args: []string{"--set", `gates.1.expr=runs["direct/cached"].connections.attempts == 2`}, code: ExitGateFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", example, "--set", regressionGate}, tc.args...)
			r := tollgate(t, append(args, outputs...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "2 gates (1 skipped: no baseline)") ||
				!strings.Contains(r.stdout, "SKIP  no slower than the baseline\n        skipped (no baseline)") {
				t.Errorf("summary:\n%s", r.stdout)
			}
			rep := readJSONReport(t, out("r.json")) // validates against the report schema
			g := rep["gates"].([]any)[0].(map[string]any)
			if g["status"] != "skipped" || !strings.HasPrefix(g["message"].(string), "skipped (no baseline)") {
				t.Errorf("JSON gate verdict %v", g)
			}
			for file, want := range map[string]string{
				"r.xml":  `<skipped message="skipped (no baseline)`,
				"r.md":   "| SKIPPED | no slower than the baseline | skipped (no baseline)",
				"r.html": "skipped (no baseline)",
			} {
				b, err := os.ReadFile(out(file))
				if err != nil || !strings.Contains(string(b), want) {
					t.Errorf("%s: %v; want it to contain %q", file, err, want)
				}
			}
		})
	}
	for _, tc := range []struct {
		name, stderr string
		args         []string
	}{
		{name: "required, none given", args: []string{"--require-baseline"}, stderr: "--require-baseline: no baseline: give --baseline OLD.json"},
		{name: "required, not there yet", args: []string{"--require-baseline", "--baseline", out("main.json")}, stderr: "main.json: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tollgate(t, append([]string{"run", example, "--set", regressionGate, "--json-out", out("req.json")}, tc.args...)...)
			if r.code != ExitInvalid || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
			}
			if _, err := os.Stat(out("req.json")); err == nil {
				t.Error("a report was written although nothing ran")
			}
		})
	}
}

// A gate that reads baseline is checked when the scenario loads, with or
// without a baseline: against the report's shape, which a baseline shares.
func TestBaselineGatesAreCheckedWithoutBaseline(t *testing.T) {
	t.Parallel()
	typo := `gates=[{name: typo, expr: "runs[\"direct/cached\"].phases.decode.seam_latency_ms.p50 <= baseline.runs[\"direct/cached\"].phases.decode.seam_latency_ms.p9"}]`
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{name: "validate accepts a baseline gate", args: []string{"validate", example, "--set", regressionGate}, code: ExitPass, stdout: "2 gates"},
		{name: "validate finds a typo behind baseline", args: []string{"validate", example, "--set", typo}, code: ExitInvalid,
			stderr: `baseline.runs["direct/cached"].phases.decode.seam_latency_ms has no "p9" (did you mean "p90"?)`},
		{name: "run finds it before sending", args: []string{"run", example, "--set", typo}, code: ExitInvalid, stderr: `has no "p9"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tollgate(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
		})
	}
}

// tollgate judge re-evaluates the gates of a scenario, as they are now, on
// a report saved earlier, and exits as run would have.
func TestJudge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	saved := filepath.Join(dir, "saved.json")
	if r := tollgate(t, "run", example, "-q", "--json-out", saved); r.code != 0 {
		t.Fatal(r.stderr)
	}
	write := func(name, content string) string { return writeIn(t, dir, name, content) }
	// Reports edited as a run that failed, or was interrupted, would write them.
	edit := func(name string, change func(m map[string]any)) string {
		return editReport(t, saved, filepath.Join(dir, name), change)
	}
	failedRun := edit("failed-run.json", func(m map[string]any) {
		run := m["runs"].(map[string]any)["relay/stateless"].(map[string]any)
		run["status"], run["error"] = "error", "the seam went away"
	})
	interrupted := edit("interrupted.json", func(m map[string]any) { m["incomplete"], m["status"] = true, "incomplete" })
	// Reports edited by hand: a p50 above its max, a field of the wrong kind.
	p50AboveMax := edit("p50-above-max.json", func(m map[string]any) {
		st := m["runs"].(map[string]any)["direct/cached"].(map[string]any)["phases"].(map[string]any)["decode"].(map[string]any)["seam_latency_ms"].(map[string]any)
		st["p50"] = st["max"].(float64) + 1
	})
	schemaInvalid := edit("schema-invalid.json", func(m map[string]any) { m["status"] = "great" })
	notJSON := write("truncated.json", "{\n  \"schema_version\": 1,\n  \"tool\": {\"name\": \"tollgate\"},\n  \"runs\": {\n")
	// The same scenario with a profile: profiles change what they set, here
	// a threshold, so the saved report is still its own.
	src, err := os.ReadFile("../../" + example)
	if err != nil {
		t.Fatal(err)
	}
	withProfile := write("profiled.yaml", string(src)+"\nprofiles:\n  strict: {vars: {max_cached_p50_latency_ratio: 0.5}}\n")
	route := "examples/route-session.yaml"

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{name: "passes as the run did", args: []string{route, saved}, code: ExitPass, stdout: "route-session — 4 runs, 9 gates: PASS"},
		{name: "a tighter threshold by --set fails", args: []string{route, saved, "--set", "vars.max_cached_p50_latency_ratio=0.5"}, code: ExitGateFailed,
			stdout: "FAIL  cached decode p50 latency beats stateless\n        1.03545 <= 0.917725"},
		{name: "a tighter threshold by --var fails", args: []string{route, saved, "--var", "max_cached_p50_latency_ratio=0.5"}, code: ExitGateFailed},
		{name: "a tighter threshold by --profile fails", args: []string{withProfile, saved, "--profile", "strict"}, code: ExitGateFailed},
		{name: "a new gate is judged", args: []string{route, saved, "--set", `gates=[{name: two attempts, expr: "runs[\"direct/cached\"].connections.attempts == 2"}]`}, code: ExitGateFailed,
			stdout: "FAIL  two attempts"},
		{name: "a gate that errors", args: []string{route, saved, "--set", `gates.0.expr=ratio(1, runs["direct/cached"].phases.decode.queue_wait_ms.p50) > 0`}, code: ExitNotJudged,
			stdout: "the denominator is zero"},
		{name: "a baseline gate without a baseline is skipped", args: []string{route, saved, "--set", regressionGate}, code: ExitPass, stdout: "SKIP  no slower than the baseline"},
		{name: "a baseline gate with a baseline is judged", args: []string{route, saved, "--set", regressionGate, "--baseline", saved}, code: ExitPass,
			stdout: "PASS  no slower than the baseline"},
		{name: "a baseline required", args: []string{route, saved, "--set", regressionGate, "--require-baseline"}, code: ExitInvalid, stderr: "--require-baseline: no baseline"},
		{name: "a report of another scenario", args: []string{route, saved, "--set", "targets.route.activation_bytes=8192", "--set", "phases.decode.tokens=2"}, code: ExitInvalid,
			stderr: "saved.json was not measured by examples/route-session.yaml: its scenario's identity differs in:\n  phases.decode.tokens (only in the scenario)\n  targets.route.activation_bytes\n"},
		{name: "a report of another example", args: []string{"examples/quickstart.yaml", saved}, code: ExitInvalid, stderr: `name (the report "route-session", the scenario "quickstart")`},
		{name: "a report that is not JSON", args: []string{route, notJSON}, code: ExitInvalid, stderr: "truncated.json:4:12: not a tollgate report: unexpected end of JSON input"},
		{name: "a baseline that is not JSON", args: []string{route, saved, "--baseline", notJSON}, code: ExitInvalid, stderr: "--baseline: " + notJSON + ":4:12: not a tollgate report"},
		{name: "a report whose p50 is above its max", args: []string{route, p50AboveMax}, code: ExitInvalid,
			stderr: "p50-above-max.json: /runs/direct~1cached/phases/decode/seam_latency_ms: p50 ("},
		{name: "a report that fails the schema", args: []string{route, schemaInvalid}, code: ExitInvalid, stderr: "schema-invalid.json: /status: value must be one of"},
		{name: "a baseline whose p50 is above its max", args: []string{route, saved, "--baseline", p50AboveMax}, code: ExitInvalid, stderr: "--baseline: " + p50AboveMax + ": /runs/direct~1cached"},
		{name: "a report that is missing", args: []string{route, filepath.Join(dir, "nope.json")}, code: ExitInvalid, stderr: "nope.json: no such file"},
		{name: "a run that did not complete", args: []string{route, failedRun}, code: ExitNotJudged, stderr: "run relay/stateless did not complete: the seam went away"},
		{name: "an interrupted run", args: []string{route, interrupted}, code: ExitNotJudged, stderr: "the report is incomplete"},
		{name: "the report as an output", args: []string{route, saved, "--json-out", saved}, code: ExitInvalid, stderr: "it is the report and would be overwritten"},
		{name: "one argument", args: []string{route}, code: ExitInvalid, stderr: "expected SCENARIO and REPORT.json, got 1 arguments"},
		{name: "a bad scenario", args: []string{"scenarios/testdata/bad/syntax.yaml", saved}, code: ExitInvalid, stderr: "syntax.yaml:4:10: YAML syntax error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each reads the saved reports; none writes over them
			r := tollgate(t, append([]string{"judge"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, r.stdout)
			}
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, r.stderr)
			}
		})
	}

	t.Run("compare and report check a saved report too", func(t *testing.T) {
		for _, args := range [][]string{
			{"compare", saved, p50AboveMax},
			{"compare", schemaInvalid, saved},
			{"report", p50AboveMax, "--markdown", filepath.Join(dir, "out.md")},
		} {
			r := tollgate(t, args...)
			if r.code != ExitInvalid || !strings.Contains(r.stderr, "/runs/direct~1cached/phases/decode/seam_latency_ms: p50") && !strings.Contains(r.stderr, "/status: ") {
				t.Errorf("%v: exit %d (want 2)\n%s", args, r.code, r.stderr)
			}
		}
	})

	t.Run("help", func(t *testing.T) {
		r := tollgate(t, "help", "judge")
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: tollgate judge SCENARIO REPORT.json") || !strings.Contains(r.stdout, "--require-baseline") {
			t.Errorf("exit %d\n%s", r.code, r.stdout)
		}
	})

	t.Run("writes the judged report", func(t *testing.T) {
		out := filepath.Join(dir, "judged.json")
		r := tollgate(t, "judge", route, saved, "-q", "--json-out", out, "--set", "vars.max_cached_p50_latency_ratio=0.5")
		if r.code != ExitGateFailed {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		rep := readJSONReport(t, out)
		vars := rep["scenario"].(map[string]any)["vars"].(map[string]any)
		if rep["status"] != "fail" || vars["max_cached_p50_latency_ratio"] != 0.5 {
			t.Errorf("status %v, vars %v", rep["status"], vars)
		}
		if g := rep["gates"].([]any)[0].(map[string]any); g["status"] != "fail" {
			t.Errorf("gate %v", g)
		}
	})
}
