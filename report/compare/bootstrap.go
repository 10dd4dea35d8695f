package compare

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/stats"
)

// Interval is a confidence interval of new − old, in the metric's unit.
type Interval struct {
	Lo, Hi float64
}

// Excludes0 reports whether the interval lies wholly on one side of zero.
func (iv Interval) Excludes0() bool { return iv.Lo > 0 || iv.Hi < 0 }

// bootstrapStats are the statistics the bootstrap gives intervals for. The
// minimum and maximum are left out: a resample can never go beyond the
// observed extremes, so their percentile intervals say nothing useful.
func bootstrapStats() []string { return []string{"p50", "p90", "p95", "p99", "mean"} }

// bootstrap estimates, for each statistic in bootstrapStats, a confidence
// interval of stat(new) − stat(old) by the percentile bootstrap: it draws
// resamples of each side with replacement (same sizes as the originals),
// computes the statistic of each, and takes the (1−conf)/2 and (1+conf)/2
// quantiles of the differences.
//
// Why the bootstrap: latency and throughput distributions are skewed,
// multimodal (a cache hit or miss, a GC pause) and far from normal, and the
// repetitions typical here are few (3 to 50). A t-test assumes normal means
// and says nothing about medians; the bootstrap assumes only that each
// report's samples are independent draws from its distribution, works on the
// very statistic a gate reads (the nearest-rank p50 of the report), and gives
// an interval a reader can check against the threshold ("+0.8 to +2.1 ms"),
// not just a p-value. It is seeded by the metric's path, so a comparison is
// reproducible byte for byte.
//
// Its weak spot is very small samples, where percentile intervals are too
// narrow; Options.MinSamples keeps it from claiming anything below that size
// (see DefaultMinSamples).
//
// Each resample is drawn as counts over the sorted original, so a statistic
// costs O(n) rather than a sort.
func bootstrap(old, new []float64, resamples int, conf float64, seed uint64, path string) map[string]Interval {
	o := append([]float64(nil), old...)
	n := append([]float64(nil), new...)
	slices.Sort(o)
	slices.Sort(n)
	h := fnv.New64a()
	_, _ = h.Write([]byte(path)) // hash.Hash.Write never fails
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))

	stats := bootstrapStats()
	diffs := make([][]float64, len(stats))
	for i := range diffs {
		diffs[i] = make([]float64, resamples)
	}
	oc, nc := make([]int, len(o)), make([]int, len(n))
	ov, nv := make([]float64, len(stats)), make([]float64, len(stats))
	for r := 0; r < resamples; r++ {
		resampleStats(o, oc, rng, ov)
		resampleStats(n, nc, rng, nv)
		for i := range stats {
			diffs[i][r] = nv[i] - ov[i]
		}
	}
	out := make(map[string]Interval, len(stats))
	lo, hi := (1-conf)/2, (1+conf)/2
	for i, s := range stats {
		d := diffs[i]
		slices.Sort(d)
		out[s] = Interval{Lo: quantile(d, lo), Hi: quantile(d, hi)}
	}
	return out
}

// resampleStats draws len(sorted) values with replacement from sorted and
// writes p50, p90, p95, p99 (nearest rank, as the report computes them) and
// the mean of the resample into out.
func resampleStats(sorted []float64, counts []int, rng *rand.Rand, out []float64) {
	m := len(sorted)
	clear(counts)
	sum := 0.0
	for k := 0; k < m; k++ {
		j := rng.IntN(m)
		counts[j]++
		sum += sorted[j]
	}
	ranks := [4]int{50, 90, 95, 99}
	var want [4]int // 1-based ranks: ceil(m·p/100)
	for i, p := range ranks {
		want[i] = int(stats.Rank(int64(m), float64(p)))
	}
	seen, next := 0, 0
	for j, c := range counts {
		seen += c
		for next < len(want) && seen >= want[next] {
			out[next] = sorted[j]
			next++
		}
		if next == len(want) {
			break
		}
	}
	out[4] = sum / float64(m)
}

// quantile is the q-quantile of sorted by linear interpolation between ranks.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(i)
	return sorted[i] + frac*(sorted[i+1]-sorted[i])
}

// statOf reads a named statistic of a report.Stat.
func statOf(s report.Stat, name string) *float64 {
	switch name {
	case "p50":
		return s.P50
	case "p90":
		return s.P90
	case "p95":
		return s.P95
	case "p99":
		return s.P99
	case "mean":
		return s.Mean
	case "min":
		return s.Min
	case "max":
		return s.Max
	}
	return nil
}
