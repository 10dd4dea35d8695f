package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A gate written with no_regression is judged as tollgate compare judges
// --fail-on, through run and judge: a slower simulator fails it given
// enough samples, an unchanged one passes, and too few samples are
// inconclusive (exit 4), never a pass unless accepted.
//
// The regression the gate must find is 3× (muchSlowerSim), not 1.5×: on a
// loaded machine the client's own delay adds to every sample of both runs
// and shrinks a 1.5× change to 1.1× (seen beside a busy build, p=0.0038
// against a Holm bound of 0.0014: inconclusive), while 3× stays beyond
// noise. Too few samples is inconclusive whatever the load.
func TestNoRegressionGate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const scenario = "bench/compare-noise/scenario.yaml"
	gate := []string{"--set", `gates=[{name: ttft, expr: 'no_regression("ttft_ms.p50:+10%")'}]`}
	path := func(name string) string { return filepath.Join(dir, name) }
	reps := func(n string) []string { return []string{"--var", "repetitions=" + n} }
	// The four saved runs side by side (they were 41 s one after another):
	// each is its own process and embedded simulator, and what is judged
	// below is each pair's ratio.
	if !t.Run("saved runs", func(t *testing.T) {
		for name, run := range map[string][]string{
			"old2":   append([]string{"run", scenario, "-q", "--no-gate", "--json-out", path("old2.json")}, reps("2")...),
			"slow2":  append(append([]string{"run", scenario, "-q", "--no-gate", "--json-out", path("slow2.json")}, reps("2")...), slowerSim...),
			"old10":  append([]string{"run", scenario, "-q", "--no-gate", "--json-out", path("old10.json")}, reps("10")...),
			"slow10": append(append([]string{"run", scenario, "-q", "--no-gate", "--json-out", path("slow10.json")}, reps("10")...), muchSlowerSim...),
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if r := tollgate(t, run...); r.code != ExitPass {
					t.Fatalf("%v: exit %d: %s", run, r.code, r.stderr)
				}
			})
		}
	}) {
		t.FailNow()
	}
	judge := func(saved, base, n string, extra ...string) []string {
		args := append([]string{"judge", scenario, path(saved), "--baseline", path(base), "--baseline-any"}, reps(n)...)
		switch saved {
		case "slow2.json":
			args = append(args, slowerSim...)
		case "slow10.json":
			args = append(args, muchSlowerSim...)
		}
		return append(append(args, gate...), extra...)
	}
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{name: "too few samples: inconclusive", args: judge("slow2.json", "old2.json", "2"), code: ExitInconclusive,
			stdout: "INCONCLUSIVE ttft", stderr: `inconclusive (exit 4): gate "ttft" could not tell`},
		{name: "says what would decide it", args: judge("slow2.json", "old2.json", "2"), code: ExitInconclusive,
			stdout: "samples per slice would decide it"},
		{name: "inconclusive accepted", args: judge("slow2.json", "old2.json", "2", "--accept-inconclusive"), code: ExitPass,
			stdout: "INCONCLUSIVE ttft"},
		{name: "enough samples: a regression", args: judge("slow10.json", "old10.json", "10"), code: ExitGateFailed,
			stdout: "FAIL  ttft", stderr: ""},
		{name: "unchanged: a pass", args: judge("old10.json", "old10.json", "10"), code: ExitPass, stdout: "PASS  ttft"},
		{name: "no baseline: skipped", args: append(append([]string{"judge", scenario, path("old10.json")}, reps("10")...), gate...),
			code: ExitPass, stdout: "SKIP"},
		{name: "a 0% threshold is refused at load", code: ExitInvalid, stderr: "0%",
			args: append(append([]string{"judge", scenario, path("old10.json")}, reps("10")...),
				"--set", `gates=[{name: ttft, expr: 'no_regression("ttft_ms.p50:+0%")'}]`)},
		{name: "run, too few samples: inconclusive", code: ExitInconclusive, stderr: `gate "ttft" could not tell`,
			args: append(append(append([]string{"run", scenario, "-q", "--baseline", path("old2.json"), "--baseline-any"}, reps("2")...), slowerSim...), gate...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each reads the saved runs only
			r := tollgate(t, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, r.stdout)
			}
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, r.stderr)
			}
		})
	}
}
