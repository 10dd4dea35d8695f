package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// compareReports writes the route-session report twice (the second with the
// relay slower) and returns their paths; a real run, through the binary.
func compareReports(t *testing.T) (oldPath, newPath, slowerPath string) {
	t.Helper()
	dir := t.TempDir()
	oldPath, newPath, slowerPath = filepath.Join(dir, "old.json"), filepath.Join(dir, "new.json"), filepath.Join(dir, "slower.json")
	for _, run := range [][]string{
		{"run", example, "-q", "--json-out", oldPath},
		{"run", example, "-q", "--json-out", newPath},
		{"run", example, "-q", "--json-out", slowerPath, "--set", "targets.route.costs.transport_ms.relay=0.9"},
	} {
		if r := tollgate(t, run...); r.code != ExitPass {
			t.Fatalf("%v: exit %d: %s", run, r.code, r.stderr)
		}
	}
	return oldPath, newPath, slowerPath
}

func TestCompareExitCodes(t *testing.T) {
	t.Parallel()
	oldPath, newPath, slowerPath := compareReports(t)
	dir := t.TempDir()
	notReport := filepath.Join(dir, "x.json")
	if err := os.WriteFile(notReport, []byte(`{"name": "not a report"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{name: "identical runs", args: []string{oldPath, newPath, "--fail-on", "seam_latency_ms.p50:+0.1%"}, code: ExitPass, stdout: "deterministic (virtual time)"},
		{name: "regression", args: []string{oldPath, slowerPath, "--baseline-any", "--fail-on", "decode.seam_latency_ms.p50:+10%"}, code: ExitGateFailed,
			stdout: `! runs["relay/cached"].phases.decode.seam_latency_ms.p50: 1.50545 → 1.79545 (+19.3%`, stderr: "1 regression(s)"},
		{name: "within the limit", args: []string{oldPath, slowerPath, "--baseline-any", "--fail-on", "decode.seam_latency_ms.p50:+20%"}, code: ExitPass},
		{name: "edited scenario refused", args: []string{oldPath, slowerPath}, code: ExitInvalid, stderr: "pass --baseline-any"},
		{name: "bad fail-on", args: []string{oldPath, newPath, "--fail-on", "ttft_ms.p50:10%"}, code: ExitInvalid, stderr: "needs a sign"},
		{name: "a limit of 0%", args: []string{oldPath, newPath, "--fail-on", "seam_latency_ms.p50:+0%"}, code: ExitInvalid,
			stderr: "a limit of 0% is breached by any noise; give the smallest change that matters, e.g. +1% (+0.1% for exact seam metrics)"},
		{name: "confidence of 1", args: []string{oldPath, newPath, "--confidence", "1"}, code: ExitInvalid, stderr: "--confidence 1: want a level in (0, 1), e.g. 0.95"},
		{name: "confidence of 0", args: []string{oldPath, newPath, "--confidence", "0"}, code: ExitInvalid, stderr: "--confidence 0: want a level in (0, 1)"},
		{name: "confidence in percent", args: []string{oldPath, newPath, "--confidence", "95"}, code: ExitInvalid, stderr: "--confidence 95"},
		{name: "fail-on matching nothing", args: []string{oldPath, newPath, "--fail-on", "ttft_ms.p50:+10%"}, code: ExitInvalid, stderr: `no metric is named "ttft_ms"`},
		{name: "fail-on misspelt", args: []string{oldPath, newPath, "--fail-on", "seam_latncy_ms.p50:+10%"}, code: ExitInvalid, stderr: `(did you mean "seam_latency_ms"?)`},
		{name: "unreadable", args: []string{filepath.Join(dir, "missing.json"), newPath}, code: ExitInvalid, stderr: "reading report"},
		{name: "not a report", args: []string{oldPath, notReport}, code: ExitInvalid, stderr: "not a tollgate report"},
		{name: "one argument", args: []string{oldPath}, code: ExitInvalid, stderr: "expected OLD.json and NEW.json"},
		{name: "alpha out of range", args: []string{oldPath, newPath, "--alpha", "0"}, code: ExitInvalid, stderr: "--alpha 0: want a probability in (0, 0.5]"},
		{name: "alpha above one half", args: []string{oldPath, newPath, "--alpha", "0.9"}, code: ExitInvalid, stderr: "--alpha 0.9"},
		{name: "unknown flag", args: []string{oldPath, newPath, "--nope"}, code: ExitInvalid, stderr: "unknown flag"},
		{name: "help", args: []string{"--help"}, code: ExitPass, stderr: "Usage: tollgate compare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := exit(&errb, "tollgate compare", cmdCompare(tc.args, &out, &errb))
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, out.String())
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errb.String())
			}
		})
	}
}

// slowerSim makes bench/compare-noise's embedded simulator 1.5× slower.
var slowerSim = []string{"--set", "targets.embedded.sim.ttft_base=7.5ms", "--set", "targets.embedded.sim.prefill_tokens_per_s=33333.333",
	"--set", "targets.embedded.sim.decode_step=15ms", "--set", "targets.embedded.sim.decode_step_per_seq=75us"}

// muchSlowerSim makes it 3× slower: a change a gate must find even when a
// loaded machine adds its own delay to both sides.
var muchSlowerSim = []string{"--set", "targets.embedded.sim.ttft_base=15ms", "--set", "targets.embedded.sim.prefill_tokens_per_s=16666.667",
	"--set", "targets.embedded.sim.decode_step=30ms", "--set", "targets.embedded.sim.decode_step_per_seq=150us"}

// Two repetitions per slice cannot tell a 1.5× slower simulator from
// noise: listed as such, with the samples that would tell, and inconclusive
// (exit 4) unless accepted (--accept-inconclusive) or failed on
// (--fail-on-unknown).
func TestCompareCannotTell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	oldPath, slowPath := filepath.Join(dir, "old.json"), filepath.Join(dir, "slow.json")
	const scenario = "bench/compare-noise/scenario.yaml"
	for _, run := range [][]string{
		{"run", scenario, "-q", "--no-gate", "--var", "repetitions=2", "--json-out", oldPath},
		append([]string{"run", scenario, "-q", "--no-gate", "--var", "repetitions=2", "--json-out", slowPath}, slowerSim...),
	} {
		if r := tollgate(t, run...); r.code != ExitPass {
			t.Fatalf("%v: exit %d: %s", run, r.code, r.stderr)
		}
	}
	malformed := filepath.Join(dir, "malformed.json")
	if err := os.WriteFile(malformed, []byte(`{"schema_version": 1, "runs": `), 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "compare.md")
	recipe := []string{"compare", oldPath, slowPath, "--baseline-any", "--fail-on", "ttft_ms.p50:+10%"}
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{name: "cannot tell: inconclusive", args: recipe, code: ExitInconclusive,
			stdout: "), inconclusive; --fail-on-unknown fails them", stderr: "--fail-on statistic(s) could not be told from noise (exit 4)"},
		{name: "says how many samples would tell", args: recipe, code: ExitInconclusive,
			stdout: "at least 5 per slice in each report (repeat: 5)"},
		{name: "the verdict per slice", args: recipe, code: ExitInconclusive,
			stdout: "inconclusive  runs.embedded.phases.prefill.by_prompt_tokens[256].ttft_ms.p50"},
		{name: "inconclusive accepted", args: append(recipe, "--accept-inconclusive"), code: ExitPass, stdout: "verdict: inconclusive"},
		{name: "pooled phases are not compared", args: recipe, code: ExitInconclusive,
			stdout: "compared per slice only (phase-level distributions pool different workloads): embedded/prefill (3 workloads)"},
		{name: "--fail-on-unknown fails", args: append(recipe, "--fail-on-unknown"), code: ExitGateFailed,
			stdout: "), failed: --fail-on-unknown", stderr: "regression(s) beyond --fail-on"},
		// The text table still goes to stdout: the per-slice verdict line,
		// which every slice has whichever way its two runs moved (a "? "
		// line of the over-the-threshold list needs 256's TTFT to have
		// risen over 10 %, which a loaded machine can turn into a fall).
		{name: "--markdown", args: append(recipe, "--markdown", md), code: ExitInconclusive, stdout: "inconclusive  runs.embedded.phases.prefill.by_prompt_tokens[256].ttft_ms.p50"},
		{name: "misspelt metric: did you mean", args: []string{"compare", oldPath, slowPath, "--baseline-any", "--fail-on", "ttft_msx.p50:+10%"}, code: ExitInvalid,
			stderr: `no metric is named "ttft_msx" (did you mean "ttft_ms"?)`},
		{name: "misspelt phase: did you mean", args: []string{"compare", oldPath, slowPath, "--baseline-any", "--fail-on", "prefil.ttft_ms.p50:+10%"}, code: ExitInvalid,
			stderr: `no run, phase or slice is named "prefil" (did you mean "prefill"?)`},
		{name: "malformed baseline names the file", args: []string{"compare", malformed, slowPath}, code: ExitInvalid, stderr: malformed},
		{name: "malformed new report names the file", args: []string{"compare", oldPath, malformed}, code: ExitInvalid, stderr: malformed},
		{name: "--markdown - replaces the table", args: append(recipe, "--markdown", "-"), code: ExitInconclusive,
			stdout: "## tollgate compare: compare-noise — inconclusive"},
		{name: "--markdown over an input refused", args: append(recipe, "--markdown", oldPath), code: ExitInvalid, stderr: "would be overwritten"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tollgate(t, tc.args...)
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
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "| embedded | prefill 256 | ttft_ms |") || !strings.Contains(string(b), "cannot tell") {
		t.Errorf("Markdown lacks the per-slice cannot-tell row:\n%s", b)
	}
}
