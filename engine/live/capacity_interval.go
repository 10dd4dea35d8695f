package live

import (
	"math"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// z95 is the standard normal quantile of a two-sided 95 % interval.
const z95 = 1.959964

// objectiveBand is the 95 % interval of objective o's statistic (whose
// value over the window is val) were the window's requests drawn again:
// order statistics for a percentile, the normal interval for a mean and
// for error_rate and goodput_pct (a proportion, from the counts in f: a
// window with no error has none to resample); min and max are their own
// interval, as the sample's extremes. Nil ends when the window has
// nothing to draw them from.
func objectiveBand(o scenarios.Objective, val float64, vals []float64, f probeFigures) (lo, hi *float64) {
	switch o.Metric {
	case "error_rate":
		return proportionBand(f.m.Errors.Count, f.m.Requests, 1)
	case "goodput_pct":
		return proportionBand(f.good, f.m.Requests+f.unfinished, 100)
	}
	if len(vals) == 0 {
		return nil, nil
	}
	s := sortedCopy(vals)
	n := float64(len(s))
	switch o.Stat {
	case "min", "max":
		return report.F(val), report.F(val)
	case "mean":
		var sum, sq float64
		for _, v := range s {
			sum += v
		}
		mean := sum / n
		for _, v := range s {
			sq += (v - mean) * (v - mean)
		}
		if len(s) < 2 {
			return report.F(mean), report.F(mean)
		}
		half := z95 * math.Sqrt(sq/(n-1)/n)
		return report.F(mean - half), report.F(mean + half)
	}
	q := map[string]float64{"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}[o.Stat]
	// Ranks (1-based) n·q ∓ z·√(n·q·(1−q)), widened to whole ranks and
	// clamped to the sample: for p99 under a few hundred requests the upper
	// end is the sample's maximum.
	sd := z95 * math.Sqrt(n*q*(1-q))
	l := int(math.Max(1, math.Floor(n*q-sd)))
	h := int(math.Min(n, math.Ceil(n*q+sd)))
	return report.F(math.Min(s[l-1], val)), report.F(math.Max(s[h-1], val))
}

// proportionBand is the normal 95 % interval of the proportion x ÷ n
// (p ∓ 1.96·√(p·(1−p) ÷ n), within [0, 1]), times scale.
func proportionBand(x, n int, scale float64) (lo, hi *float64) {
	if n <= 0 {
		return nil, nil
	}
	p := float64(x) / float64(n)
	half := z95 * math.Sqrt(p*(1-p)/float64(n))
	return report.F(scale * math.Max(0, p-half)), report.F(scale * math.Min(1, p+half))
}

// capacityInterval bounds the capacity found (0: none) from the probes'
// evidence: low is the highest value at or below it whose probe passed
// clearly, high the lowest value above it whose probe failed clearly. A
// probe that passed or failed within the noise of its objectives narrows
// the bracket but not the interval.
func capacityInterval(probes []*report.CapacityProbe, found float64) report.Interval {
	iv := report.Interval{ConfidencePct: report.IntervalConfidencePct}
	for _, pr := range probes {
		if !pr.Clear {
			continue
		}
		if pr.Verdict == report.ProbePass && found > 0 && pr.Value <= found && (iv.Low == nil || pr.Value > *iv.Low) {
			iv.Low = report.F(pr.Value)
		}
		if pr.Verdict != report.ProbePass && pr.Value > found && (iv.High == nil || pr.Value < *iv.High) {
			iv.High = report.F(pr.Value)
		}
	}
	return iv
}
