package report

import (
	"math"
	"sort"

	"github.com/tollgate-dev/tollgate/stats"
)

// Stat summarises a distribution. Over zero samples only Count (0) is
// present: an absent statistic makes a gate error instead of passing on a 0.
type Stat struct {
	Count int      `json:"count"`
	Mean  *float64 `json:"mean,omitempty"`
	Min   *float64 `json:"min,omitempty"`
	P50   *float64 `json:"p50,omitempty"`
	P90   *float64 `json:"p90,omitempty"`
	P95   *float64 `json:"p95,omitempty"`
	P99   *float64 `json:"p99,omitempty"`
	Max   *float64 `json:"max,omitempty"`
	// Histogram is the whole distribution, in a mergeable form (the samples
	// up to stats.ExactLimit, log-linear buckets beyond); present only in a
	// shard's report (tollgate run --shard) and a merge of shards, so that
	// tollgate merge can add distributions exactly.
	Histogram *stats.Histogram `json:"histogram,omitempty"`
}

// NewStat computes a Stat with nearest-rank percentiles (stats.NearestRank):
// the p-th percentile of n sorted values is the value at rank ceil(n·p/100),
// always an observed value, so a gate compares against something that happened.
func NewStat(values []float64) Stat {
	s := Stat{Count: len(values)}
	if len(values) == 0 {
		return s
	}
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	s.Mean = F(sum / float64(len(v)))
	s.Min, s.Max = F(v[0]), F(v[len(v)-1])
	s.P50 = F(stats.NearestRank(v, 50))
	s.P90 = F(stats.NearestRank(v, 90))
	s.P95 = F(stats.NearestRank(v, 95))
	s.P99 = F(stats.NearestRank(v, 99))
	return s
}

// F returns a pointer to a finite value, or nil for NaN and ±Inf, which JSON
// cannot carry and a gate must never read as a number.
func F(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// MS converts virtual or measured nanoseconds to milliseconds.
func MS(ns int64) float64 { return float64(ns) / 1e6 }

// StatFrom summarises a histogram: exact up to stats.ExactLimit samples,
// within stats.RelativeError (0.05 %) beyond, in bounded memory either way.
func StatFrom(h *stats.Histogram) Stat {
	s := Stat{Count: int(h.Count())}
	if s.Count == 0 {
		return s
	}
	s.Mean, s.Min, s.Max = F(h.Mean()), F(h.Min()), F(h.Max())
	s.P50, s.P90, s.P95, s.P99 = F(h.Quantile(50)), F(h.Quantile(90)), F(h.Quantile(95)), F(h.Quantile(99))
	return s
}

// StatWithHistogram is StatFrom with the histogram itself kept, so the
// distribution can be merged with others later (shard reports). An empty
// histogram is left out: there is nothing to merge.
func StatWithHistogram(h *stats.Histogram) Stat {
	s := StatFrom(h)
	if h.Count() > 0 {
		s.Histogram = h
	}
	return s
}

// Field is the statistic named name (mean, min, p50, p90, p95, p99, max);
// nil when the Stat has none or the name is not one of them.
func (s Stat) Field(name string) *float64 {
	switch name {
	case "mean":
		return s.Mean
	case "min":
		return s.Min
	case "p50":
		return s.P50
	case "p90":
		return s.P90
	case "p95":
		return s.P95
	case "p99":
		return s.P99
	case "max":
		return s.Max
	}
	return nil
}
