package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A client that falls behind its schedule past the phase's bound makes the
// measurement invalid: the report says where, and the run exits 3 even
// though every gate passed; a bound the scenario raises accepts it.
func TestDispatchLagInvalidatesTheRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "lag.yaml")
	if err := os.WriteFile(file, []byte(`name: lag
phases:
  load:
    kind: load
    rate: 100
    requests: 20
    prompt_tokens: 16
    max_tokens: 2
    max_dispatch_lag: ${vars.bound}
vars: {bound: 1h}
gates:
  - name: every request answered
    expr: runs.embedded.phases.load.points[0].succeeded == 20
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, bound string
		code        int
		invalid     bool
	}{
		// 1ns: no timer wakes that early, so the p99 lag is always past it.
		{"a bound no client meets", "1ns", ExitNotJudged, true},
		{"a bound the scenario raises", "1h", ExitPass, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.bound+".json")
			res := tollgate(t, "run", file, "-q", "--var", "bound="+tc.bound, "--json-out", out)
			if res.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", res.code, tc.code, res.stdout, res.stderr)
			}
			rep := readJSONReport(t, out)
			inv, _ := rep["invalid"].([]any)
			if got := len(inv) > 0; got != tc.invalid {
				t.Fatalf("invalid %v, want %v: %v", inv, tc.invalid, rep["invalid"])
			}
			if !tc.invalid {
				return
			}
			f := inv[0].(map[string]any)
			if f["reason"] != "dispatch_lag" || f["path"] != "/runs/embedded/phases/load/points/0/dispatch_lag_ms/p99" {
				t.Errorf("finding %v", f)
			}
			if !strings.Contains(res.stderr, "max_dispatch_lag") {
				t.Errorf("stderr does not say what to change:\n%s", res.stderr)
			}
			// Compared, the invalid report is not judged either.
			cmp := tollgate(t, "compare", out, out, "--fail-on", "ttft_ms.p50:+10%")
			if cmp.code != ExitNotJudged || !strings.Contains(cmp.stderr, "dispatch_lag") {
				t.Errorf("compare of an invalid report: exit %d, want %d\n%s", cmp.code, ExitNotJudged, cmp.stderr)
			}
		})
	}
}
