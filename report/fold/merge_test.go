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
			m, err := Merge(reps, files, MergeOptions{MaxStartLateness: DefaultMaxStartLateness})
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
			_, err := Merge(tc.reps, files, MergeOptions{MaxStartLateness: DefaultMaxStartLateness})
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

// TestMergeProvesOneRun: shards that are not one run's are refused,
// naming the files and the field that shows it.
func TestMergeProvesOneRun(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	later := start.Add(2 * time.Minute)
	pair := func(edit func(a, b *report.Report)) []*report.Report {
		a, _ := synthShard(0, 2, 10, start, time.Second)
		b, _ := synthShard(1, 2, 10, start, time.Second)
		edit(a, b)
		return []*report.Report{a, b}
	}
	window := func(r *report.Report) *report.Window { return r.Runs["server"].Phases["load"].Points[0].Window }
	shift := func(r *report.Report, d time.Duration) {
		w := window(r)
		w.FirstSend, w.LastSend, w.LastEnd = w.FirstSend.Add(d), w.LastSend.Add(d), w.LastEnd.Add(d)
	}
	for _, tc := range []struct {
		name string
		reps []*report.Report
		want string // "": merged
	}{
		{"one run", pair(func(a, b *report.Report) {}), ""},
		{"the same run id and start", pair(func(a, b *report.Report) {
			a.Shard.RunID, b.Shard.RunID = "job-7f3a", "job-7f3a"
			a.Shard.StartAt, b.Shard.StartAt = &start, &start
		}), ""},
		{"different run ids", pair(func(a, b *report.Report) { a.Shard.RunID, b.Shard.RunID = "job-1", "job-2" }),
			`a.json and b.json are shards of different runs: shard.run_id "job-1" and "job-2"`},
		{"a run id on one shard only", pair(func(a, b *report.Report) { a.Shard.RunID = "job-1" }),
			`shard.run_id "job-1" and (none)`},
		{"different starts", pair(func(a, b *report.Report) { a.Shard.StartAt, b.Shard.StartAt = &start, &later; shift(b, 2*time.Minute) }),
			"a.json and b.json are shards of different runs: shard.start_at 2026-03-01T12:00:00Z and 2026-03-01T12:02:00Z"},
		{"windows two minutes apart", pair(func(a, b *report.Report) { shift(b, 2*time.Minute) }),
			"a.json and b.json are not shards of one run: their windows of server/load point 0 do not overlap (first_send 2026-03-01T12:02:00.001Z is 1m58.001s after last_end 2026-03-01T12:00:02Z)"},
		{"windows apart by less than the clocks disagree", pair(func(a, b *report.Report) {
			shift(b, 3*time.Second) // 1 s apart: within 1 s + the clocks' spread
			a.Shard.ClockOffsetMS, a.Shard.ClockOffsetUncertaintyMS = report.F(-400), report.F(5)
			b.Shard.ClockOffsetMS, b.Shard.ClockOffsetUncertaintyMS = report.F(400), report.F(5)
		}), ""},
		{"a window backwards", pair(func(a, b *report.Report) { window(b).LastSend = window(b).FirstSend.Add(-time.Second) }),
			"b.json: /runs/server/phases/load/points/0/window is out of order"},
		{"a window of no length", pair(func(a, b *report.Report) {
			w := window(b)
			w.LastSend, w.LastEnd = w.FirstSend, w.FirstSend
		}), "b.json: /runs/server/phases/load/points/0/window has no length"},
		{"a send before the start", pair(func(a, b *report.Report) {
			at := start.Add(time.Minute)
			a.Shard.StartAt, b.Shard.StartAt = &at, &at
		}), "a.json: /runs/server/phases/load/points/0/window: first_send 2026-03-01T12:00:00Z is before shard.start_at 2026-03-01T12:01:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Merge(tc.reps, []string{"a.json", "b.json"}, MergeOptions{MaxStartLateness: DefaultMaxStartLateness})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(m.Invalid) != 0 {
					t.Errorf("invalid: %v", m.Invalid)
				}
				return
			}
			if !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v\nwant ErrMerge naming %q", err, tc.want)
			}
		})
	}
}

// TestMergeFlagsALateShard: a shard that began later than the bound after
// start_at is merged, and the merge says its measurement is invalid.
func TestMergeFlagsALateShard(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		late  float64 // shard 1's start_lateness_ms
		bound time.Duration
		want  bool // invalid
	}{
		{"on time", 0, DefaultMaxStartLateness, false},
		{"at the bound", 100, DefaultMaxStartLateness, false},
		{"late", 731, DefaultMaxStartLateness, true},
		{"just past the bound", 100.5, DefaultMaxStartLateness, true},
		{"late and accepted", 731, time.Second, false},
		{"any lateness with a bound of 0", 0.5, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reps []*report.Report
			for i := range 2 {
				r, _ := synthShard(i, 2, 10, start, time.Second)
				r.Shard.StartAt, r.Shard.StartLatenessMS = &start, report.F(0)
				reps = append(reps, r)
			}
			reps[1].Shard.StartLatenessMS = report.F(tc.late)
			m, err := Merge(reps, []string{"a.json", "b.json"}, MergeOptions{MaxStartLateness: tc.bound})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(m.Invalid) > 0; got != tc.want {
				t.Fatalf("invalid %v, want %v", m.Invalid, tc.want)
			}
			if !tc.want {
				return
			}
			f := m.Invalid[0]
			if len(m.Invalid) != 1 || f.Reason != report.InvalidShardLate || f.Path != "/shards/1/start_lateness_ms" ||
				!strings.Contains(f.Message, "shard 1 (b.json, host host-1) began its first load point") || m.Status != report.StatusError {
				t.Errorf("status %s, invalid %+v", m.Status, m.Invalid)
			}
			if _, err := report.Marshal(m); err != nil {
				t.Errorf("the invalid merge does not validate: %v", err)
			}
		})
	}
}

// A shard whose own measurement is invalid (its client sent late) makes
// the merge invalid: the union holds that shard's late requests.
func TestMergeKeepsAShardsFindings(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var reps []*report.Report
	for i := range 2 {
		r, _ := synthShard(i, 2, 10, start, time.Second)
		reps = append(reps, r)
	}
	lag := report.Invalidity{Reason: report.InvalidDispatchLag, Path: "/runs/x/phases/load/dispatch_lag_ms/p99", Message: "phase load: the client sent 40ms late"}
	reps[1].Invalid, reps[1].Status = []report.Invalidity{lag}, report.StatusError
	m, err := Merge(reps, []string{"a.json", "b.json"}, MergeOptions{MaxStartLateness: DefaultMaxStartLateness})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Invalid) != 1 || m.Status != report.StatusError {
		t.Fatalf("status %s, invalid %+v", m.Status, m.Invalid)
	}
	f := m.Invalid[0]
	if f.Reason != lag.Reason || f.Path != lag.Path || f.Message != "shard 1 (b.json): "+lag.Message {
		t.Errorf("finding %+v", f)
	}
	// One shard alone: the merge is that shard, invalid as it was.
	solo, _ := synthShard(0, 1, 10, start, time.Second)
	solo.Invalid, solo.Status = []report.Invalidity{lag}, report.StatusError
	one, err := Merge([]*report.Report{solo}, []string{"solo.json"}, MergeOptions{MaxStartLateness: DefaultMaxStartLateness})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Invalid) != 1 || one.Invalid[0].Reason != report.InvalidDispatchLag {
		t.Errorf("one shard: invalid %+v", one.Invalid)
	}
}

// achieved_concurrency is the mean in flight over the span the e2e times
// lie in: two workers whose first requests each spend 100 ms connecting
// (in their e2e, before the first write that starts duration_s) are at
// most 2 in flight, and the figure says at most 2, in one report and
// merged from shards, including a shard report from before first_start.
func TestAchievedConcurrencyNeverExceedsTheMostInFlight(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	sample := func(e2e float64) *report.RequestSample {
		return &report.RequestSample{OK: true, RequestMetrics: report.RequestMetrics{E2EMS: e2e}}
	}
	// Two workers, back to back: 0–200 (100 of it connecting), 200–300,
	// 300–400 each.
	var reqs []Request
	for range 2 {
		reqs = append(reqs,
			Request{Sample: sample(200), Scheduled: ms(0), Start: ms(0), Written: ms(100), End: ms(200)},
			Request{Sample: sample(100), Scheduled: ms(200), Start: ms(200), Written: ms(200), End: ms(300)},
			Request{Sample: sample(100), Scheduled: ms(300), Start: ms(300), Written: ms(300), End: ms(400)})
	}
	one := NewPoint(Options{}, nil)
	for _, r := range reqs {
		one.Add(r)
	}
	lp := one.Close(true)
	if lp.AchievedConcurrency == nil || *lp.AchievedConcurrency != 2 {
		t.Errorf("achieved_concurrency %v, want 2 (800 ms in flight over 400 ms)", ptrVal(lp.AchievedConcurrency))
	}
	if lp.DurationS != 0.3 {
		t.Errorf("duration_s %v, want 0.3 (first write to last completion)", lp.DurationS)
	}
	// The same six requests from two shard reports: one with first_start,
	// one from before it was kept (its first_send stands in).
	a, b := NewPoint(Options{Histograms: true}, nil), NewPoint(Options{Histograms: true}, nil)
	for i, r := range reqs {
		if i < 3 {
			a.Add(r)
		} else {
			b.Add(r)
		}
	}
	old := b.Close(true)
	old.Window.FirstStart = time.Time{}
	merged := NewPoint(Options{Histograms: true}, nil)
	for _, sh := range []*report.LoadPoint{a.Close(true), old} {
		if err := merged.Merge(sh, "shard"); err != nil {
			t.Fatal(err)
		}
	}
	if got := merged.Close(true).AchievedConcurrency; got == nil || *got != 2 {
		t.Errorf("merged achieved_concurrency %v, want 2", ptrVal(got))
	}
}

func ptrVal(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
