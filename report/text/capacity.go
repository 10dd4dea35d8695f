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
	fmt.Fprintf(&b, "%s %s: capacity %s (%s; fails at %s, bound by %s; %s) — %d probes in %.1f s, precision %g %%, objectives: %s",
		run, phase, found, intervalAndHold(c), fail, c.BoundBy, c.Stop, c.ProbeCount, c.WallS, c.PrecisionPct, strings.Join(c.Objectives, ", "))
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
