package remotewrite

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
)

func fp(v float64) *float64 { return &v }
func ip(v int) *int         { return &v }

// richReport has every kind of figure Build writes: prompt sizes,
// prefix-cache variants with a speedup, turns, load points by concurrency
// and by rate with goodput, capacity by rate and by concurrency, a seam
// run, gates, and a run that failed.
func richReport() *report.Report {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	m := func(n int, ttft ...float64) *report.ServingMetrics {
		sm := &report.ServingMetrics{Requests: n, Succeeded: len(ttft), TTFTMS: report.NewStat(ttft), E2EMS: report.NewStat(ttft),
			TPOTMS: report.NewStat([]float64{1.5, 2.25}), DecodeTokensPerS: report.NewStat([]float64{400}),
			Errors: report.ErrorSummary{Count: n - len(ttft), ByClass: map[string]int{"timeout_total": n - len(ttft), "connect": 0}}}
		for _, mt := range report.Metrics { // every metric has a figure
			if s := mt.Stat(sm); s.Count == 0 {
				*s = report.NewStat([]float64{3})
			}
		}
		return sm
	}
	point := func(conc int, rate float64) *report.LoadPoint {
		return &report.LoadPoint{Concurrency: conc, Rate: rate, ServingMetrics: m(4, 10, 20, 30),
			QueueMS: report.NewStat([]float64{0.5}), DispatchLagMS: report.NewStat([]float64{0.25}),
			TTFTFromScheduleMS: report.NewStat([]float64{11}), E2EFromScheduleMS: report.NewStat([]float64{31}),
			DurationS: 1.5, AchievedRatePerS: fp(3.9), RequestThroughputPerS: fp(2), OutputTokensPerS: fp(64), TotalTokensPerS: fp(96),
			AchievedConcurrency: fp(1.75), PeakInFlight: 2, Goodput: &report.Goodput{SLO: map[string]float64{"ttft_ms": 100}, GoodRequests: 3, AttainedPct: fp(75)}}
	}
	seam := &report.SeamMetrics{Transfers: 2, SeamLatencyMS: report.NewStat([]float64{1, 2}), QueueWaitMS: report.NewStat([]float64{0, 0.5}),
		TokensPerS: fp(900), PayloadBytes: 8192, WireBytes: 90, CompressionRatio: fp(91.02)}
	return &report.Report{
		SchemaVersion: 1, Scenario: report.ScenarioInfo{Name: "rich"}, StartedAt: t0.Add(-time.Minute), EndedAt: t0,
		Status:   report.StatusFail,
		RunOrder: []string{"sim", "route", "broken"},
		Runs: map[string]*report.Run{
			"sim": {Name: "sim", Status: report.RunOK, Target: report.Target{Name: "server", Kind: report.TargetEmbedded},
				PhaseOrder: []string{"warmup", "prefill", "prefix_cache", "chat", "agent", "load", "cap_rate", "cap_conc"},
				Phases: map[string]*report.Phase{
					"warmup": {Kind: report.KindWarmup, ServingMetrics: &report.ServingMetrics{Requests: 2, Succeeded: 2}},
					"prefill": {Kind: report.KindPrefill, ServingMetrics: m(4, 10, 11, 20, 21), ByPromptTokens: map[string]*report.Point{
						"256": {ServingMetrics: m(2, 10, 11), TargetPromptTokens: 256}, "1024": {ServingMetrics: m(2, 20, 21), TargetPromptTokens: 1024}}},
					"prefix_cache": {Kind: report.KindPrefixCache, ServingMetrics: m(2, 40, 5), Variants: map[string]*report.Point{
						"fresh": {ServingMetrics: m(1, 40)}, "identical": {ServingMetrics: m(1, 5), Speedup: fp(8)}}},
					"chat":  {Kind: report.KindSessions, ServingMetrics: m(2, 7, 9), ByTurn: map[string]*report.Point{"1": {ServingMetrics: m(1, 7)}, "2": {ServingMetrics: m(1, 9)}}},
					"agent": {Kind: report.KindAgent, ServingMetrics: m(1, 7), ByStep: map[string]*report.Point{"1": {ServingMetrics: m(1, 7)}}},
					"load": {Kind: report.KindLoad, ServingMetrics: m(8, 10, 20, 30, 10, 20, 30),
						Points: []*report.LoadPoint{point(1, 0), point(0, 4)}},
					"cap_rate": {Kind: report.KindCapacity, Capacity: &report.Capacity{By: "rate", MaxRatePerS: fp(7.5),
						Interval: report.Interval{Low: fp(7), High: fp(8.25), ConfidencePct: 95}, Confirmed: true, ProbeCount: 6}},
					"cap_conc": {Kind: report.KindCapacity, Capacity: &report.Capacity{By: "concurrency", MaxConcurrency: ip(4),
						Interval: report.Interval{Low: fp(4)}, ProbeCount: 3}},
				}},
			"route": {Name: "route", Status: report.RunOK, Target: report.Target{Name: "route", Kind: report.TargetSeam},
				PhaseOrder: []string{"decode"},
				Phases: map[string]*report.Phase{"decode": {Kind: report.KindDecode, SeamMetrics: seam,
					SeamsByName: map[string]*report.SeamMetrics{"head->tail": seam}}}},
			"broken": {Name: "broken", Status: report.RunError, Error: "connect refused", Target: report.Target{Name: "server", Kind: report.TargetOpenAI}},
		},
		Gates: []report.GateResult{
			{Name: "ttft under 50 ms", Status: report.StatusPass},
			{Name: "capacity ≥ 8/s", Status: report.StatusFail},
			{Name: "against main", Status: report.StatusSkipped},
		},
	}
}

// series is a WriteRequest's series by their labels, written as Prometheus
// does ({__name__="x", a="b"}).
func seriesByKey(t *testing.T, req *prompb.WriteRequest) map[string]prompb.TimeSeries {
	t.Helper()
	out := map[string]prompb.TimeSeries{}
	for _, ts := range req.Timeseries {
		out[key(ts.Labels)] = ts
	}
	return out
}

func key(ls []prompb.Label) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, l.Name+"="+l.Value)
	}
	return strings.Join(parts, ",")
}

func name(ls []prompb.Label) string {
	for _, l := range ls {
		if l.Name == model.MetricNameLabel {
			return l.Value
		}
	}
	return ""
}

// Every metric of the report's table has a family, and every name and
// label is one any Prometheus takes.
func TestCatalog(t *testing.T) {
	fams, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range fams {
		if seen[f.Name] {
			t.Errorf("family %s declared twice", f.Name)
		}
		seen[f.Name] = true
		if !model.LegacyValidation.IsValidMetricName(f.Name) || !strings.HasPrefix(f.Name, Prefix) {
			t.Errorf("%s: not a metric name starting %s", f.Name, Prefix)
		}
		if strings.HasSuffix(f.Name, "_ms") || strings.Contains(f.Name, "_per_s_") || strings.HasSuffix(f.Name, "_per_s") {
			t.Errorf("%s: not in base units", f.Name)
		}
		if f.Help == "" {
			t.Errorf("%s: no help", f.Name)
		}
		for _, l := range f.Labels {
			if !model.LegacyValidation.IsValidLabelName(l) || !slices.Contains(ReservedLabels(), l) {
				t.Errorf("%s: label %q is not a valid one reserved from users", f.Name, l)
			}
		}
		if !slices.IsSorted(f.Labels) || !slices.Contains(f.Labels, LabelScenario) {
			t.Errorf("%s: labels %v not sorted or without scenario", f.Name, f.Labels)
		}
	}
	for _, m := range report.Metrics {
		n, _, _, ok := baseName(m.Key, m.Unit)
		if !ok || !seen[n] || !seen[n+"_mean"] || !seen[n+"_count"] {
			t.Errorf("report metric %s (%s) has no families", m.Key, m.Unit)
		}
	}
	for _, want := range []string{"tollgate_ttft_seconds", "tollgate_tpot_seconds", "tollgate_decode_tokens_per_second",
		"tollgate_prompt_tokens", "tollgate_gate_passed", "tollgate_capacity_rate_per_second"} {
		if !seen[want] {
			t.Errorf("no family %s", want)
		}
	}
}

// Build writes only the catalog's families, each series with exactly its
// family's labels and the user's, sorted, at the report's end; the
// catalog has no family that no report fills.
func TestBuildFollowsCatalog(t *testing.T) {
	fams, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Family{}
	for _, f := range fams {
		byName[f.Name] = f
	}
	user := []Label{{"branch", "main"}, {"zone", "eu-1"}}
	written := map[string]bool{}
	for _, rc := range append(testfixture.Reports(), struct {
		Name   string
		Report func(testing.TB) *report.Report
	}{"rich", func(testing.TB) *report.Report { return richReport() }}) {
		t.Run(rc.Name, func(t *testing.T) {
			for _, r := range []*report.Report{rc.Report(t), testfixture.RoundTrip(t, rc.Report(t))} {
				if r.EndedAt.IsZero() {
					r.EndedAt = time.Unix(1700000000, 0) // the route-session fixture pins wall-clock facts away
				}
				req, err := Build(r, user)
				if err != nil {
					t.Fatal(err)
				}
				if len(req.Timeseries) == 0 {
					t.Fatal("no series")
				}
				meta := map[string]bool{}
				for _, md := range req.Metadata {
					meta[md.MetricFamilyName] = true
				}
				keys := map[string]bool{}
				for _, ts := range req.Timeseries {
					n := name(ts.Labels)
					f, ok := byName[n]
					if !ok {
						t.Fatalf("series %s: not in the catalog", key(ts.Labels))
					}
					written[n] = true
					if !meta[n] {
						t.Errorf("%s has no metadata", n)
					}
					var got []string
					for _, l := range ts.Labels {
						if l.Value == "" {
							t.Errorf("%s: empty label %s", key(ts.Labels), l.Name)
						}
						if l.Name != model.MetricNameLabel && l.Name != "branch" && l.Name != "zone" {
							got = append(got, l.Name)
						}
					}
					if !slices.IsSortedFunc(ts.Labels, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) }) {
						t.Errorf("%s: labels not sorted", key(ts.Labels))
					}
					if !slices.Equal(got, f.Labels) {
						t.Errorf("%s: labels %v, the catalog says %v", key(ts.Labels), got, f.Labels)
					}
					if len(ts.Samples) != 1 || ts.Samples[0].Timestamp != r.EndedAt.UnixMilli() {
						t.Errorf("%s: samples %v, want one at %d", key(ts.Labels), ts.Samples, r.EndedAt.UnixMilli())
					}
					if keys[key(ts.Labels)] {
						t.Errorf("%s written twice", key(ts.Labels))
					}
					keys[key(ts.Labels)] = true
				}
			}
		})
	}
	for _, f := range fams {
		if !written[f.Name] {
			t.Errorf("no test report writes %s: fill it in richReport, or drop it from the catalog", f.Name)
		}
	}
}

// The values are the report's figures in base units: milliseconds ÷ 1000,
// percentages ÷ 100, min and max as quantiles 0 and 1.
func TestBuildValues(t *testing.T) {
	r := richReport()
	req, err := Build(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := seriesByKey(t, req)
	sim := "run=sim,scenario=rich"
	for _, c := range []struct {
		key  string
		want float64
	}{
		{"__name__=tollgate_ttft_seconds,phase=prefill,quantile=0.99," + sim + ",slice=1024,target=server", 21.0 / 1000},
		{"__name__=tollgate_ttft_seconds,phase=prefill,quantile=0," + sim + ",slice=256,target=server", 10.0 / 1000},
		{"__name__=tollgate_ttft_seconds,phase=prefill,quantile=1," + sim + ",slice=all,target=server", 21.0 / 1000},
		{"__name__=tollgate_ttft_seconds_mean,phase=prefill," + sim + ",slice=256,target=server", 10.5 / 1000},
		{"__name__=tollgate_ttft_seconds_count,phase=prefill," + sim + ",slice=256,target=server", 2},
		{"__name__=tollgate_tpot_seconds,phase=load,quantile=0.5," + sim + ",slice=concurrency 1,target=server", 1.5 / 1000},
		{"__name__=tollgate_decode_tokens_per_second,phase=load,quantile=0.5," + sim + ",slice=rate 4/s,target=server", 400},
		{"__name__=tollgate_ttft_seconds,phase=chat,quantile=0.5," + sim + ",slice=turn 2,target=server", 9.0 / 1000},
		{"__name__=tollgate_ttft_seconds,phase=agent,quantile=0.5," + sim + ",slice=step 1,target=server", 7.0 / 1000},
		{"__name__=tollgate_goodput_ratio,phase=load," + sim + ",slice=rate 4/s,target=server", 0.75},
		{"__name__=tollgate_offered_rate_per_second,phase=load," + sim + ",slice=rate 4/s,target=server", 4},
		{"__name__=tollgate_offered_concurrency,phase=load," + sim + ",slice=concurrency 1,target=server", 1},
		{"__name__=tollgate_queue_seconds,phase=load,quantile=0.99," + sim + ",slice=concurrency 1,target=server", 0.5 / 1000},
		{"__name__=tollgate_requests_failed,class=timeout_total,phase=load," + sim + ",slice=rate 4/s,target=server", 1},
		{"__name__=tollgate_requests_failed,class=connect,phase=load," + sim + ",slice=rate 4/s,target=server", 0},
		{"__name__=tollgate_requests,phase=warmup," + sim + ",slice=all,target=server", 2},
		{"__name__=tollgate_speedup_ratio,phase=prefix_cache," + sim + ",slice=identical,target=server", 8},
		{"__name__=tollgate_capacity_rate_per_second,estimate=found,phase=cap_rate," + sim + ",slice=all,target=server", 7.5},
		{"__name__=tollgate_capacity_rate_per_second,estimate=interval_high,phase=cap_rate," + sim + ",slice=all,target=server", 8.25},
		{"__name__=tollgate_capacity_concurrency,estimate=found,phase=cap_conc," + sim + ",slice=all,target=server", 4},
		{"__name__=tollgate_capacity_confirmed,phase=cap_conc," + sim + ",slice=all,target=server", 0},
		{"__name__=tollgate_seam_latency_seconds,phase=decode,quantile=1,run=route,scenario=rich,slice=head->tail,target=route", 2.0 / 1000},
		{"__name__=tollgate_run_ok,run=broken,scenario=rich,target=server", 0},
		{"__name__=tollgate_gate_passed,gate=ttft under 50 ms,scenario=rich,status=pass", 1},
		{"__name__=tollgate_gate_passed,gate=capacity ≥ 8/s,scenario=rich,status=fail", 0},
		{"__name__=tollgate_report_passed,scenario=rich,status=fail", 0},
	} {
		ts, ok := got[c.key]
		if !ok {
			t.Errorf("no series %s", c.key)
			continue
		}
		if v := ts.Samples[0].Value; v != c.want {
			t.Errorf("%s = %v, want %v", c.key, v, c.want)
		}
	}
	// Absent stays absent: the warmup measured nothing, and capacity by
	// concurrency found no interval high.
	for k := range got {
		if strings.Contains(k, "phase=warmup") && strings.Contains(k, "_seconds") ||
			strings.Contains(k, "estimate=interval_high,phase=cap_conc") {
			t.Errorf("%s written for a figure the report does not have", k)
		}
	}
}

// A report that was not gated has no verdict series; one without an end
// cannot be timed.
func TestBuildEdges(t *testing.T) {
	r := richReport()
	r.Status, r.Gates = report.StatusNotGated, nil
	req, err := Build(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range req.Timeseries {
		if n := name(ts.Labels); n == "tollgate_report_passed" || n == "tollgate_gate_passed" {
			t.Errorf("a report not gated writes %s", key(ts.Labels))
		}
	}
	r.EndedAt = time.Time{}
	if _, err := Build(r, nil); err == nil {
		t.Error("a report without ended_at was built")
	}
}

func TestParseLabels(t *testing.T) {
	got, err := ParseLabels([]string{"branch=main", "pr=1234", "note=a=b c"})
	if err != nil || !slices.Equal(got, []Label{{"branch", "main"}, {"pr", "1234"}, {"note", "a=b c"}}) {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, c := range []struct{ arg, want string }{
		{"branch", "want NAME=VALUE"},
		{"1st=x", `"1st" is not a label name`},
		{"team-name=x", `"team-name" is not a label name`},
		{"=x", `"" is not a label name`},
		{"__tenant=x", "reserved by Prometheus"},
		{"run=x", "tollgate sets run itself"},
		{"quantile=x", "tollgate sets quantile itself"},
		{"__name__=x", "reserved by Prometheus"},
		{"branch=", "an empty value"},
		{"branch=\xff", "not UTF-8"},
	} {
		_, err := ParseLabels([]string{c.arg})
		if !errors.Is(err, ErrLabel) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--label %q: %v, want ErrLabel saying %q", c.arg, err, c.want)
		}
	}
	if _, err := ParseLabels([]string{"a=1", "a=2"}); !errors.Is(err, ErrLabel) || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a label given twice: %v", err)
	}
}

// catalogLabels is the catalog's families by name, with their labels.
func catalogLabels(t *testing.T) map[string][]string {
	t.Helper()
	fams, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range fams {
		out[f.Name] = f.Labels
	}
	return out
}

// docs/report.md names every family tollgate writes (a summary family's
// _mean and _count with it).
func TestDocsNameEveryFamily(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for name := range catalogLabels(t) {
		base := strings.TrimSuffix(strings.TrimSuffix(name, "_mean"), "_count")
		if !strings.Contains(doc, "`"+base+"`") && !strings.Contains(doc, "`"+base+"{") {
			t.Errorf("docs/report.md does not name %s", base)
		}
	}
	for _, l := range ReservedLabels()[1:] {
		if !strings.Contains(doc, "`"+l+"`") {
			t.Errorf("docs/report.md does not name the label %s", l)
		}
	}
}
