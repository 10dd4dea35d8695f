package view

import (
	"fmt"
	"strconv"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
)

// Delta is one metric both reports have, old against new, as
// report/compare judges it: the same outcome tollgate compare prints.
type Delta struct {
	Metric *compare.Metric
	Run    string // the run's name
	Where  string // the phase and breakdown: "decode", "prefill 256", "load concurrency 8", "seam head->tail"
	Name   string // the metric: "ttft_ms", "errors.rate"
	Stats  []DeltaStat
}

// DeltaStat is one statistic of a Delta: the headline (p50, or value for a
// single-valued metric), then p95 for a distribution.
type DeltaStat struct {
	Stat     string
	Old, New string // Number, or Absent
	Change   string // compare.FormatChange, or Absent
	Outcome  compare.Outcome
	Word     string // compare.Word: better, worse, changed, within noise, same, cannot tell
}

// Moved reports whether any statistic changed beyond noise, or changed at
// all where noise is unknown: the rows a reader must look at.
func (d Delta) Moved() bool {
	for _, s := range d.Stats {
		switch s.Outcome {
		case compare.OutcomeBetter, compare.OutcomeWorse, compare.OutcomeChanged:
			return true
		case compare.OutcomeUnknown:
			if pct, ok := d.Metric.Change(s.Stat); ok && pct != 0 {
				return true
			}
		}
	}
	return false
}

// Deltas compares old with new through compare.Compare (whatever their
// scenarios, as --baseline-any does: a page renders any pair it is given)
// and lists every shared metric in the new report's order.
func Deltas(old, new *report.Report) ([]Delta, error) {
	res, err := compare.Compare(old, new, compare.Options{AllowAny: true})
	if err != nil {
		return nil, fmt.Errorf("comparing with the baseline: %w", err)
	}
	return DeltasOf(res), nil
}

// DeltasOf lists every metric of a comparison already made, in the new
// report's order: what tollgate compare's Markdown shows beside its table.
func DeltasOf(res *compare.Result) []Delta {
	out := make([]Delta, 0, len(res.Metrics))
	for _, m := range res.Metrics {
		d := Delta{Metric: m}
		d.Run, d.Where, d.Name = place(res.New, m.Segments)
		stats := []string{m.Headline()}
		if !m.Scalar {
			stats = append(stats, "p95")
		}
		for _, st := range stats {
			ds := DeltaStat{Stat: st, Old: statValue(m.Old, st), New: statValue(m.New, st), Change: Absent, Outcome: m.Outcome(st), Word: compare.Word(m, st)}
			if pct, ok := m.Change(st); ok {
				ds.Change = compare.FormatChange(pct)
			}
			d.Stats = append(d.Stats, ds)
		}
		out = append(out, d)
	}
	return out
}

func statValue(vals map[string]float64, stat string) string {
	if v, ok := vals[stat]; ok {
		return Number(v)
	}
	return Absent
}

// place splits a metric's path (runs, run, phases, phase, [breakdown, key],
// name) into the run, where in it, and the metric's name; a load point is
// named by its label in r.
func place(r *report.Report, segs []string) (run, where, name string) {
	if len(segs) < 3 {
		return "", "", pathName(segs)
	}
	run, name = segs[1], segs[len(segs)-1]
	mid := segs[2 : len(segs)-1]
	var phase *report.Phase
	var parts []string
	for i := 0; i < len(mid); i++ {
		seg := mid[i]
		switch {
		case seg == "errors" || seg == "goodput" || seg == "connections":
			name = seg + "." + name
		case i+1 < len(mid) && seg == "phases":
			i++
			parts = append(parts, mid[i])
			if rr := r.Runs[run]; rr != nil {
				phase = rr.Phases[mid[i]]
			}
		case i+1 < len(mid) && (seg == "by_prompt_tokens" || seg == "variants"):
			i++
			parts = append(parts, mid[i])
		case i+1 < len(mid) && seg == "points":
			i++
			parts = append(parts, pointName(phase, mid[i]))
		case i+1 < len(mid) && seg == "seams":
			i++
			parts = append(parts, "seam "+mid[i])
		default:
			parts = append(parts, seg)
		}
	}
	for i, p := range parts {
		if i > 0 {
			where += " "
		}
		where += p
	}
	return run, where, name
}

func pointName(p *report.Phase, index string) string {
	i, err := strconv.Atoi(index)
	if p != nil && err == nil && i >= 0 && i < len(p.Points) && p.Points[i] != nil {
		return PointLabel(p.Points[i])
	}
	return "point " + index
}

func pathName(segs []string) string {
	if len(segs) == 0 {
		return ""
	}
	return segs[len(segs)-1]
}
