package live

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/report"
)

func counter(key, family string, v float64) measure.Series {
	return measure.Series{Key: key, Family: family, Labelled: key != family, Type: measure.MetricCounter, Value: v}
}

func gauge(key, typ string, v float64) measure.Series {
	return measure.Series{Key: key, Family: key, Type: typ, Value: v}
}

// hist builds a histogram from finite bounds and cumulative counts, the
// last count being the +Inf bucket's.
func hist(key, family string, sum float64, les []float64, counts ...float64) measure.Series {
	s := measure.Series{Key: key, Family: family, Labelled: key != family, Type: measure.MetricHistogram, Sum: sum, Count: counts[len(counts)-1]}
	for i, c := range counts {
		b := measure.Bucket{UpperBound: math.Inf(1), LE: "+Inf", Count: c}
		if i < len(les) {
			b.UpperBound, b.LE = les[i], strconv.FormatFloat(les[i], 'g', -1, 64)
		}
		s.Buckets = append(s.Buckets, b)
	}
	return s
}

func summary(key string, count, sum float64, qs ...measure.Quantile) measure.Series {
	return measure.Series{Key: key, Family: key, Type: measure.MetricSummary, Count: count, Sum: sum, Quantiles: qs}
}

func scrape(s ...measure.Series) measure.Scrape { return measure.Scrape{Series: s} }

func f(v float64) *float64 { return &v }

// vLLM's TTFT bounds up to 0.25 s, as in engine/openai/testdata/metrics/vllm.txt.
var ttftLE = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25}

// wantHist is a histogram delta; quantiles are compared within 1e-12.
type wantHist struct {
	count, sum    float64
	p50, p90, p99 *float64
	buckets       map[string]float64
}

func TestMetricsDelta(t *testing.T) {
	const ttft = "vllm:time_to_first_token_seconds"
	k0, k1 := ttft+`{engine="0"}`, ttft+`{engine="1"}`
	tests := []struct {
		name          string
		before, after measure.Scrape
		counters      map[string]float64
		gauges        map[string]report.Gauge
		hists         map[string]wantHist
		summaries     map[string]*report.SummaryDelta
		warn          []string
		none          bool
	}{
		{
			name:     "counters: deltas, unchanged left out, labelled ones summed under the bare name",
			before:   scrape(counter(`hits_total{x="1"}`, "hits_total", 1), counter(`hits_total{x="2"}`, "hits_total", 5), counter("same_total", "same_total", 3)),
			after:    scrape(counter(`hits_total{x="1"}`, "hits_total", 4), counter(`hits_total{x="2"}`, "hits_total", 6), counter("same_total", "same_total", 3), counter("new_total", "new_total", 2)),
			counters: map[string]float64{`hits_total{x="1"}`: 3, `hits_total{x="2"}`: 1, "hits_total": 4, "new_total": 2},
		},
		{
			name: "a gauge's lone label set is also under the bare name; several are not",
			after: scrape(measure.Series{Key: `usage{m="a"}`, Family: "usage", Labelled: true, Type: measure.MetricGauge, Value: 0.5},
				measure.Series{Key: `run{e="0"}`, Family: "run", Labelled: true, Type: measure.MetricGauge, Value: 1},
				measure.Series{Key: `run{e="1"}`, Family: "run", Labelled: true, Type: measure.MetricGauge, Value: 2}),
			gauges: map[string]report.Gauge{
				`usage{m="a"}`: {After: 0.5, Max: 0.5}, "usage": {After: 0.5, Max: 0.5},
				`run{e="0"}`: {After: 1, Max: 1}, `run{e="1"}`: {After: 2, Max: 2},
			},
		},
		{
			name:     "a counter reset counts from 0 and says so",
			before:   scrape(counter("req_total", "req_total", 10)),
			after:    scrape(counter("req_total", "req_total", 3)),
			counters: map[string]float64{"req_total": 3},
			warn:     []string{"counter req_total reset during the phase (10 before, 3 after): counted from 0"},
		},
		{
			name:   "gauges and untyped: before, after and the larger; a new one has no before",
			before: scrape(gauge("running", measure.MetricGauge, 2), gauge("waiting", measure.MetricGauge, 5), gauge("temp", measure.MetricUntyped, 1)),
			after:  scrape(gauge("running", measure.MetricGauge, 5), gauge("waiting", measure.MetricGauge, 2), gauge("temp", measure.MetricUntyped, 1), gauge("fresh", measure.MetricGauge, 7)),
			gauges: map[string]report.Gauge{
				"running": {Before: f(2), After: 5, Max: 5},
				"waiting": {Before: f(5), After: 2, Max: 5},
				"temp":    {Before: f(1), After: 1, Max: 1},
				"fresh":   {After: 7, Max: 7},
			},
		},
		{
			// Delta buckets 0,0,0,0,2,6,8,10,10 | 10: p50 rank 5 in (0.04, 0.06]
			// holding 4 from 2: 0.04 + 0.02·3/4; p90 rank 9 in (0.08, 0.1]
			// holding 2 from 8: 0.08 + 0.02·1/2; p99 rank 9.9: 0.08 + 0.02·1.9/2.
			name:   "a histogram's bucket deltas, quantiles and the sum over label sets",
			before: scrape(hist(k0, ttft, 0.25, ttftLE, 0, 0, 0, 1, 2, 2, 2, 2, 2, 2), hist(k1, ttft, 1, ttftLE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
			after:  scrape(hist(k0, ttft, 1, ttftLE, 0, 0, 0, 1, 4, 8, 10, 12, 12, 12), hist(k1, ttft, 1, ttftLE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
			hists: map[string]wantHist{
				k0: {count: 10, sum: 0.75, p50: f(0.055), p90: f(0.09), p99: f(0.099),
					buckets: map[string]float64{"0.001": 0, "0.005": 0, "0.01": 0, "0.02": 0, "0.04": 2, "0.06": 6, "0.08": 8, "0.1": 10, "0.25": 10, "+Inf": 10}},
				ttft: {count: 10, sum: 0.75, p50: f(0.055), p90: f(0.09), p99: f(0.099),
					buckets: map[string]float64{"0.001": 0, "0.005": 0, "0.01": 0, "0.02": 0, "0.04": 2, "0.06": 6, "0.08": 8, "0.1": 10, "0.25": 10, "+Inf": 10}},
			},
		},
		{
			// Two label sets: buckets 1+1 ≤ 0.1, 3+1 ≤ 0.2, 4+2 ≤ +Inf.
			// p50 rank 3 in (0.1, 0.2] holding 2 from 2: 0.15; p90 and p99 in +Inf: 0.2.
			name: "label sets with one layout add up",
			after: scrape(hist(`h{a="1"}`, "h", 1, []float64{0.1, 0.2}, 1, 3, 4),
				hist(`h{a="2"}`, "h", 2, []float64{0.1, 0.2}, 1, 1, 2)),
			hists: map[string]wantHist{
				`h{a="1"}`: {count: 4, sum: 1, p50: f(0.15), p90: f(0.2), p99: f(0.2), buckets: map[string]float64{"0.1": 1, "0.2": 3, "+Inf": 4}},
				`h{a="2"}`: {count: 2, sum: 2, p50: f(0.1), p90: f(0.2), p99: f(0.2), buckets: map[string]float64{"0.1": 1, "0.2": 1, "+Inf": 2}},
				"h":        {count: 6, sum: 3, p50: f(0.15), p90: f(0.2), p99: f(0.2), buckets: map[string]float64{"0.1": 2, "0.2": 4, "+Inf": 6}},
			},
		},
		{
			name: "label sets with different layouts are not summed",
			after: scrape(hist(`h{a="1"}`, "h", 1, []float64{0.1}, 1, 2),
				hist(`h{a="2"}`, "h", 1, []float64{0.5}, 1, 2)),
			hists: map[string]wantHist{
				`h{a="1"}`: {count: 2, sum: 1, p50: f(0.1), p90: f(0.1), p99: f(0.1), buckets: map[string]float64{"0.1": 1, "+Inf": 2}},
				`h{a="2"}`: {count: 2, sum: 1, p50: f(0.5), p90: f(0.5), p99: f(0.5), buckets: map[string]float64{"0.5": 1, "+Inf": 2}},
			},
		},
		{
			name:   "a histogram reset counts from 0; one that observed nothing is left out",
			before: scrape(hist("h", "h", 9, []float64{1}, 5, 9), hist("idle", "idle", 1, []float64{1}, 1, 1)),
			after:  scrape(hist("h", "h", 2, []float64{1}, 2, 2), hist("idle", "idle", 1, []float64{1}, 1, 1)),
			hists:  map[string]wantHist{"h": {count: 2, sum: 2, p50: f(0.5), p90: f(0.9), p99: f(0.99), buckets: map[string]float64{"1": 2, "+Inf": 2}}},
			warn:   []string{"histogram h reset during the phase (count 9 before, 2 after): counted from 0"},
		},
		{
			name:      "a summary: count and sum deltas, the server's quantiles after",
			before:    scrape(summary("lat", 10, 5, measure.Quantile{Q: "0.5", Value: 0.4})),
			after:     scrape(summary("lat", 14, 7, measure.Quantile{Q: "0.5", Value: 0.45}, measure.Quantile{Q: "0.99", Value: 0.9})),
			summaries: map[string]*report.SummaryDelta{"lat": {Count: 4, Sum: 2, Mean: 0.5, Quantiles: map[string]float64{"0.5": 0.45, "0.99": 0.9}}},
		},
		{
			name:   "scrape warnings, the same one once",
			before: measure.Scrape{Warnings: []string{"line 3 dropped"}},
			after:  measure.Scrape{Warnings: []string{"line 3 dropped", "line 9 dropped"}},
			warn:   []string{"line 3 dropped", "line 9 dropped"},
		},
		{
			name:   "nothing changed, nothing lost: no server_metrics",
			before: scrape(counter("c", "c", 1)),
			after:  scrape(counter("c", "c", 1)),
			none:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := metricsDelta(tt.before, tt.after)
			if tt.none {
				if got != nil {
					t.Fatalf("got %+v, want nil", got)
				}
				return
			}
			if got == nil {
				t.Fatal("nil")
			}
			if !reflect.DeepEqual(got.Counters, tt.counters) {
				t.Errorf("counters %v, want %v", got.Counters, tt.counters)
			}
			if !reflect.DeepEqual(got.Gauges, tt.gauges) {
				t.Errorf("gauges %+v, want %+v", got.Gauges, tt.gauges)
			}
			if !reflect.DeepEqual(got.Summaries, tt.summaries) {
				t.Errorf("summaries %+v, want %+v", got.Summaries, tt.summaries)
			}
			if !reflect.DeepEqual(got.Warnings, tt.warn) {
				t.Errorf("warnings %q, want %q", got.Warnings, tt.warn)
			}
			if len(got.Histograms) != len(tt.hists) {
				t.Errorf("histograms %v, want %d", keysOf(got.Histograms), len(tt.hists))
			}
			for k, w := range tt.hists {
				h := got.Histograms[k]
				if h == nil {
					t.Errorf("no histogram %s", k)
					continue
				}
				if h.Count != w.count || math.Abs(h.Sum-w.sum) > 1e-12 || math.Abs(h.Mean-w.sum/w.count) > 1e-12 || !reflect.DeepEqual(h.Buckets, w.buckets) {
					t.Errorf("%s: count %v sum %v mean %v buckets %v, want %+v", k, h.Count, h.Sum, h.Mean, h.Buckets, w)
				}
				for name, q := range map[string][2]*float64{"p50": {h.P50, w.p50}, "p90": {h.P90, w.p90}, "p99": {h.P99, w.p99}} {
					if !near(q[0], q[1]) {
						t.Errorf("%s %s = %v, want %v", k, name, deref(q[0]), deref(q[1]))
					}
				}
			}
		})
	}
}

// TestBucketQuantile checks the interpolation against values computed by
// hand, Prometheus' histogram_quantile rules included.
func TestBucketQuantile(t *testing.T) {
	tests := []struct {
		name string
		q    float64
		h    measure.Series
		want *float64
	}{
		{"in the first bucket, from 0", 0.5, hist("h", "h", 0, []float64{0.1}, 4, 4), f(0.05)},
		{"between bounds", 0.75, hist("h", "h", 0, []float64{1, 2, 4}, 2, 4, 8, 8), f(3)},
		{"exactly at a bound", 0.5, hist("h", "h", 0, []float64{1, 2, 4}, 2, 4, 8, 8), f(2)},
		{"in the +Inf bucket: the highest finite bound", 0.9, hist("h", "h", 0, []float64{1, 2}, 2, 3, 4), f(2)},
		{"a first bound ≤ 0 is returned as is", 0.25, hist("h", "h", 0, []float64{-1, 0}, 2, 4, 4), f(-1)},
		{"non-monotonic counts are evened out", 0.5, hist("h", "h", 0, []float64{1, 2}, 5, 3, 6), f(0.6)},
		{"no observation", 0.5, hist("h", "h", 0, []float64{1}, 0, 0), nil},
		{"only the +Inf bucket", 0.5, hist("h", "h", 0, nil, 3), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := bucketQuantile(tt.q, tt.h.Buckets)
			var got *float64
			if ok {
				got = &v
			}
			if !near(got, tt.want) {
				t.Errorf("got %v, want %v", deref(got), deref(tt.want))
			}
		})
	}
}

func near(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return math.Abs(*a-*b) < 1e-12
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestServerMetricsOnTheSimulator: the simulator's /metrics, read around a
// phase, gives the phase's own TTFT histogram beside the client's ttft_ms,
// counters as deltas and gauges apart from them.
func TestServerMetricsOnTheSimulator(t *testing.T) {
	sc := parse(t, `
name: server-metrics
targets:
  sim: {kind: embedded, sim: {ttft_base: 20ms, decode_step: 1ms}}
phases:
  warmup: {requests: 2}
  decode: {prompt_tokens: 32, max_tokens: 4, repeat: 3}
`, nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	ph := r.Phases["decode"]
	if ph.ServerMetrics == nil {
		t.Fatalf("no server_metrics (note %q)", ph.ServerMetricsNote)
	}
	const ttft = "vllm:time_to_first_token_seconds"
	h := ph.ServerMetrics.Histograms[ttft]
	if h == nil {
		t.Fatalf("no %s histogram in %v", ttft, keysOf(ph.ServerMetrics.Histograms))
	}
	// The warmup's requests are the phase before's: only this phase's 3 count.
	if h.Count != 3 || h.Buckets["+Inf"] != 3 || h.P50 == nil || h.Mean <= 0 {
		t.Errorf("TTFT histogram %+v, want this phase's 3 requests", h)
	}
	// The server's TTFT (arrival to first token) is within the client's.
	if c := ph.TTFTMS.P50; c == nil || *h.P50*1000 > 2**c+100 {
		t.Errorf("server TTFT p50 %v s against the client's %v ms", *h.P50, deref(c))
	}
	if d := ph.ServerMetricsDelta["vllm:generation_tokens_total"]; d != 12 {
		t.Errorf("generation tokens delta %v, want 3 × 4", d)
	}
	if !reflect.DeepEqual(ph.ServerMetricsDelta, ph.ServerMetrics.Counters) {
		t.Errorf("server_metrics_delta %v is not the counters %v", ph.ServerMetricsDelta, ph.ServerMetrics.Counters)
	}
	for k := range ph.ServerMetricsDelta {
		if strings.HasPrefix(k, "vllm:num_requests_running") {
			t.Errorf("gauge %s among the counter deltas", k)
		}
	}
	g, ok := ph.ServerMetrics.Gauges["vllm:num_requests_running"]
	if !ok || g.Before == nil || g.Max < g.After {
		t.Errorf("running gauge %+v (%v) in %v", g, ok, keysOf(ph.ServerMetrics.Gauges))
	}
}
