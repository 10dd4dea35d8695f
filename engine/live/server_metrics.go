package live

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/report"
)

// metricsDelta reads the scrapes around a phase by metric type: counter
// deltas, gauges before and after, histogram and summary deltas. A labelled
// counter or histogram with no unlabelled series of its name is also summed
// over its label sets under the bare name, so a gate can read
// counters["vllm:prefix_cache_hits_total"] whatever the labels; so is a
// gauge with one label set alone.
func metricsDelta(before, after measure.Scrape) *report.ServerMetrics {
	prev := make(map[[2]string]measure.Series, len(before.Series))
	for _, s := range before.Series {
		prev[[2]string{kind(s.Type), s.Key}] = s
	}
	bare := map[string]bool{}
	gaugeSets := map[string]int{}
	for _, s := range after.Series {
		if !s.Labelled {
			bare[kind(s.Type)+" "+s.Family] = true
		}
		if kind(s.Type) == measure.MetricGauge {
			gaugeSets[s.Family]++
		}
	}
	out := &report.ServerMetrics{Counters: map[string]float64{}, Gauges: map[string]report.Gauge{},
		Histograms: map[string]*report.HistogramDelta{}, Summaries: map[string]*report.SummaryDelta{}}
	warn := func(format string, args ...any) { out.Warnings = append(out.Warnings, fmt.Sprintf(format, args...)) }
	counterSums := map[string]float64{}
	histogramSums := map[string][]measure.Series{}
	for _, a := range after.Series {
		b, had := prev[[2]string{kind(a.Type), a.Key}]
		sum := a.Labelled && !bare[kind(a.Type)+" "+a.Family]
		switch kind(a.Type) {
		case measure.MetricCounter:
			d := a.Value - b.Value
			if d < 0 {
				warn("counter %s reset during the phase (%v before, %v after): counted from 0", a.Key, b.Value, a.Value)
				d = a.Value
			}
			if d == 0 {
				continue
			}
			out.Counters[a.Key] = d
			if sum {
				counterSums[a.Family] += d
			}
		case measure.MetricGauge:
			g := report.Gauge{After: a.Value, Max: a.Value}
			if had {
				g.Before, g.Max = &b.Value, max(a.Value, b.Value)
			}
			out.Gauges[a.Key] = g
			if sum && gaugeSets[a.Family] == 1 {
				// Gauges do not add up, but a lone label set is the gauge.
				out.Gauges[a.Family] = g
			}
		case measure.MetricHistogram:
			d, reset := histogramDelta(b, a)
			if reset {
				warn("histogram %s reset during the phase (count %v before, %v after): counted from 0", a.Key, b.Count, a.Count)
			}
			if d.Count <= 0 {
				continue
			}
			out.Histograms[a.Key] = histogramReport(d)
			if sum {
				histogramSums[a.Family] = append(histogramSums[a.Family], d)
			}
		case measure.MetricSummary:
			d := a.Count - b.Count
			sumDelta := a.Sum - b.Sum
			if d < 0 {
				warn("summary %s reset during the phase (count %v before, %v after): counted from 0", a.Key, b.Count, a.Count)
				d, sumDelta = a.Count, a.Sum
			}
			if d <= 0 {
				continue
			}
			sd := &report.SummaryDelta{Count: d, Sum: sumDelta, Mean: sumDelta / d}
			for _, q := range a.Quantiles {
				if sd.Quantiles == nil {
					sd.Quantiles = map[string]float64{}
				}
				sd.Quantiles[q.Q] = q.Value
			}
			out.Summaries[a.Key] = sd
		}
	}
	for name, v := range counterSums {
		out.Counters[name] = v
	}
	for name, ds := range histogramSums {
		if s, ok := sumHistograms(ds); ok {
			out.Histograms[name] = histogramReport(s)
		}
	}
	out.Warnings = append(union(before.Warnings, after.Warnings), out.Warnings...)
	if len(out.Counters)+len(out.Gauges)+len(out.Histograms)+len(out.Summaries)+len(out.Warnings) == 0 {
		return nil
	}
	out.Counters = nilIfEmpty(out.Counters)
	out.Gauges = nilIfEmpty(out.Gauges)
	out.Histograms = nilIfEmpty(out.Histograms)
	out.Summaries = nilIfEmpty(out.Summaries)
	return out
}

// kind groups untyped series with gauges: a value with no declared meaning
// is only its current value.
func kind(t string) string {
	if t == measure.MetricUntyped {
		return measure.MetricGauge
	}
	return t
}

func nilIfEmpty[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

// union is a's warnings then b's not in a: the same bad line is usually in
// both scrapes.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, w := range b {
		if !slices.Contains(a, w) {
			out = append(out, w)
		}
	}
	return out
}

// histogramDelta is after − before by bucket. A histogram whose count or a
// bucket went down, or whose buckets changed, restarted: it counts from 0.
func histogramDelta(before, after measure.Series) (measure.Series, bool) {
	d := after
	d.Buckets = slices.Clone(after.Buckets)
	if before.Type == "" {
		return d, false
	}
	if after.Count < before.Count || len(after.Buckets) != len(before.Buckets) {
		return d, true
	}
	for i, b := range before.Buckets {
		if b.LE != after.Buckets[i].LE || after.Buckets[i].Count < b.Count {
			return after, true
		}
		d.Buckets[i].Count -= b.Count
	}
	d.Count -= before.Count
	d.Sum -= before.Sum
	return d, false
}

// sumHistograms adds histograms of one family over their label sets; it
// needs one bucket layout, since counts under different bounds do not add.
func sumHistograms(hs []measure.Series) (measure.Series, bool) {
	if len(hs) == 1 {
		// One label set observed anything: the sum is that series.
		return hs[0], true
	}
	s := hs[0]
	s.Buckets = slices.Clone(s.Buckets)
	for _, h := range hs[1:] {
		if len(h.Buckets) != len(s.Buckets) {
			return s, false
		}
		for i, b := range h.Buckets {
			if b.LE != s.Buckets[i].LE {
				return s, false
			}
			s.Buckets[i].Count += b.Count
		}
		s.Count += h.Count
		s.Sum += h.Sum
	}
	return s, true
}

func histogramReport(d measure.Series) *report.HistogramDelta {
	h := &report.HistogramDelta{Count: d.Count, Sum: d.Sum, Mean: d.Sum / d.Count, Buckets: make(map[string]float64, len(d.Buckets))}
	for _, b := range d.Buckets {
		h.Buckets[b.LE] = b.Count
	}
	for q, p := range map[float64]**float64{0.5: &h.P50, 0.9: &h.P90, 0.99: &h.P99} {
		if v, ok := bucketQuantile(q, d.Buckets); ok {
			*p = &v
		}
	}
	return h
}

// bucketQuantile is Prometheus' histogram_quantile over cumulative buckets
// sorted by bound, +Inf last: linear interpolation within the bucket the
// rank falls in (from 0 in the first bucket), the highest finite bound for
// a rank in the +Inf bucket. It needs a finite bucket and an observation.
func bucketQuantile(q float64, buckets []measure.Bucket) (float64, bool) {
	n := len(buckets)
	if n < 2 || !math.IsInf(buckets[n-1].UpperBound, 1) || buckets[n-1].Count <= 0 {
		return 0, false
	}
	// Counts read from two scrapes need not be monotonic; Prometheus fixes
	// them the same way.
	cum := make([]float64, n)
	for i, b := range buckets {
		cum[i] = b.Count
		if i > 0 {
			cum[i] = max(cum[i], cum[i-1])
		}
	}
	rank := q * cum[n-1]
	b := sort.Search(n-1, func(i int) bool { return cum[i] >= rank })
	switch {
	case b == n-1:
		return buckets[n-2].UpperBound, true
	case b == 0 && buckets[0].UpperBound <= 0:
		return buckets[0].UpperBound, true
	}
	start, end, count := 0.0, buckets[b].UpperBound, cum[b]
	if b > 0 {
		start = buckets[b-1].UpperBound
		count -= cum[b-1]
		rank -= cum[b-1]
	}
	return start + (end-start)*(rank/count), true
}
