package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The example's "clean shutdown" gate is only worth having if it can fail:
// a seam that leaks a connection must fail it, through the real run, report
// and gate evaluation, and fail nothing else.
func TestLeakedConnectionFailsCleanShutdown(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "report.json")
	r := tollgate(t, "run", example, "--set", "targets.route.faults={leak_connections: 1}", "--json-out", out)
	if r.code != ExitGateFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, ExitGateFailed, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "FAIL  clean shutdown") {
		t.Errorf("stdout does not name the failed gate:\n%s", r.stdout)
	}
	rep := readJSONReport(t, out)
	for _, g := range rep["gates"].([]any) {
		g := g.(map[string]any)
		want := "pass"
		if g["name"] == "clean shutdown" {
			want = "fail"
		}
		if g["status"] != want {
			t.Errorf("gate %q: %v, want %s", g["name"], g["status"], want)
		}
	}
	for name, run := range rep["runs"].(map[string]any) {
		c := run.(map[string]any)["cleanup"].(map[string]any)
		if c["open_connections"] != 1.0 || c["session_closed"] != true {
			t.Errorf("%s: cleanup %v, want one open connection in a closed session", name, c)
		}
	}
}
