package text

import (
	"fmt"
	"io"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
)

// writeCapacity prints each capacity search in a few lines: what it found,
// its bracket and what bound it, then its probes in order.
func writeCapacity(w io.Writer, r *report.Report) {
	for _, name := range r.RunNames() {
		run := r.Runs[name]
		for _, pn := range run.PhaseOrder {
			ph := run.Phases[pn]
			if ph == nil || ph.Capacity == nil {
				continue
			}
			fmt.Fprintln(w, CapacityLines(name, pn, ph.Capacity))
		}
	}
}

// CapacityLines is a capacity search in a few lines of text.
func CapacityLines(run, phase string, c *report.Capacity) string {
	unit := "/s"
	if c.By == "concurrency" {
		unit = " in flight"
	}
	var b strings.Builder
	found := "none found"
	switch {
	case c.MaxRatePerS != nil:
		found = fmt.Sprintf("%.4g%s", *c.MaxRatePerS, unit)
	case c.MaxConcurrency != nil:
		found = fmt.Sprintf("%d%s", *c.MaxConcurrency, unit)
	}
	fail := "none up to max"
	if c.Bracket.Fail != nil {
		fail = fmt.Sprintf("%.4g", *c.Bracket.Fail)
	}
	fmt.Fprintf(&b, "%s %s: capacity %s (fails at %s, bound by %s; %s) — %d probes in %.1f s, precision %g %%, objectives: %s",
		run, phase, found, fail, c.BoundBy, c.Stop, c.ProbeCount, c.WallS, c.PrecisionPct, strings.Join(c.Objectives, ", "))
	var steps []string
	for _, p := range c.Probes {
		s := fmt.Sprintf("%.4g %s", p.Value, p.Verdict)
		if p.CutShort {
			s += " (cut short)"
		}
		steps = append(steps, s)
	}
	if len(steps) > 0 {
		fmt.Fprintf(&b, "\n  probes: %s", strings.Join(steps, " → "))
	}
	return b.String()
}
