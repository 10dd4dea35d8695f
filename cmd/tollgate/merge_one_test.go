package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"
)

// loadLikeExamples are the examples with a phase that sends on a schedule
// or concurrently (load, trace, sessions, agent, capacity).
var loadLikeExamples = []string{
	"agent.yaml", "capacity.yaml", "chat-sessions.yaml", "dataset.yaml", "faults.yaml",
	"load-sweep.yaml", "sharded-load.yaml", "trace-replay.yaml",
}

// A merge of one shard is that shard's own report, figure for figure: the
// run and the merge fold requests through the same code, so every number
// in every phase is equal (not close). Only what a merge adds (the
// per-shard figures, the shards list) and the warnings, which a merge
// prefixes with their shard, differ.
func TestMergeOfOneShardIsTheShard(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs every load-like example")
	}
	for _, ex := range loadLikeExamples {
		t.Run(ex, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			shard, merged := filepath.Join(dir, "shard.json"), filepath.Join(dir, "merged.json")
			r := runBin(t, perfBin, "run", "examples/"+ex, "--shard", "0/1", "--json-out", shard, "-q")
			// Eight examples at once on a busy machine may send late: the
			// run is then invalid (exit 3) but its report is written, and
			// the merge must say the same of it, so the figures still
			// compare. Any other exit 3 is a broken run.
			wantMerge := ExitPass
			if r.code == ExitNotJudged && len(invalidReasons(readJSONReport(t, shard))) > 0 {
				wantMerge = ExitNotJudged
				t.Logf("the shard is invalid (%v): the merge must be too", invalidReasons(readJSONReport(t, shard)))
			} else if r.code != ExitPass && r.code != ExitGateFailed {
				t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if m := runBin(t, perfBin, "merge", "--json-out", merged, shard); m.code != wantMerge {
				t.Fatalf("merge: exit %d, want %d\n%s\n%s", m.code, wantMerge, m.stdout, m.stderr)
			}
			want, got := numbers(readJSONReport(t, shard)["runs"]), numbers(readJSONReport(t, merged)["runs"])
			if len(want) == 0 {
				t.Fatal("the shard's report has no numbers")
			}
			var diffs []string
			for k, v := range want {
				if g, ok := got[k]; !ok {
					diffs = append(diffs, fmt.Sprintf("%s: %v in the shard, absent from the merge", k, v))
				} else if g != v {
					diffs = append(diffs, fmt.Sprintf("%s: %v in the shard, %v in the merge", k, v, g))
				}
			}
			for k, v := range got {
				if _, ok := want[k]; !ok {
					diffs = append(diffs, fmt.Sprintf("%s: %v in the merge, absent from the shard", k, v))
				}
			}
			sort.Strings(diffs)
			for i, d := range diffs {
				if i == 20 {
					t.Errorf("… and %d more", len(diffs)-20)
					break
				}
				t.Error(d)
			}
			t.Logf("%d numbers compared", len(want))
		})
	}
}

// numbers flattens every number under v by its path, leaving out what a
// merge adds (shards: the per-shard figures) and text.
func numbers(v any) map[string]float64 {
	out := map[string]float64{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "shards" || k == "warnings" {
					continue
				}
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case float64:
			out[path] = x
		}
	}
	walk("runs", v)
	return out
}

// invalidReasons are the reasons a report lists under invalid.
func invalidReasons(rep map[string]any) []string {
	var out []string
	list, _ := rep["invalid"].([]any)
	for _, f := range list {
		if m, ok := f.(map[string]any); ok {
			out = append(out, fmt.Sprint(m["reason"]))
		}
	}
	return out
}
