package fold

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/stats"
)

// synthShard is shard idx of n of a load run: requests requests with
// log-normal latencies, kept the way a shard keeps them (histograms and a
// window), and the same values returned for checking.
func synthShard(idx, n, requests int, start time.Time, span time.Duration) (*report.Report, []float64) {
	rng := rand.New(rand.NewPCG(uint64(idx), 17))
	ttft, e2e, comp, prompt, queue := stats.New(), stats.New(), stats.New(), stats.New(), stats.New()
	var vals []float64
	var e2eSum float64
	for range requests {
		v := math.Exp(3 + 0.5*rng.NormFloat64())
		vals = append(vals, v)
		_ = ttft.Add(v)
		_ = e2e.Add(v * 4)
		e2eSum += v * 4
		_ = comp.Add(16)
		_ = prompt.Add(float64(64 + rng.IntN(64)))
		_ = queue.Add(rng.Float64())
	}
	sm := &report.ServingMetrics{Requests: requests, Succeeded: requests, Errors: report.ErrorSummary{ByClass: map[string]int{"connect": 0}}, Warnings: []string{},
		TTFTMS: report.StatWithHistogram(ttft), E2EMS: report.StatWithHistogram(e2e), CompletionTokens: report.StatWithHistogram(comp), PromptTokens: report.StatWithHistogram(prompt)}
	first := start.Add(time.Duration(idx) * time.Millisecond)
	lp := &report.LoadPoint{Rate: 10, ServingMetrics: sm, QueueMS: report.StatWithHistogram(queue), DurationS: span.Seconds(),
		Window: &report.Window{FirstSend: first, LastSend: first.Add(span), LastEnd: first.Add(span + time.Second), Sent: requests, E2ESumMS: e2eSum}}
	phase := &report.Phase{Kind: "load", ServingMetrics: sm, Points: []*report.LoadPoint{lp}}
	r := &report.Report{SchemaVersion: report.SchemaVersion, Tool: report.Tool{Name: "tollgate", Version: "test"},
		Scenario:  report.ScenarioInfo{Name: "hour", File: "hour.yaml", SHA256: fmt.Sprintf("%064x", 1), Vars: map[string]any{}},
		Host:      report.Host{Hostname: fmt.Sprintf("host-%d", idx), OS: "linux", Arch: "amd64", CPUCores: 1, GoVersion: "go"},
		StartedAt: start, EndedAt: start.Add(span), Status: report.StatusNotGated, RunOrder: []string{"server"}, Gates: []report.GateResult{},
		Runs: map[string]*report.Run{"server": {Name: "server", Params: map[string]string{}, Target: report.Target{Name: "server", Kind: "openai"}, Status: "ok",
			Phases: map[string]*report.Phase{"load": phase}, PhaseOrder: []string{"load"}}},
		Shard: &report.ShardInfo{Index: idx, Count: n, Host: fmt.Sprintf("host-%d", idx), Points: []report.ShardRate{}}}
	return r, vals
}

// TestMergeIsExact: the merge of shards has the statistics of one
// histogram over every value, and the counts and window of the union.
func TestMergeIsExact(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name          string
		shards, per   int
		wantExactMode bool
	}{
		{"exact samples", 3, 300, true},
		{"buckets", 4, 2000, false},
		{"one shard", 1, 50, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reps []*report.Report
			var files []string
			all := stats.New()
			for i := range tc.shards {
				r, vals := synthShard(i, tc.shards, tc.per, start, time.Minute)
				for _, v := range vals {
					_ = all.Add(v)
				}
				reps, files = append(reps, r), append(files, fmt.Sprintf("shard-%d.json", i))
			}
			m, err := Merge(reps, files)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := report.Marshal(m); err != nil {
				t.Fatalf("the merge does not validate: %v", err)
			}
			pt := m.Runs["server"].Phases["load"].Points[0]
			want := report.StatFrom(all)
			got := pt.TTFTMS
			for _, f := range []struct {
				name      string
				got, want *float64
			}{{"mean", got.Mean, want.Mean}, {"min", got.Min, want.Min}, {"p50", got.P50, want.P50}, {"p90", got.P90, want.P90},
				{"p99", got.P99, want.P99}, {"max", got.Max, want.Max}} {
				if *f.got != *f.want {
					t.Errorf("%s: merged %v, one histogram %v", f.name, *f.got, *f.want)
				}
			}
			if pt.Requests != tc.shards*tc.per || got.Count != tc.shards*tc.per || all.Exact() != tc.wantExactMode {
				t.Errorf("requests %d, count %d, exact %v", pt.Requests, got.Count, all.Exact())
			}
			if pt.Rate != float64(10*tc.shards) || pt.Window.Sent != tc.shards*tc.per || len(m.Runs["server"].Phases["load"].Shards) != tc.shards {
				t.Errorf("rate %v, sent %d, shards %d", pt.Rate, pt.Window.Sent, len(m.Runs["server"].Phases["load"].Shards))
			}
		})
	}
}

func TestMergeRefuses(t *testing.T) {
	start := time.Now()
	s := func(i, n int) *report.Report { r, _ := synthShard(i, n, 10, start, time.Second); return r }
	other := s(1, 2)
	other.Scenario.SHA256 = fmt.Sprintf("%064x", 2)
	noShard := s(1, 2)
	noShard.Shard = nil
	for _, tc := range []struct {
		name string
		reps []*report.Report
		want string
	}{
		{"missing", []*report.Report{s(0, 3), s(2, 3)}, "shard 1 of 3 missing"},
		{"twice", []*report.Report{s(0, 2), s(0, 2), s(1, 2)}, "shard 0 is given twice"},
		{"other scenario", []*report.Report{s(0, 2), other}, "are shards of different scenarios"},
		{"other count", []*report.Report{s(0, 2), s(1, 3)}, "is shard 1 of 3, but a.json is of 2"},
		{"not a shard", []*report.Report{s(0, 2), noShard}, "b.json is not a shard report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := []string{"a.json", "b.json", "c.json"}[:len(tc.reps)]
			_, err := Merge(tc.reps, files)
			if !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want ErrMerge naming %q", err, tc.want)
			}
		})
	}
}

// TestWriteHourOfShards writes 64 shard reports of a synthesised one-hour
// run (10 req/s each: 36,000 requests per shard) to $TOLLGATE_MERGE_HOUR_DIR,
// for measuring tollgate merge on them; skipped without it.
func TestWriteHourOfShards(t *testing.T) {
	dir := os.Getenv("TOLLGATE_MERGE_HOUR_DIR")
	if dir == "" {
		t.Skip("set TOLLGATE_MERGE_HOUR_DIR to write the shards")
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 64 {
		r, _ := synthShard(i, 64, 36_000, start, time.Hour)
		b, err := report.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := report.WriteFile(filepath.Join(dir, fmt.Sprintf("shard-%02d.json", i)), b); err != nil {
			t.Fatal(err)
		}
	}
}
