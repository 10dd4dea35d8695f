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
		{name: "identical runs", args: []string{oldPath, newPath, "--fail-on", "seam_latency_ms.p50:+0%"}, code: ExitPass, stdout: "deterministic (virtual time)"},
		{name: "regression", args: []string{oldPath, slowerPath, "--baseline-any", "--fail-on", "decode.seam_latency_ms.p50:+10%"}, code: ExitGateFailed,
			stdout: `! runs["relay/cached"].phases.decode.seam_latency_ms.p50: 1.50545 → 1.79545 (+19.3%`, stderr: "1 regression(s)"},
		{name: "within the limit", args: []string{oldPath, slowerPath, "--baseline-any", "--fail-on", "decode.seam_latency_ms.p50:+20%"}, code: ExitPass},
		{name: "edited scenario refused", args: []string{oldPath, slowerPath}, code: ExitInvalid, stderr: "pass --baseline-any"},
		{name: "bad fail-on", args: []string{oldPath, newPath, "--fail-on", "ttft_ms.p50:10%"}, code: ExitInvalid, stderr: "needs a sign"},
		{name: "fail-on matching nothing", args: []string{oldPath, newPath, "--fail-on", "ttft_ms.p50:+10%"}, code: ExitInvalid, stderr: "no metric with a p50"},
		{name: "unreadable", args: []string{filepath.Join(dir, "missing.json"), newPath}, code: ExitInvalid, stderr: "reading report"},
		{name: "not a report", args: []string{oldPath, notReport}, code: ExitInvalid, stderr: "not a tollgate report"},
		{name: "one argument", args: []string{oldPath}, code: ExitInvalid, stderr: "expected OLD.json and NEW.json"},
		{name: "unknown flag", args: []string{oldPath, newPath, "--nope"}, code: ExitInvalid, stderr: "unknown flag"},
		{name: "help", args: []string{"--help"}, code: ExitPass, stderr: "Usage: tollgate compare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := cmdCompare(tc.args, &out, &errb)
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
