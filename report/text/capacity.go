package text

import (
	"fmt"
	"io"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// writeCapacity prints each capacity search in a few lines: what it found,
// its bracket and what bound it, then its probes in order.
func writeCapacity(w io.Writer, r *report.Report) {
	for _, cs := range view.Capacities(r) {
		fmt.Fprintln(w, CapacityLines(cs.Run, cs.Phase, cs.Capacity))
	}
}

// CapacityLines is a capacity search in a few lines of text.
func CapacityLines(run, phase string, c *report.Capacity) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: capacity %s (%s; %s; %s) — %d probes in %.1f s, precision %g %%, objectives: %s",
		run, phase, view.CapacityFound(c), intervalAndHold(c), view.CapacityBound(c), c.Stop, c.ProbeCount, c.WallS, c.PrecisionPct, strings.Join(c.Objectives, ", "))
	var steps []string
	for _, p := range c.Probes {
		s := fmt.Sprintf("%.4g %s", p.Value, p.Verdict)
		if p.Step == report.StepHold {
			s += fmt.Sprintf(" (held %.3g s)", p.DurationS)
		}
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

// intervalAndHold says where the capacity lies and whether it was held:
// "95 % interval 28.5–33.9/s, held 5.2 s".
func intervalAndHold(c *report.Capacity) string {
	end := func(v *float64, none string) string {
		if v == nil {
			return none
		}
		return fmt.Sprintf("%.4g", *v)
	}
	iv := c.Interval
	s := "no interval (an older report)"
	if iv.ConfidencePct > 0 {
		s = fmt.Sprintf("%g %% interval %s–%s", iv.ConfidencePct, end(iv.Low, "?"), end(iv.High, "?"))
	}
	switch {
	case c.Confirmed && c.HoldS != nil:
		s += fmt.Sprintf(", held %.3g s", *c.HoldS)
	case c.HoldWantedS == nil:
		s += ", not held"
	case c.HoldS == nil:
		s += fmt.Sprintf(", not held: the budget had no room for its %.3g s hold", *c.HoldWantedS)
	default:
		s += ", not confirmed by a hold"
	}
	return s
}
