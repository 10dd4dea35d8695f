package compare

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

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
	ov, nv := resampleAll(old, new, resamples, seed, path)
	stats := bootstrapStats()
	out := make(map[string]Interval, len(stats))
	lo, hi := (1-conf)/2, (1+conf)/2
	d := make([]float64, resamples)
	for i, s := range stats {
		for r := range d {
			d[r] = nv[i][r] - ov[i][r]
		}
		slices.Sort(d)
		out[s] = Interval{Lo: quantile(d, lo), Hi: quantile(d, hi)}
	}
	return out
}

// relChanges is the bootstrap distribution, per statistic in
// bootstrapStats, of the percent change (new − old) ÷ |old| × 100, sorted:
// what a --fail-on threshold is tested against.
func relChanges(old, new []float64, resamples int, seed uint64, path string) map[string][]float64 {
	ov, nv := resampleAll(old, new, resamples, seed, path)
	out := map[string][]float64{}
	for i, s := range bootstrapStats() {
		d := make([]float64, resamples)
		for r := range d {
			o, n := ov[i][r], nv[i][r]
			switch {
			case o == n:
				d[r] = 0
			case o == 0:
				d[r] = math.Copysign(math.Inf(1), n)
			default:
				d[r] = (n - o) / math.Abs(o) * 100
			}
		}
		slices.Sort(d)
		out[s] = d
	}
	return out
}

// pValue is the one-sided bootstrap p-value of "the change is within t":
// the share of resampled changes on the threshold's good side of its limit
// (at most +N% for a rise, at least −N% for a drop), counted as
// (1 + k) ÷ (B + 1) so it is never 0. Small means the change is beyond the
// limit and beyond noise.
func pValue(sorted []float64, t Threshold) float64 {
	var k int
	if t.Increase {
		k = sort.SearchFloat64s(sorted, math.Nextafter(t.Percent, math.Inf(1))) // values ≤ +N
	} else {
		k = len(sorted) - sort.SearchFloat64s(sorted, -t.Percent) // values ≥ −N
	}
	return float64(1+k) / float64(len(sorted)+1)
}

// resampleAll draws resamples of each side with replacement (the sizes of
// the originals) and returns, per statistic in bootstrapStats and per
// resample, the statistic of the old and the new resample. It is seeded by
// the metric's path, so a comparison is reproducible byte for byte.
func resampleAll(old, new []float64, resamples int, seed uint64, path string) (ov, nv [][]float64) {
	o := append([]float64(nil), old...)
	n := append([]float64(nil), new...)
	slices.Sort(o)
	slices.Sort(n)
	h := fnv.New64a()
	_, _ = h.Write([]byte(path)) // hash.Hash.Write never fails
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))

	k := len(bootstrapStats())
	ov, nv = make([][]float64, k), make([][]float64, k)
	for i := range ov {
		ov[i], nv[i] = make([]float64, resamples), make([]float64, resamples)
	}
	oc, nc := make([]int, len(o)), make([]int, len(n))
	os, ns := make([]float64, k), make([]float64, k)
	for r := 0; r < resamples; r++ {
		resampleStats(o, oc, rng, os)
		resampleStats(n, nc, rng, ns)
		for i := range k {
			ov[i][r], nv[i][r] = os[i], ns[i]
		}
	}
	return ov, nv
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
