// Package rounds holds what the benches under bench/ print about their
// rounds and their host, so each says it the same way: medians by the
// project's one rank rule, the load average, the CPUs.
package rounds

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/stats"
)

// Median is the 50th percentile of xs by stats.NearestRank; NaN when xs
// is empty or any value is NaN (a figure a client does not have).
func Median(xs []float64) float64 {
	if len(xs) == 0 || slices.ContainsFunc(xs, math.IsNaN) {
		return math.NaN()
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return stats.NearestRank(xs, 50)
}

// Of is f of each of xs.
func Of[T any](xs []T, f func(T) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// MS formats a latency in ms, "-" for NaN, in a fixed width.
func MS(x float64) string {
	if math.IsNaN(x) {
		return "     -"
	}
	return fmt.Sprintf("%6.3f ms", x)
}

// LoadAvg is the 1, 5 and 15-minute load averages ("?" off Linux).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// NumCPU is the CPUs /proc/cpuinfo lists (0 off Linux): the machine's,
// not this process's affinity.
func NumCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}
