package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --csv on a load run writes a row per request of every point; with
// report.samples off it is refused before anything is sent.
func TestCSVLoadRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const load = `name: csv-load
targets:
  sim: {kind: embedded, sim: {decode_step: 1ms}, metrics: false, metadata: false}
phases:
  load: {sweep: {concurrency: [1, 2]}, requests: 4, prompt_tokens: 16, max_tokens: 3}
`
	for _, tc := range []struct {
		name     string
		extra    string
		code     int
		rows     map[string]int // point → rows
		inStderr string
	}{
		{name: "samples on", code: ExitPass, rows: map[string]int{"concurrency 1": 4, "concurrency 2": 4}},
		{name: "samples off", extra: "report: {samples: false}\n", code: ExitInvalid, inStderr: "--csv: " + filepath.Join(dir, "samples off.yaml") + " has report.samples: false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scenario := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(scenario, []byte(load+tc.extra), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, tc.name+".csv")
			r := tollgate(t, "run", scenario, "-q", "--csv", out)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.inStderr) {
				t.Fatalf("exit %d, want %d with %q in stderr:\n%s", r.code, tc.code, tc.inStderr, r.stderr)
			}
			data, err := os.ReadFile(out)
			if tc.rows == nil {
				if err == nil {
					t.Error("a CSV was written although the run was refused")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
				f := strings.Split(l, ",")
				if f[0] != "request" || f[2] != "load" || f[5] != "true" {
					t.Errorf("row %q: want a successful request of phase load", l)
				}
				got[f[3]]++
			}
			for p, n := range tc.rows {
				if got[p] != n {
					t.Errorf("point %q: %d rows, want %d (all: %v)", p, got[p], n, got)
				}
			}
		})
	}
}
