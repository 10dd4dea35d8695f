package html

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// capacity draws each capacity search, one figure per objective: the
// objective's statistic of every probe against the offered load, passing,
// failing and saturated probes apart, the objective's limit as a
// horizontal line and the capacity found as a vertical one.
func (c *charts) capacity() []figure {
	var figs []figure
	for _, rn := range c.r.RunNames() {
		run := c.r.Runs[rn]
		for _, pn := range run.PhaseNames() {
			ph := run.Phases[pn]
			if ph == nil || ph.Capacity == nil || len(ph.Capacity.Probes) == 0 {
				continue
			}
			cp := ph.Capacity
			x := axis{Label: "offered rate", Unit: "req/s", Zero: true}
			if cp.By == "concurrency" {
				x = axis{Label: "concurrency", Unit: "streams", Zero: true, Log2: true}
			}
			for i, obj := range cp.Objectives {
				name, op, limit, ok := splitObjective(obj)
				if !ok {
					continue
				}
				var ss []series
				for k, verdict := range []string{report.ProbePass, report.ProbeFail, report.ProbeSaturated} {
					s := series{Name: verdict, Color: k, Marker: k}
					probes := slices.Clone(cp.Probes)
					slices.SortFunc(probes, func(a, b *report.CapacityProbe) int { return cmp.Compare(a.Value, b.Value) })
					for _, p := range probes {
						if p.Verdict != verdict || i >= len(p.Objectives) || p.Objectives[i].Value == nil || !finite(*p.Objectives[i].Value) {
							continue
						}
						v := *p.Objectives[i].Value
						tip := fmt.Sprintf("%s %s (%s): %s %s", x.Label, fmtNum(p.Value), p.Step, name, fmtNum(v))
						if p.CutShort {
							tip += ", cut short"
						}
						s.Pts = append(s.Pts, pt(p.Value, v, tip))
					}
					if len(s.Pts) > 0 {
						ss = append(ss, s)
					}
				}
				if len(ss) == 0 {
					continue
				}
				ch := lineChart{Title: fmt.Sprintf("Capacity search: %s against %s — %s · %s", name, x.Label, rn, pn),
					X: x, Y: axis{Label: name, Zero: true}, Series: ss,
					// The y axis names the statistic: the line's label is its limit.
					Rules: []rule{{V: limit, Label: "objective " + prettyOp(op) + " " + fmtNum(limit), Title: "objective " + obj}}}
				note := "Dashed: the objective's limit"
				found := cp.MaxRatePerS
				if cp.MaxConcurrency != nil {
					f := float64(*cp.MaxConcurrency)
					found = &f
				}
				if found != nil {
					ch.Rules = append(ch.Rules, rule{V: *found, Label: "capacity " + fmtNum(*found), OnX: true})
					note += " and the capacity found"
				}
				if cp.Bracket.Fail != nil {
					note += " (" + view.CapacityBound(cp) + ")"
				}
				figs = append(figs, ch.figure(note+"."))
			}
		}
	}
	return figs
}

// splitObjective reads "metric.stat <= limit" back into its name, its
// comparison and its limit.
func splitObjective(obj string) (name, op string, limit float64, ok bool) {
	for _, op := range []string{"<=", ">="} {
		if l, r, found := strings.Cut(obj, op); found {
			if _, err := fmt.Sscan(strings.TrimSpace(r), &limit); err != nil {
				return "", "", 0, false
			}
			return strings.TrimSpace(l), op, limit, true
		}
	}
	return "", "", 0, false
}

// prettyOp is a comparison as it is typeset.
func prettyOp(op string) string {
	switch op {
	case "<=":
		return "≤"
	case ">=":
		return "≥"
	}
	return op
}

// capacityView is a capacity search as its run's card shows it: what it
// found and why it stopped, then every probe in the order it ran.
type capacityView struct {
	Phase      string
	ValueHead  string // the probed value's column: "rate (req/s)" or "concurrency"
	Unit       string // the probed value's unit: " req/s" or " in flight"
	Facts      []kv
	Objectives []string
	Probes     []probeRow
}

// probeRow is one probe: its load, verdict, each objective's statistic,
// and why it ended and did not pass.
type probeRow struct {
	N                int
	Step, Value      string
	Found            bool // the capacity found: a passing probe of its value
	Verdict          badge
	Objectives       []objectiveCell
	Requests, Served string
	Unfinished       string
	Why              []string
}

type objectiveCell struct {
	Value, Interval string
	Pass            bool
}

func capacityViews(run *report.Run) []capacityView {
	var out []capacityView
	for _, pn := range run.PhaseNames() {
		ph := run.Phases[pn]
		if ph == nil || ph.Capacity == nil {
			continue
		}
		out = append(out, capacityViewOf(pn, ph.Capacity))
	}
	return out
}

func capacityViewOf(pn string, c *report.Capacity) capacityView {
	v := capacityView{Phase: pn, ValueHead: "rate (req/s)", Objectives: c.Objectives}
	unit := " req/s"
	found := c.MaxRatePerS
	if c.By == "concurrency" {
		v.ValueHead, unit = "concurrency", " in flight"
		if c.MaxConcurrency != nil {
			f := float64(*c.MaxConcurrency)
			found = &f
		}
	}
	what := "none found: no probe passed"
	if found != nil {
		what = fmtNum(*found) + unit
	}
	v.Unit = unit
	v.Facts = append(v.Facts, kv{"capacity", what})
	if iv := c.Interval; iv.ConfidencePct > 0 {
		end := func(p *float64) string {
			if p == nil {
				return "?"
			}
			return fmtNum(*p)
		}
		v.Facts = append(v.Facts, kv{fmt.Sprintf("%g %% interval", iv.ConfidencePct), end(iv.Low) + " – " + end(iv.High) + unit})
	}
	v.Facts = append(v.Facts, kv{"hold", holdText(c)})
	v.Facts = append(v.Facts, kv{"what bound it", view.CapacityBound(c)},
		kv{"search stopped", stopText(c)},
		kv{"probes", fmt.Sprintf("%d in %.1f s", c.ProbeCount, c.WallS)})
	for i, p := range c.Probes {
		if p == nil {
			continue
		}
		row := probeRow{N: i + 1, Step: p.Step, Value: fmtNum(p.Value), Verdict: statusBadge(p.Verdict),
			Found:    found != nil && p.Verdict == report.ProbePass && p.Value == *found,
			Requests: fmt.Sprintf("%d/%d", p.Succeeded, p.Requests),
			Served:   view.Num(p.AchievedRatePerS, "%.2f") + " / " + view.Num(p.ServedPerS, "%.2f")}
		if p.Verdict == report.ProbeFail {
			row.Verdict = badge{"fail", "fail", "✗"}
		}
		if p.Verdict == report.ProbeSaturated {
			row.Verdict = badge{"saturated", "fail", "⊘"}
		}
		if p.Unfinished > 0 {
			row.Unfinished = fmt.Sprintf("%d unfinished", p.Unfinished)
		}
		byObj := map[string]report.ObjectiveValue{}
		for _, o := range p.Objectives {
			byObj[o.Objective] = o
		}
		for _, obj := range c.Objectives {
			o, ok := byObj[obj]
			cell := objectiveCell{Value: "–", Pass: !ok || o.Pass}
			if ok && o.Value != nil {
				cell.Value = fmtNum(*o.Value)
				if o.Low != nil && o.High != nil && *o.Low != *o.High {
					cell.Interval = fmtNum(*o.Low) + "–" + fmtNum(*o.High)
				}
			}
			row.Objectives = append(row.Objectives, cell)
		}
		row.Why = probeWhy(p, c.Objectives)
		v.Probes = append(v.Probes, row)
	}
	return v
}

// probeWhy says how a probe ended (its full window, held, or cut short),
// why it did not pass, and the saturation signals its reasons leave out.
// A reason that an objective failed ("ttft_ms.p99 <= 250: was 350.8") is
// left to the objective's own column, which shows the value.
func probeWhy(p *report.CapacityProbe, objectives []string) []string {
	var why []string
	switch {
	case p.CutShort:
		why = append(why, fmt.Sprintf("cut short after %.3g s by saturation", p.DurationS))
	case p.Step == report.StepHold:
		why = append(why, fmt.Sprintf("held %.3g s", p.DurationS))
	default:
		why = append(why, fmt.Sprintf("ran its %.3g s window", p.DurationS))
	}
	for _, r := range p.Reasons {
		if !slices.ContainsFunc(objectives, func(o string) bool { return strings.HasPrefix(r, o+": ") }) {
			why = append(why, r)
		}
	}
	for _, s := range p.Saturation {
		if !slices.ContainsFunc(p.Reasons, func(r string) bool { return strings.Contains(r, s) }) {
			why = append(why, "signal: "+s)
		}
	}
	if !p.Clear && slices.ContainsFunc(p.Objectives, func(o report.ObjectiveValue) bool { return o.Low != nil && o.High != nil }) {
		why = append(why, "not clear of the noise: an objective's interval reaches across its limit")
	}
	return why
}

// holdText says whether the found value was held for the sustained window.
func holdText(c *report.Capacity) string {
	switch {
	case c.Confirmed && c.HoldS != nil:
		return fmt.Sprintf("held %.3g s: confirmed", *c.HoldS)
	case c.HoldWantedS == nil:
		return "not held (probe.hold: 0s)"
	case c.HoldS == nil:
		return fmt.Sprintf("not held: the budget had no room for its %.3g s hold", *c.HoldWantedS)
	}
	return fmt.Sprintf("held %.3g s: not confirmed", *c.HoldS)
}

// stopText says why a capacity search stopped.
func stopText(c *report.Capacity) string {
	switch c.Stop {
	case report.CapacityConverged:
		return fmt.Sprintf("converged: the bracket is within the %g %% precision", c.PrecisionPct)
	case report.CapacityAtMax:
		return "every probe passed up to the maximum, " + fmtNum(c.Max)
	case report.CapacityBelowMin:
		return "the minimum, " + fmtNum(c.Min) + ", already failed"
	case report.CapacityBudget:
		return "the time budget ran out before the bracket converged"
	}
	return c.Stop
}
