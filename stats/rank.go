package stats

import "math"

// rankSlack absorbs the rounding in n·p/100 — p's decimal-to-binary error
// plus one multiply and one divide, a few ulps — so that a percentile the
// caller wrote as a decimal (99.9) lands on the rank exact decimal arithmetic
// gives instead of the next one up. It is far below the gap between
// n·p/100 and the nearest integer for any real n and p with a few decimals.
const rankSlack = 8.0 / (1 << 53)

// Rank returns the 1-based nearest rank ceil(n·p/100), clamped to 1..n.
// It is the one definition of a percentile in tollgate: the histogram,
// report.NewStat, the bootstrap in report/compare and the HTML CDF markers
// all call it, so a p95 means the same everywhere.
func Rank(n int64, p float64) int64 {
	x := float64(n) * p / 100
	if k := math.Round(x); math.Abs(x-k) <= x*rankSlack {
		x = k
	}
	return min(max(int64(math.Ceil(x)), 1), n)
}

// NearestRank returns the p-th percentile (0 ≤ p ≤ 100) of sorted values by
// nearest rank: the value of rank Rank(len(sorted), p). Nearest rank always
// returns an observed value, so a gate compares against something that
// happened. sorted must be non-empty and in ascending order.
func NearestRank(sorted []float64, p float64) float64 {
	return sorted[Rank(int64(len(sorted)), p)-1]
}
