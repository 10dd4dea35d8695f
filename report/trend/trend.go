// Package trend sets saved reports of the same scenario side by side over
// time (tollgate report --trend): each metric's statistics report after
// report, the run-to-run noise band and the points tollgate compare would
// flag. It computes nothing of its own: every value, band and mark is
// read from compare.Compare of each report with the one before it, so a
// point is marked exactly when `tollgate compare PREV CUR` with the same
// --fail-on flags it.
package trend

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
	"github.com/tollgate-dev/tollgate/report/view"
)

// ErrTooFew marks a trend with fewer than two reports of any one scenario:
// there is nothing to set side by side.
var ErrTooFew = errors.New("a trend needs at least two reports of one scenario")

// MaxReports bounds the reports one trend reads: each is held in memory
// and compared with the one before it.
const MaxReports = 1000

// Input is one report and the path it was read from.
type Input struct {
	Path   string
	Report *report.Report
}

// Point is one report of a scenario, in run order.
type Point struct {
	// N numbers the points of a scenario from 1, as the charts' x axis does.
	N int
	// File is the path the report was read from; Label names the point
	// (the file's name without .json: name nightly reports by commit or
	// date, report-$GIT_SHA.json, to label each point so).
	File, Label string
	Started     time.Time
	Status      string
	// Tool is the other tool that measured it (report.Imported), or "".
	Tool string
	// Invalid says why its measurement cannot be trusted (report.Invalid).
	Invalid []string
}

// Trend is every scenario's trend, in the order their first reports ran.
type Trend struct {
	Scenarios []*Scenario
	// Alone are reports whose scenario no other report shares: listed,
	// not charted.
	Alone []Point
	// FailOn are the thresholds the marks were judged by, as written.
	FailOn []string
}

// Scenario is the trend of the reports of one scenario identity (name and
// sha256, as compare requires).
type Scenario struct {
	Name, SHA256 string
	Points       []Point
	// Steps[i] compares Points[i] (old) with Points[i+1] (new).
	Steps   []*compare.Result
	Metrics []*Series
	// Definitions are the definition notes of points another tool measured.
	Definitions []compare.Definitions
	// Notes are compare's notes on each step, prefixed with its points.
	Notes []string
}

// Series is one metric (compare's path: a run, phase and slice) over the
// points of a scenario.
type Series struct {
	Path      string
	Segments  []string
	Name      string
	Direction compare.Direction
	Scalar    bool
	// Values[i] is each statistic at point i; nil where it lacks the metric.
	Values []map[string]float64
	// Steps[i] is the comparison of point i with point i−1; Steps[0] is empty.
	Steps []Step
}

// Step is what compare found of one metric from one point to the next.
type Step struct {
	// Compared: both points have the metric.
	Compared bool
	// Noise is compare's note on how its noise is known.
	Noise string
	// Band holds, per statistic, the noise band around the previous value:
	// the new value lies inside it exactly when compare calls the change
	// within noise (the bootstrap interval of new − old contains 0); exact
	// (zero width) for deterministic runs; absent where noise is unknown.
	Band map[string][2]float64
	// Outcome is compare's reading of each statistic's change.
	Outcome map[string]compare.Outcome
	// Tested are the --fail-on decisions on this metric at this step.
	Tested []compare.Regression
}

// Regressed reports whether a --fail-on threshold on stat regressed here:
// what makes tollgate compare exit 1.
func (s Step) Regressed(stat string) (compare.Regression, bool) {
	for _, r := range s.Tested {
		if r.Stat == stat && r.Decision == compare.Regressed {
			return r, true
		}
	}
	return compare.Regression{}, false
}

// Stats are the statistics a series is drawn with: value for a
// single-valued metric, else p50 and p95, and any other statistic a
// --fail-on threshold flagged at some point.
func (s *Series) Stats() []string {
	if s.Scalar {
		return []string{"value"}
	}
	out := []string{"p50", "p95"}
	for _, st := range s.Steps {
		for _, r := range st.Tested {
			if r.Decision != compare.NoRegression && !slices.Contains(out, r.Stat) {
				out = append(out, r.Stat)
			}
		}
	}
	return out
}

// Constant reports whether every point that has the metric has the same
// statistics: a line with nothing to show.
func (s *Series) Constant() bool {
	var first map[string]float64
	for _, v := range s.Values {
		if v == nil {
			continue
		}
		if first == nil {
			first = v
			continue
		}
		if len(v) != len(first) {
			return false
		}
		for k, x := range v {
			if y, ok := first[k]; !ok || x != y {
				return false
			}
		}
	}
	return true
}

// Flag is one statistic of one point that compare flags against the point
// before it.
type Flag struct {
	Point, Prev int // indexes into Scenario.Points
	Path, Stat  string
	// Kind is regression (a --fail-on threshold breached beyond noise:
	// compare exits 1), inconclusive (over a threshold, not beyond noise:
	// compare exits 4) or worse (beyond noise the bad way, no threshold
	// on it: compare's table says worse).
	Kind   string
	Reason string
}

// Flag kinds.
const (
	FlagRegression   = "regression"
	FlagInconclusive = "inconclusive"
	FlagWorse        = "worse"
)

// Flags are the flagged statistics of a scenario, point by point.
func (sc *Scenario) Flags() []Flag {
	var out []Flag
	for _, s := range sc.Metrics {
		for i, st := range s.Steps {
			seen := map[string]bool{}
			for _, r := range st.Tested {
				kind := ""
				switch r.Decision {
				case compare.Regressed:
					kind = FlagRegression
				case compare.Inconclusive:
					kind = FlagInconclusive
				default:
					continue
				}
				seen[r.Stat] = true
				out = append(out, Flag{Point: i, Prev: i - 1, Path: s.Path, Stat: r.Stat, Kind: kind, Reason: r.Reason})
			}
			for _, stat := range sortedStats(st.Outcome) {
				if st.Outcome[stat] == compare.OutcomeWorse && !seen[stat] && stat != "min" && stat != "max" {
					out = append(out, Flag{Point: i, Prev: i - 1, Path: s.Path, Stat: stat, Kind: FlagWorse,
						Reason: fmt.Sprintf("%s.%s: %s → %s, worse beyond noise (%s)", s.Path, stat,
							view.Number(s.Values[i-1][stat]), view.Number(s.Values[i][stat]), st.Noise)})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Flag) int { return cmp.Compare(a.Point, b.Point) })
	return out
}

func sortedStats(m map[string]compare.Outcome) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Build groups the reports by scenario identity, orders each group by run
// time (then path), and compares each report with the one before it under
// opts (the --fail-on thresholds, alpha, --baseline-any). Two reports of
// one scenario that compare refuses (another host or model) fail the
// trend, naming both files, as tollgate compare would refuse them.
func Build(inputs []Input, opts compare.Options) (*Trend, error) {
	if len(inputs) > MaxReports {
		return nil, fmt.Errorf("%d reports: a trend reads at most %d", len(inputs), MaxReports)
	}
	t := &Trend{}
	for _, th := range opts.FailOn {
		t.FailOn = append(t.FailOn, th.Raw)
	}
	type group struct {
		key    string
		inputs []Input
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, in := range inputs {
		if in.Report == nil {
			return nil, fmt.Errorf("%s: %w: nil", in.Path, report.ErrNotReport)
		}
		in.Report = view.Sanitized(in.Report)
		k := in.Report.Scenario.Name + "\x00" + in.Report.Scenario.SHA256
		g := byKey[k]
		if g == nil {
			g = &group{key: k}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.inputs = append(g.inputs, in)
	}
	for _, g := range groups {
		slices.SortStableFunc(g.inputs, func(a, b Input) int {
			return cmp.Or(a.Report.StartedAt.Compare(b.Report.StartedAt), cmp.Compare(a.Path, b.Path))
		})
	}
	slices.SortStableFunc(groups, func(a, b *group) int {
		return a.inputs[0].Report.StartedAt.Compare(b.inputs[0].Report.StartedAt)
	})
	for _, g := range groups {
		if len(g.inputs) < 2 {
			t.Alone = append(t.Alone, pointOf(1, g.inputs[0]))
			continue
		}
		sc, err := scenario(g.inputs, opts)
		if err != nil {
			return nil, err
		}
		t.Scenarios = append(t.Scenarios, sc)
	}
	if len(t.Scenarios) == 0 {
		return nil, fmt.Errorf("%w: %d report(s), no two of the same scenario (name and sha256)", ErrTooFew, len(inputs))
	}
	return t, nil
}

func pointOf(n int, in Input) Point {
	r := in.Report
	p := Point{N: n, File: in.Path, Label: strings.TrimSuffix(filepath.Base(in.Path), ".json"), Started: r.StartedAt, Status: r.Status}
	if r.Imported != nil {
		p.Tool = r.Imported.Tool
	}
	for _, iv := range r.Invalid {
		p.Invalid = append(p.Invalid, iv.Message)
	}
	return p
}

// scenario compares each report of one scenario with the one before it.
func scenario(inputs []Input, opts compare.Options) (*Scenario, error) {
	first := inputs[0].Report
	sc := &Scenario{Name: first.Scenario.Name, SHA256: first.Scenario.SHA256}
	for i, in := range inputs {
		sc.Points = append(sc.Points, pointOf(i+1, in))
	}
	byPath := map[string]*Series{}
	series := func(m *compare.Metric) *Series {
		s := byPath[m.Path]
		if s == nil {
			s = &Series{Path: m.Path, Segments: m.Segments, Name: m.Name, Direction: m.Direction, Scalar: m.Scalar,
				Values: make([]map[string]float64, len(inputs)), Steps: make([]Step, len(inputs))}
			byPath[m.Path] = s
			sc.Metrics = append(sc.Metrics, s)
		}
		return s
	}
	seenDefs := map[string]bool{}
	for i := 1; i < len(inputs); i++ {
		old, cur := inputs[i-1], inputs[i]
		res, err := compare.Compare(old.Report, cur.Report, opts)
		if err != nil {
			return nil, fmt.Errorf("%s vs %s: %w", old.Path, cur.Path, err)
		}
		sc.Steps = append(sc.Steps, res)
		for _, n := range res.Notes {
			sc.Notes = append(sc.Notes, fmt.Sprintf("#%d → #%d: %s", i, i+1, n))
		}
		for _, d := range res.Definitions {
			if !seenDefs[d.Heading] {
				seenDefs[d.Heading] = true
				sc.Definitions = append(sc.Definitions, d)
			}
		}
		for _, m := range res.Metrics {
			s := series(m)
			if s.Values[i-1] == nil {
				s.Values[i-1] = m.Old
			}
			s.Values[i] = m.New
			s.Steps[i] = step(m)
		}
		for _, r := range res.Tested {
			if s := byPath[r.Path]; s != nil {
				s.Steps[i].Tested = append(s.Steps[i].Tested, r)
			}
		}
	}
	return sc, nil
}

// step reads one metric's comparison: its outcome and noise band per
// statistic.
func step(m *compare.Metric) Step {
	st := Step{Compared: true, Noise: m.Noise.Note, Band: map[string][2]float64{}, Outcome: map[string]compare.Outcome{}}
	for stat, cur := range m.New {
		prev, ok := m.Old[stat]
		if !ok {
			continue
		}
		st.Outcome[stat] = m.Outcome(stat)
		switch m.Noise.Method {
		case compare.NoiseNone:
			st.Band[stat] = [2]float64{prev, prev}
		case compare.NoiseBootstrap:
			// The interval [lo, hi] of new − old holds 0 exactly when
			// cur − hi ≤ cur ≤ cur − lo: that is the band, drawn at the
			// new point, around where the old value's noise reaches.
			if iv, ok := m.Noise.Intervals[stat]; ok {
				st.Band[stat] = [2]float64{cur - iv.Hi, cur - iv.Lo}
			}
		}
	}
	return st
}

// Metric names the series' metric: its name, with the group it is under
// where the name alone says little (errors.rate, goodput.attained_pct).
func (s *Series) Metric() string {
	if n := len(s.Segments); n > 1 && isGroup(s.Segments[n-2]) {
		return s.Segments[n-2] + "." + s.Name
	}
	return s.Name
}

// isGroup reports whether seg is a path segment Metric keeps before a
// metric's name.
func isGroup(seg string) bool {
	switch seg {
	case "errors", "goodput", "bracket", "connections":
		return true
	}
	return false
}

// Where names a series' slice for a heading: run · phase · slice.
func (s *Series) Where() string {
	seg := s.Segments
	if len(seg) > 1 && seg[0] == "runs" {
		seg = seg[1:]
	}
	if n := len(seg); n > 1 && isGroup(seg[n-2]) {
		seg = seg[:n-1] // the group is part of Metric
	}
	var parts []string
	for i := 0; i < len(seg)-1; i++ {
		switch seg[i] {
		case "phases", "by_prompt_tokens", "variants", "seams":
			continue
		case "points":
			if i+1 < len(seg)-1 {
				parts = append(parts, "point "+seg[i+1])
				i++
			}
			continue
		}
		parts = append(parts, seg[i])
	}
	return strings.Join(parts, " · ")
}
