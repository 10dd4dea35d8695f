package report

import (
	"cmp"
	"math"
	"slices"
	"strconv"
)

// RunNames lists the report's runs in run_order, then any run run_order
// omits, by name. Names without a run are left out, so a caller can index
// Runs without a nil check. Every writer and compare list runs this way.
func (r *Report) RunNames() []string {
	if r == nil {
		return nil
	}
	return ordered(r.RunOrder, r.Runs)
}

// PhaseNames lists a run's phases in phase_order, then any phase it omits,
// by name; names without a phase are left out.
func (run *Run) PhaseNames() []string {
	if run == nil {
		return nil
	}
	return ordered(run.PhaseOrder, run.Phases)
}

func ordered[V any](order []string, m map[string]*V) []string {
	seen := make(map[string]bool, len(m))
	out := make([]string, 0, len(m))
	for _, n := range order {
		if m[n] != nil && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	var rest []string
	for n, v := range m {
		if v != nil && !seen[n] {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// PointKeys orders the keys of a breakdown (ByPromptTokens or Variants):
// prefix-cache variants in VariantOrder, then prompt sizes by size
// (TargetPromptTokens, else the key read as a number), then anything else
// by name. Nil points are left out.
func PointKeys(m map[string]*Point) []string {
	keys := make([]string, 0, len(m))
	for k, p := range m {
		if p != nil {
			keys = append(keys, k)
		}
	}
	variant := func(k string) int {
		if i := slices.Index(VariantOrder(), k); i >= 0 {
			return i
		}
		return len(VariantOrder())
	}
	size := func(k string) float64 {
		if t := m[k].TargetPromptTokens; t > 0 {
			return float64(t)
		}
		if v, err := strconv.ParseFloat(k, 64); err == nil && !math.IsNaN(v) {
			return v
		}
		return math.Inf(1)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(variant(a), variant(b)), cmp.Compare(size(a), size(b)), cmp.Compare(a, b))
	})
	return keys
}
