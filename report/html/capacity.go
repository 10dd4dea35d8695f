package html

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
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
				x = axis{Label: "concurrency", Unit: "streams", Zero: true}
			}
			for i, obj := range cp.Objectives {
				name, limit, ok := splitObjective(obj)
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
					Rules: []rule{{V: limit, Label: "objective " + obj}}}
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
					note += fmt.Sprintf(" (fails at %s, bound by %s)", fmtNum(*cp.Bracket.Fail), cp.BoundBy)
				}
				figs = append(figs, ch.figure(note+"."))
			}
		}
	}
	return figs
}

// splitObjective reads "metric.stat <= limit" back into its name and limit.
func splitObjective(obj string) (name string, limit float64, ok bool) {
	for _, op := range []string{"<=", ">="} {
		if l, r, found := strings.Cut(obj, op); found {
			if _, err := fmt.Sscan(strings.TrimSpace(r), &limit); err != nil {
				return "", 0, false
			}
			return strings.TrimSpace(l), limit, true
		}
	}
	return "", 0, false
}
