package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Output paths that would clobber an input or each other, or that name no
// file, are refused before anything is sent.
func TestOutputPathsRefused(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.yaml")
	copyFile(t, "../../examples/quickstart.yaml", scenario)
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(scenario, link); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.out")
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"json-out is the scenario", []string{"--json-out", scenario}, "is the scenario file"},
		{"json-out is the scenario, spelt differently", []string{"--json-out", filepath.Join(dir, ".", "x", "..", "s.yaml")}, "is the scenario file"},
		{"html is a link to the scenario", []string{"--html", link}, "is the scenario file"},
		{"two outputs share a path", []string{"--json-out", a, "--junit", a}, "--json-out and --junit: invalid output: both name"},
		{"samples-out shares a path", []string{"--csv", a, "--samples-out", filepath.Join(dir, "a.out")}, "--csv and --samples-out"},
		{"empty json-out", []string{"--json-out="}, "--json-out: invalid output: an empty path"},
		{"empty samples-out", []string{"--samples-out="}, "--samples-out: invalid output: an empty path"},
		{"html to stdout", []string{"--html", "-"}, "--html: invalid output: - (standard output) is not offered"},
		{"samples to stdout", []string{"--samples-out", "-"}, "--samples-out: invalid output: - (standard output) is not offered"},
		{"two outputs to stdout", []string{"--json-out", "-", "--csv", "-"}, "both ask for standard output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := os.ReadFile(scenario)
			if err != nil {
				t.Fatal(err)
			}
			r := tollgate(t, append([]string{"run", scenario}, tc.args...)...)
			if r.code != ExitInvalid || !strings.Contains(r.stderr, tc.stderr) || r.stdout != "" {
				t.Fatalf("exit %d, want 2 with %q\nstdout:\n%s\nstderr:\n%s", r.code, tc.stderr, r.stdout, r.stderr)
			}
			if after, _ := os.ReadFile(scenario); string(after) != string(before) {
				t.Error("the scenario file was changed")
			}
			if _, err := os.Stat(a); err == nil {
				t.Error("an output was written although nothing ran")
			}
		})
	}
	// tollgate report refuses an output over the report it reads.
	rep := filepath.Join(dir, "r.json")
	if r := tollgate(t, "run", scenario, "-q", "--json-out", rep); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r := tollgate(t, "report", rep, "--html", rep); r.code != ExitInvalid || !strings.Contains(r.stderr, "is the report") {
		t.Fatalf("report over itself: exit %d: %s", r.code, r.stderr)
	}
}

// "-" streams a format to stdout alone; the summary moves to stderr.
func TestOutputToStdout(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		valid      func(string) bool
	}{
		{"json", "--json-out", func(s string) bool { return json.Valid([]byte(s)) }},
		{"junit", "--junit", func(s string) bool { return strings.HasPrefix(s, "<?xml") }},
		{"markdown", "--markdown", func(s string) bool { return strings.HasPrefix(s, "#") }},
		{"csv", "--csv", func(s string) bool { return strings.Contains(strings.SplitN(s, "\n", 2)[0], ",") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tollgate(t, "run", "examples/quickstart.yaml", tc.flag, "-")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if !tc.valid(r.stdout) {
				t.Errorf("stdout is not %s alone:\n%s", tc.name, r.stdout)
			}
			if !strings.Contains(r.stderr, "PASS") {
				t.Errorf("the summary is not on stderr:\n%s", r.stderr)
			}
		})
	}
}
