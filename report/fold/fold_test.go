package fold

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/stats"
)

func TestGood(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	s := &report.RequestSample{OK: true, RequestMetrics: report.RequestMetrics{TTFTMS: f(120), TPOTMS: f(30), E2EMS: 900, ITLMS: []float64{20, 45, 30}}}
	for _, tc := range []struct {
		name string
		slo  map[string]float64
		want bool
	}{
		{name: "within all", slo: map[string]float64{"ttft_ms": 200, "tpot_ms": 50, "e2e_ms": 1000, "itl_max_ms": 50}, want: true},
		{name: "ttft over", slo: map[string]float64{"ttft_ms": 100}, want: false},
		{name: "limit is inclusive", slo: map[string]float64{"ttft_ms": 120}, want: true},
		{name: "itl max over", slo: map[string]float64{"itl_max_ms": 40}, want: false},
		{name: "e2e over", slo: map[string]float64{"e2e_ms": 899}, want: false},
		{name: "metric the request lacks is not held against it", slo: map[string]float64{"ttfb_ms": 1}, want: true},
		{name: "no slo", slo: nil, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Good(s, tc.slo); got != tc.want {
				t.Errorf("good = %v, want %v", got, tc.want)
			}
		})
	}
}

// A failed request counts only toward errors; a successful one reaches
// every metric of the table it has, itl_ms once per gap.
func TestSliceAdd(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	n := func(v int) *int { return &v }
	s := New(Options{})
	s.Add(&report.RequestSample{OK: true, Retries: 2, RequestMetrics: report.RequestMetrics{TTFTMS: f(10), E2EMS: 50, PromptTokens: n(7), ITLMS: []float64{1, 2, 3}, TokenCountSource: "usage", CoalescedEvents: 4, TTFTCoalesced: true}}, "a")
	// A failed request's coalesced events are not counted: its ITL is not either.
	s.Add(&report.RequestSample{Error: &report.RequestError{Class: "reset", Message: "x"}, StaleConnectionRetries: 1, RequestMetrics: report.RequestMetrics{E2EMS: 1, CoalescedEvents: 9, TTFTCoalesced: true}}, "b")
	m := s.Close()
	if m.Requests != 2 || m.Succeeded != 1 || m.Errors.Count != 1 || m.Errors.ByClass["reset"] != 1 || m.Retries != 2 || m.StaleConnectionRetries != 1 ||
		m.CoalescedEvents != 4 || m.TTFTCoalesced != 1 {
		t.Fatalf("counts: %+v", m)
	}
	if m.TTFTMS.Count != 1 || m.E2EMS.Count != 1 || *m.E2EMS.Max != 50 || m.ITLMS.Count != 3 || m.PromptTokens.Count != 1 || m.TTFBMS.Count != 0 {
		t.Errorf("stats: ttft %+v e2e %+v itl %+v prompt %+v ttfb %+v", m.TTFTMS, m.E2EMS, m.ITLMS, m.PromptTokens, m.TTFBMS)
	}
	if len(m.Errors.Examples) != 1 || m.Errors.Examples[0].Request != "b" || m.TokenCountSource != "usage" {
		t.Errorf("examples %+v, source %q", m.Errors.Examples, m.TokenCountSource)
	}
	if len(m.Errors.ByClass) != len(report.ErrorClasses) {
		t.Errorf("by_class has %d classes, want every one of %d", len(m.Errors.ByClass), len(report.ErrorClasses))
	}
}

// N shards merged are one fold over the union of their requests, exactly:
// every statistic of every metric, the counts, and the load point's
// window figures. Each shard is folded as a run folds it, written and read
// back as JSON, then merged.
func TestShardsEqualOneFoldOverTheirUnion(t *testing.T) {
	const shards, perShard = 3, 700 // past 1,024 together: the histograms are in bucket mode
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(7, 11))
	union := NewPoint(Options{}, map[string]float64{"ttft_ms": 40})
	var reports []*report.Report
	var files []string
	for sh := range shards {
		pt := NewPoint(Options{Histograms: true}, map[string]float64{"ttft_ms": 40})
		for i := range perShard {
			f := func(v float64) *float64 { return &v }
			n := func(v int) *int { return &v }
			ttft := math.Exp(3 + 0.5*rng.NormFloat64())
			smp := &report.RequestSample{Phase: "load", Index: i*shards + sh, OK: true, RequestMetrics: report.RequestMetrics{
				TTFBMS: f(ttft / 2), TTFTMS: f(ttft), E2EMS: ttft * 3,
				TPOTMS: f(1 + rng.Float64()), DecodeTokensPerS: f(900 + 100*rng.Float64()), PromptTokens: n(64 + rng.IntN(64)), CompletionTokens: n(16),
				CachedTokens: n(rng.IntN(32)), SSETokenEvents: 16, TokenCountSource: "usage", ITLMS: []float64{rng.Float64(), rng.Float64()},
				CoalescedEvents: rng.IntN(3), TTFTCoalesced: rng.IntN(4) == 0}}
			if rng.IntN(20) == 0 {
				smp.OK, smp.Error = false, &report.RequestError{Class: "http_status", Status: 503, Message: "busy"}
			}
			sched := start.Add(time.Duration(i*shards+sh) * 5 * time.Millisecond)
			sent := sched.Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
			written := sent.Add(time.Duration(rng.IntN(300)) * time.Microsecond)
			if rng.IntN(50) == 0 {
				written = time.Time{} // never written (connection refused)
			}
			rq := Request{Sample: smp, Name: "r", Scheduled: sched, Start: sent, Written: written, End: sent.Add(time.Duration(smp.E2EMS * 1e6))}
			pt.Add(rq)
			union.Add(rq)
		}
		lag := stats.New()
		for range perShard {
			_ = lag.Add(rng.Float64() * 3)
		}
		pt.Lag(lag)
		union.Lag(lag)
		lp := pt.Close(true)
		lp.Rate = 200.0 / shards
		phase := &report.Phase{Kind: "load", ServingMetrics: pt.Slice.Close(), Points: []*report.LoadPoint{lp}}
		r := &report.Report{SchemaVersion: report.SchemaVersion, Tool: report.Tool{Name: "tollgate", Version: "test"},
			Scenario:  report.ScenarioInfo{Name: "u", File: "u.yaml", SHA256: fmt.Sprintf("%064x", 1), Vars: map[string]any{}},
			Host:      report.Host{Hostname: "h", OS: "linux", Arch: "amd64", CPUCores: 1, GoVersion: "go"},
			StartedAt: start, EndedAt: start.Add(time.Minute), Status: report.StatusNotGated, RunOrder: []string{"s"}, Gates: []report.GateResult{},
			Runs: map[string]*report.Run{"s": {Name: "s", Params: map[string]string{}, Target: report.Target{Name: "s", Kind: "openai"}, Status: "ok",
				Phases: map[string]*report.Phase{"load": phase}, PhaseOrder: []string{"load"}}},
			Shard: &report.ShardInfo{Index: sh, Count: shards, Host: "h", Points: []report.ShardRate{}}}
		b, err := report.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := report.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		reports, files = append(reports, back), append(files, fmt.Sprintf("shard-%d.json", sh))
	}
	m, err := Merge(reports, files, MergeOptions{MaxStartLateness: DefaultMaxStartLateness})
	if err != nil {
		t.Fatal(err)
	}
	want := union.Close(false)
	got := m.Runs["s"].Phases["load"].Points[0]
	for _, row := range report.Metrics {
		w, g := *row.Stat(want.ServingMetrics), *row.Stat(got.ServingMetrics)
		g.Histogram = nil
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%s: union %s, merge %s", row.Key, show(w), show(g))
		}
	}
	for _, c := range []struct {
		name      string
		want, got any
	}{
		{"requests", want.Requests, got.Requests}, {"succeeded", want.Succeeded, got.Succeeded}, {"errors", want.Errors.Count, got.Errors.Count},
		{"by_class", want.Errors.ByClass, got.Errors.ByClass}, {"duration_s", want.DurationS, got.DurationS},
		{"achieved_rate_per_s", *want.AchievedRatePerS, *got.AchievedRatePerS}, {"request_throughput_per_s", *want.RequestThroughputPerS, *got.RequestThroughputPerS},
		{"output_tokens_per_s", *want.OutputTokensPerS, *got.OutputTokensPerS}, {"total_tokens_per_s", *want.TotalTokensPerS, *got.TotalTokensPerS},
		{"good_requests", want.Goodput.GoodRequests, got.Goodput.GoodRequests},
		{"coalesced_events", want.CoalescedEvents, got.CoalescedEvents}, {"ttft_coalesced", want.TTFTCoalesced, got.TTFTCoalesced},
	} {
		if !reflect.DeepEqual(c.want, c.got) {
			t.Errorf("%s: union %v, merge %v", c.name, c.want, c.got)
		}
	}
	for name, st := range map[string][2]report.Stat{"queue_ms": {want.QueueMS, got.QueueMS}, "dispatch_lag_ms": {want.DispatchLagMS, got.DispatchLagMS},
		"ttft_from_schedule_ms": {want.TTFTFromScheduleMS, got.TTFTFromScheduleMS}, "e2e_from_schedule_ms": {want.E2EFromScheduleMS, got.E2EFromScheduleMS}} {
		w, g := st[0], st[1]
		g.Histogram = nil
		if w.Count == 0 || !reflect.DeepEqual(w, g) {
			t.Errorf("%s: union %s, merge %s", name, show(w), show(g))
		}
	}
	// Σ e2e is summed per shard, then over shards: equal to the union's
	// within float rounding, not bit for bit.
	if w, g := *want.AchievedConcurrency, *got.AchievedConcurrency; math.Abs(w-g) > 1e-12*w {
		t.Errorf("achieved_concurrency: union %v, merge %v", w, g)
	}
}

func show(s report.Stat) string {
	b, _ := json.Marshal(s)
	return string(b)
}
