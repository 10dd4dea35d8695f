package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/stats"
)

// shardScenario is a load phase at rate req/s (Poisson) for n requests and
// a decode phase (not load-bearing: shard 0 only) against base.
func shardScenario(t *testing.T, dir, name, base string, rate float64, n int) string {
	t.Helper()
	sc := fmt.Sprintf(`name: %s
targets:
  server:
    kind: openai
    base_url: %s
    metrics: false
    metadata: false
phases:
  decode: {prompt_tokens: 32, max_tokens: 4, repeat: 2}
  load:
    kind: load
    rate: %g
    arrival: poisson
    requests: %d
    prompt_tokens: {distribution: uniform, min: 16, max: 48}
    max_tokens: 4
    # What is tested is how shards split, merge and are judged, not the
    # client's own lateness (TestDispatchLagInvalidatesTheRun's): a loaded
    # machine waking the client 80 ms late at 200/s must not make a
    # shard's run invalid (exit 3) before its merge is even tried.
    max_dispatch_lag: 1s
report:
  samples: true
gates:
  - name: every request answered
    expr: runs.server.phases.load.points[0].succeeded == %d && runs.server.phases.load.errors.count == 0
`, name, base, rate, n, n)
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runShards runs the n shards of a scenario as n processes of the real
// binary at once, with a common --start-at, and returns their report paths.
func runShards(t *testing.T, dir, scenario string, n int, extra ...string) (reports, samples []string) {
	t.Helper()
	// A lead every shard reaches in time on a busy machine: a shard later
	// than 100 ms makes the merge invalid.
	return runShardsLead(t, dir, scenario, n, 6*time.Second, extra...)
}

// runShardsLead is runShards with the shards' lead before --start-at.
func runShardsLead(t *testing.T, dir, scenario string, n int, lead time.Duration, extra ...string) (reports, samples []string) {
	t.Helper()
	start := time.Now().Add(lead).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	res := make([]result, n)
	for i := range n {
		reports = append(reports, filepath.Join(dir, fmt.Sprintf("shard-%d.json", i)))
		samples = append(samples, filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i)))
	}
	for i := range n {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			args := append([]string{"run", scenario, "--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", start,
				"--json-out", reports[i], "--samples-out", samples[i], "-q"}, extra...)
			res[i] = runBin(t, perfBin, args...)
		}(i)
	}
	wg.Wait()
	for i, r := range res {
		if r.code != 0 {
			t.Fatalf("shard %d/%d: exit %d\n%s\n%s", i, n, r.code, r.stdout, r.stderr)
		}
	}
	return reports, samples
}

func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

// TestShardMergeLoopback: one tollgate serve, three shard processes of the
// real binary at 600 req/s together, merged, judged once, and compared with
// one process sending the same workload.
func TestShardMergeLoopback(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs four load processes")
	}
	dir := t.TempDir()
	url := startServeWith(t, perfBin)
	const total = 1800 // past 1,024 samples: the histograms are in bucket mode
	sc := shardScenario(t, dir, "sharded", url, 600, total)
	merged := filepath.Join(dir, "merged.json")
	var reports, samples []string
	// Shards that began late (shard_late, their lead eaten by a loaded
	// machine starting four processes) say nothing of the merge: run
	// again with twice the lead, up to 3 tries.
	for try, lead := 1, 6*time.Second; ; try, lead = try+1, 2*lead {
		reports, samples = runShardsLead(t, dir, sc, 3, lead)
		r := runBin(t, perfBin, append([]string{"merge", "--json-out", merged}, reports...)...)
		if r.code == 0 {
			break
		}
		if try < 3 && r.code == ExitNotJudged && onlyLate(readJSONReport(t, merged)) {
			t.Logf("try %d: the shards began late for a %v lead (%v); running them again with %v", try, lead, invalidReasons(readJSONReport(t, merged)), 2*lead)
			continue
		}
		t.Fatalf("merge: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	judged := filepath.Join(dir, "judged.json")
	j := runBin(t, perfBin, "judge", sc, merged, "--json-out", judged)
	if j.code != 0 || strings.Count(j.stdout, "PASS  ") != 1 {
		t.Fatalf("judge: exit %d (want 0, one gate passed)\n%s\n%s", j.code, j.stdout, j.stderr)
	}
	m := readJSONReport(t, judged)
	if g := m["gates"].([]any); len(g) != 1 || dig(g, 0, "status") != "pass" {
		t.Errorf("gates of the judged merge: %v", g)
	}
	load := dig(m, "runs", "server", "phases", "load")
	pt := dig(load, "points", 0)
	if got := dig(pt, "requests").(float64); got != total {
		t.Errorf("merged requests %v, want %d", got, total)
	}
	if got := len(dig(load, "samples").([]any)); got != total {
		t.Errorf("merged samples %d, want %d (concatenated)", got, total)
	}
	if got := len(dig(load, "shards").([]any)); got != 3 {
		t.Errorf("per-shard figures: %d, want 3", got)
	}
	if dig(m, "runs", "server", "phases", "decode") == nil {
		t.Error("the decode phase (shard 0's) is missing from the merge")
	}
	// No request is sent before its time, whatever the load.
	if q := dig(pt, "queue_ms", "min").(float64); q < 0 {
		t.Errorf("queue_ms.min %v < 0", q)
	}

	// The merged percentiles are those of the union of the shards'
	// --samples-out, within the histogram's documented error.
	union := map[string][]float64{}
	for _, path := range samples {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var s map[string]any
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				t.Fatal(err)
			}
			if s["phase"] != "load" || s["ok"] != true {
				continue
			}
			for _, k := range []string{"ttft_ms", "e2e_ms"} {
				if v, ok := s[k].(float64); ok {
					union[k] = append(union[k], v)
				}
			}
		}
		_ = f.Close()
	}
	for _, k := range []string{"ttft_ms", "e2e_ms"} {
		vals := union[k]
		slices.Sort(vals)
		if got := dig(pt, k, "count").(float64); int(got) != len(vals) {
			t.Errorf("%s: merged count %v, union of samples %d", k, got, len(vals))
		}
		for _, p := range []struct {
			key string
			q   float64
		}{{"p50", 50}, {"p90", 90}, {"p95", 95}, {"p99", 99}} {
			want := stats.NearestRank(vals, p.q)
			got := dig(pt, k, p.key).(float64)
			if math.Abs(got-want) > stats.RelativeError*want+1e-9 {
				t.Errorf("%s.%s: merged %v, union of the samples %v (beyond %.3f %%)", k, p.key, got, want, 100*stats.RelativeError)
			}
		}
	}

	// One process sending the same total workload.
	single := filepath.Join(dir, "single.json")
	if r := runBin(t, perfBin, "run", sc, "--json-out", single, "-q"); r.code != 0 {
		t.Fatalf("single process: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	s := readJSONReport(t, single)
	spt := dig(s, "runs", "server", "phases", "load", "points", 0)
	if a, b := dig(spt, "requests"), dig(pt, "requests"); a != b {
		t.Errorf("requests: single %v, merged %v", a, b)
	}
	for _, k := range []string{"achieved_rate_per_s", "request_throughput_per_s"} {
		t.Logf("%s: merged %.1f, single %.1f (600 offered)", k, dig(pt, k), dig(spt, k))
	}
	for _, k := range []string{"ttft_ms", "e2e_ms", "queue_ms"} {
		t.Logf("%s p50/p99: merged %.2f/%.2f, single %.2f/%.2f", k, dig(pt, k, "p50"), dig(pt, k, "p99"), dig(spt, k, "p50"), dig(spt, k, "p99"))
	}
	for i, in := range m["shards"].([]any) {
		t.Logf("shard %d: lateness %v ms, clock offset %v ± %v ms, points %v", i, dig(in, "start_lateness_ms"), dig(in, "clock_offset_ms"), dig(in, "clock_offset_uncertainty_ms"), dig(in, "points"))
	}
}

// TestShardBadInput: a shard that names no shard of a run, and shard
// reports that are not one whole run, exit 2 naming the problem.
func TestShardBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := startServeWith(t, perfBin)
	sc := shardScenario(t, dir, "small", url, 200, 4)
	other := shardScenario(t, dir, "other", url, 200, 6)
	reports, _ := runShards(t, dir, sc, 2)
	otherDir := filepath.Join(dir, "other")
	if err := os.Mkdir(otherDir, 0o755); err != nil {
		t.Fatal(err)
	}
	otherReports, _ := runShards(t, otherDir, other, 2)
	b, err := os.ReadFile(reports[1])
	if err != nil {
		t.Fatal(err)
	}
	v2 := filepath.Join(dir, "v2.json")
	if err := os.WriteFile(v2, []byte(strings.Replace(string(b), `"schema_version": 1`, `"schema_version": 2`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dup := filepath.Join(dir, "copy-of-0.json")
	b0, _ := os.ReadFile(reports[0])
	if err := os.WriteFile(dup, b0, 0o644); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(dir, "single.json")
	if r := runBin(t, perfBin, "run", sc, "--json-out", single, "-q"); r.code != 0 {
		t.Fatalf("single: %d %s", r.code, r.stderr)
	}
	// Shard 1 as another run would have written it: started two minutes
	// later, or given another run id; and one edited by hand.
	laterRun := editReport(t, reports[1], filepath.Join(dir, "later-run.json"), func(m map[string]any) {
		sh := m["shard"].(map[string]any)
		at, _ := time.Parse(time.RFC3339Nano, sh["start_at"].(string))
		sh["start_at"] = at.Add(2 * time.Minute).Format(time.RFC3339Nano)
	})
	otherID := editReport(t, reports[1], filepath.Join(dir, "other-id.json"), func(m map[string]any) { m["shard"].(map[string]any)["run_id"] = "job-2" })
	p50AboveMax := editReport(t, reports[1], filepath.Join(dir, "p50-above-max.json"), func(m map[string]any) {
		st := dig(m, "runs", "server", "phases", "load", "points", 0, "ttft_ms").(map[string]any)
		st["p50"] = st["max"].(float64) * 2
	})
	out := filepath.Join(dir, "merged.json")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"index past the count", []string{"run", sc, "--shard", "3/2"}, nil, "shard 3/2: the index must be 0 to 1"},
		{"zero shards", []string{"run", sc, "--shard", "0/0"}, nil, "shard 0/0: the count must be at least 1"},
		{"not I/N", []string{"run", sc, "--shard", "two"}, nil, `--shard "two": want INDEX/COUNT`},
		{"bad start", []string{"run", sc, "--shard", "0/2", "--start-at", "tomorrow"}, nil, `--start-at "tomorrow"`},
		{"start without shard", []string{"run", sc, "--start-at", "2026-01-02T15:04:05Z"}, nil, "are for sharded runs"},
		{"run id without shard", []string{"run", sc, "--run-id", "job-1"}, nil, "are for sharded runs"},
		{"run id with a space", []string{"run", sc, "--shard", "0/2", "--run-id", "job 1"}, nil, `run id "job 1": want printable characters without spaces`},
		{"shards of different runs", []string{"merge", "--json-out", out, reports[0], laterRun}, nil, "later-run.json are shards of different runs: shard.start_at"},
		{"shards of different run ids", []string{"merge", "--json-out", out, reports[0], otherID}, nil, `other-id.json are shards of different runs: shard.run_id (none) and "job-2"`},
		{"a shard that contradicts itself", []string{"merge", "--json-out", out, reports[0], p50AboveMax}, nil, "p50-above-max.json: /runs/server/phases/load/points/0/ttft_ms: p50 ("},
		{"a negative lateness bound", []string{"merge", "--json-out", out, "--max-start-lateness", "-1s", reports[0], reports[1]}, nil, "--max-start-lateness -1s: want a duration of 0 or more"},
		{"job index past the count", []string{"run", sc}, []string{"JOB_COMPLETION_INDEX=2", "TOLLGATE_SHARD_COUNT=2"}, "shard 2/2: the index must be 0 to 1"},
		{"count without an index", []string{"run", sc, "--shard-count", "3"}, nil, "a shard count (3) but no index"},
		{"more shards than requests", []string{"run", sc, "--shard", "0/5"}, nil, "4 requests cannot be split over 5 shards"},
		{"different scenarios", []string{"merge", "--json-out", out, reports[0], otherReports[1]}, nil, "are shards of different scenarios"},
		{"different schema version", []string{"merge", "--json-out", out, reports[0], v2}, nil, "v2.json: unsupported schema_version: schema_version 2"},
		{"a missing shard", []string{"merge", "--json-out", out, reports[0]}, nil, "shard 1 of 2 missing"},
		{"a shard twice", []string{"merge", "--json-out", out, reports[0], dup, reports[1]}, nil, "shard 0 is given twice"},
		{"not a shard", []string{"merge", "--json-out", out, reports[0], single}, nil, "single.json is not a shard report"},
		{"judging one shard", []string{"judge", sc, reports[0]}, nil, "merge the shards first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := append([]string{}, tc.args...)
			var r result
			if tc.env != nil {
				r = runBinEnv(t, perfBin, tc.env, cmd...)
			} else {
				r = runBin(t, perfBin, cmd...)
			}
			if r.code != ExitInvalid || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d (want 2), stderr %q (want it to name %q)", r.code, r.stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

// editReport writes the report at from, changed by change, to to.
func editReport(t *testing.T, from, to string, change func(map[string]any)) string {
	t.Helper()
	m := readJSONReport(t, from)
	change(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return to
}

// TestLateShardsMakeTheMergeInvalid: shards whose --start-at had passed
// begin late; their merge is written, says its measurement is invalid and
// exits 3, and so does judging it, unless the merge accepts the lateness.
func TestLateShardsMakeTheMergeInvalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := startServeWith(t, perfBin)
	// The schedule is absolute: both shards end near start-at + 5 s, so
	// their windows overlap even when a loaded machine starts one of them
	// a second or more after the other (at 8 requests, both schedules had
	// passed and a shard started 1 s late missed the other's window).
	sc := shardScenario(t, dir, "late", url, 100, 500)
	past := time.Now().Add(-2 * time.Second).UTC().Format(time.RFC3339Nano)
	// Both shards at once, as a run's shards are: one after the other, a
	// loaded machine can start the second after the first has finished,
	// and the merge then refuses them as two runs (their windows do not
	// overlap), exit 2 before any lateness is judged.
	reports := make([]string, 2)
	res := make([]result, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		reports[i] = filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		wg.Go(func() {
			res[i] = runBin(t, perfBin, "run", sc, "--shard", fmt.Sprintf("%d/2", i), "--start-at", past, "--run-id", "job-7f3a", "--json-out", reports[i], "-q")
		})
	}
	wg.Wait()
	for i, r := range res {
		if r.code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	merged := filepath.Join(dir, "merged.json")
	m := runBin(t, perfBin, append([]string{"merge", "--json-out", merged, "-q"}, reports...)...)
	if m.code != ExitNotJudged || !strings.Contains(m.stderr, "the merged measurement is invalid (shard_late at /shards/0/start_lateness_ms): shard 0 (") || !strings.Contains(m.stderr, "--max-start-lateness") {
		t.Fatalf("merge: exit %d (want 3), stderr %q", m.code, m.stderr)
	}
	rep := readJSONReport(t, merged)
	inv := rep["invalid"].([]any)
	if len(inv) != 2 || dig(inv, 1, "reason") != "shard_late" || dig(inv, 1, "path") != "/shards/1/start_lateness_ms" || rep["status"] != "error" {
		t.Errorf("status %v, invalid %v: want both shards late", rep["status"], inv)
	}
	if id := dig(rep, "shards", 1, "run_id"); id != "job-7f3a" {
		t.Errorf("shards[1].run_id %v", id)
	}
	if j := runBin(t, perfBin, "judge", sc, merged); j.code != ExitNotJudged || !strings.Contains(j.stderr, "the measurement is invalid (shard_late at /shards/0/start_lateness_ms)") {
		t.Errorf("judge: exit %d (want 3), stderr %q", j.code, j.stderr)
	}
	accepted := filepath.Join(dir, "accepted.json")
	if m := runBin(t, perfBin, append([]string{"merge", "--json-out", accepted, "-q", "--max-start-lateness", "1h"}, reports...)...); m.code != 0 {
		t.Fatalf("merge accepting the lateness: exit %d\n%s", m.code, m.stderr)
	}
	if j := runBin(t, perfBin, "judge", sc, accepted); j.code != 0 {
		t.Errorf("judge of the accepted merge: exit %d\n%s", j.code, j.stderr)
	}
}

// runBinEnv runs bin with env added to this process's environment, in the
// child only (not t.Setenv, which a parallel test may not call).
func runBinEnv(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	return runCmd(t, bin, append(os.Environ(), env...), args...)
}

// TestShardStartsLate: a shard whose --start-at has passed begins at once,
// says so, records its lateness, and its first sends are late against
// their schedule: queue_ms holds at least the lateness.
func TestShardStartsLate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := startServeWith(t, perfBin)
	sc := shardScenario(t, dir, "late", url, 100, 20)
	past := time.Now().Add(-2 * time.Second).UTC().Format(time.RFC3339Nano)
	out := filepath.Join(dir, "shard-1.json")
	r := runBin(t, perfBin, "run", sc, "--shard", "1/2", "--start-at", past, "--json-out", out, "-q")
	if r.code != 0 || !strings.Contains(r.stderr, "after --start-at") {
		t.Fatalf("exit %d, stderr %q: want 0 and a warning that the shard began late", r.code, r.stderr)
	}
	rep := readJSONReport(t, out)
	late := dig(rep, "shard", "start_lateness_ms").(float64)
	q := dig(rep, "runs", "server", "phases", "load", "points", 0, "queue_ms", "max").(float64)
	// Shard 1's first send is arrival 1 of the schedule, a few ms after the
	// start: its queueing delay is the lateness less that offset.
	if late < 2000 || q < late-1000 {
		t.Errorf("start_lateness_ms %v (want ≥ 2000: start-at was 2 s ago), queue_ms.max %v (want about the lateness)", late, q)
	}
	if n := dig(rep, "runs", "server", "phases", "load", "points", 0, "requests").(float64); n != 10 {
		t.Errorf("shard 1 of 2 sent %v requests, want 10 of 20", n)
	}
	if dig(rep, "runs", "server", "phases").(map[string]any)["decode"] != nil {
		t.Error("shard 1 ran the decode phase, which is shard 0's")
	}
}
