package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --repeat-runs N runs the whole scenario N times: the report keeps the
// last run and summarises every figure across the N, and gates read the
// summary; validate checks such gates with the same flag.
func TestRepeatRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scenario := filepath.Join(dir, "r.yaml")
	src := `name: repeat
targets:
  embedded: {kind: embedded, sim: {decode_step: 1ms}}
phases:
  decode: {prompt: {text: hello}, max_tokens: 4, repeat: 2}
gates:
  - name: every repetition sent both requests
    expr: repetitions.runs.embedded.phases.decode.requests.median == 2 && repetitions.runs.embedded.phases.decode.requests.cv == 0
  - name: three repetitions
    expr: repetitions.count == 3 && len(repetitions.runs.embedded.phases.decode.tpot_ms.p50.values) == 3
`
	if err := os.WriteFile(scenario, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	r := tollgate(t, "run", scenario, "--repeat-runs", "3", "--json-out", out)
	if r.code != ExitPass || !strings.Contains(r.stdout, "repeated 3 times") || strings.Count(r.stderr, "repetition ") != 3 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep := readJSONReport(t, out)
	reps, _ := rep["repetitions"].(map[string]any)
	if reps["count"] != 3.0 {
		t.Errorf("repetitions %v", reps)
	}
	// The last run's samples are kept, as a single run's would be.
	samples := rep["runs"].(map[string]any)["embedded"].(map[string]any)["phases"].(map[string]any)["decode"].(map[string]any)["samples"].([]any)
	if len(samples) != 2 {
		t.Errorf("%d samples, want the last repetition's 2", len(samples))
	}
	// judge reads the saved repetitions.
	if r := tollgate(t, "judge", scenario, out); r.code != ExitPass {
		t.Errorf("judge: exit %d\n%s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "validate without the flag", args: []string{"validate", scenario}, want: "unknown name repetitions (a report has repetitions only when run with --repeat-runs N"},
		{name: "run once", args: []string{"run", scenario}, want: "unknown name repetitions"},
		{name: "zero repetitions", args: []string{"run", scenario, "--repeat-runs", "0"}, want: "--repeat-runs 0: want 1 to 100"},
		{name: "too many", args: []string{"run", scenario, "--repeat-runs", "1000"}, want: "want 1 to 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tollgate(t, tc.args...)
			if r.code != ExitInvalid || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, want 2 with %q:\n%s", r.code, tc.want, r.stderr)
			}
		})
	}
	if r := tollgate(t, "validate", "--repeat-runs", "3", scenario); r.code != ExitPass {
		t.Errorf("validate --repeat-runs 3: exit %d\n%s", r.code, r.stderr)
	}
}
