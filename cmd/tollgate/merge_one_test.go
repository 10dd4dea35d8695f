package main

import (
	"fmt"
	"path/filepath"
	"testing"
)

// loadLikeExamples are the examples with a phase that sends on a schedule
// or concurrently (load, trace, sessions, agent, capacity).
var loadLikeExamples = []string{
	"agent.yaml", "capacity.yaml", "chat-sessions.yaml", "dataset.yaml", "faults.yaml",
	"load-sweep.yaml", "sharded-load.yaml", "trace-replay.yaml",
}

// mergeOneArgs shorten the longest of them: a merge's figures equal the
// shard's at any length (capacity took 46 s here, its search; load-sweep
// 20 s, 8 s a point).
var mergeOneArgs = map[string][]string{
	"capacity.yaml":   shortCapacity("capacity"),
	"load-sweep.yaml": {"--set", "phases.load.duration=2s"},
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
			r := runBin(t, perfBin, append([]string{"run", "examples/" + ex, "--shard", "0/1", "--json-out", shard, "-q"}, mergeOneArgs[ex]...)...)
			// Eight examples at once on a busy machine may send late: the
			// run is then invalid (exit 3) but its report is written, and
			// the merge must say the same of it, so the figures still
			// compare. Any other exit 3 is a broken run.
			wantMerge := ExitPass
			if r.code == ExitNotJudged && onlyLate(readJSONReport(t, shard)) {
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
			equalNumbers(t, want, got, "the shard", "the merge")
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

// onlyLate: the report is invalid for no reason but lateness a busy
// machine causes: the client sent late (dispatch_lag) or a shard began
// late (shard_late); the tool said so rather than judge, as it must.
func onlyLate(rep map[string]any) bool {
	rs := invalidReasons(rep)
	for _, r := range rs {
		if r != "dispatch_lag" && r != "shard_late" {
			return false
		}
	}
	return len(rs) > 0
}
