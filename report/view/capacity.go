package view

import (
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
)

// CapacityUnit is the unit of a capacity search's values: "/s" by rate,
// " in flight" by concurrency.
func CapacityUnit(c *report.Capacity) string {
	if c.By == "concurrency" {
		return " in flight"
	}
	return "/s"
}

// CapacityBound says what bound a capacity search, the one sentence every
// output shows: where it failed and which objective failed there, with
// its value and the others that failed too ("fails at 9.3/s, bound by
// tpot_ms.p99 <= 100 (was 131); also failed: ttft_ms.p99 <= 2000").
func CapacityBound(c *report.Capacity) string {
	unit := CapacityUnit(c)
	if c.Bracket.Fail == nil {
		return fmt.Sprintf("nothing failed up to max %.4g%s", c.Max, unit)
	}
	s := fmt.Sprintf("fails at %.4g%s, bound by %s", *c.Bracket.Fail, unit, c.BoundBy)
	if c.BoundValue != nil {
		s += fmt.Sprintf(" (was %.4g)", *c.BoundValue)
	}
	if len(c.AlsoFailed) > 0 {
		s += "; also failed: " + strings.Join(c.AlsoFailed, ", ")
	}
	return s
}

// CapacityFound is the value a capacity search found ("7.781/s",
// "12 in flight"), or "none found".
func CapacityFound(c *report.Capacity) string {
	switch {
	case c.MaxRatePerS != nil:
		return fmt.Sprintf("%.4g%s", *c.MaxRatePerS, CapacityUnit(c))
	case c.MaxConcurrency != nil:
		return fmt.Sprintf("%d%s", *c.MaxConcurrency, CapacityUnit(c))
	}
	return "none found"
}

// CapacitySearch is one capacity phase of a run.
type CapacitySearch struct {
	Run, Phase string
	Capacity   *report.Capacity
}

// Capacities are the report's capacity searches, run by run, phase by
// phase, in the report's order.
func Capacities(r *report.Report) []CapacitySearch {
	var out []CapacitySearch
	for _, name := range r.RunNames() {
		run := r.Runs[name]
		for _, pn := range run.PhaseOrder {
			if ph := run.Phases[pn]; ph != nil && ph.Capacity != nil {
				out = append(out, CapacitySearch{Run: name, Phase: pn, Capacity: ph.Capacity})
			}
		}
	}
	return out
}
