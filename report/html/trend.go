package html

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
	"github.com/tollgate-dev/tollgate/report/trend"
	"github.com/tollgate-dev/tollgate/report/view"
)

//go:embed trend.html.tmpl
var trendSource string

// trendTmpl shares the report page's styles ({{template "style"}}).
var trendTmpl = sync.OnceValue(func() *template.Template {
	t := template.Must(template.New("page").Parse(pageSource))
	return template.Must(t.New("trend").Parse(trendSource))
})

// WriteTrend renders a trend (tollgate report --trend) as one
// self-contained page: a section per scenario, a chart per metric and
// slice, each statistic over the reports with compare's noise band and
// the points compare flags marked.
func WriteTrend(w io.Writer, t *trend.Trend) error {
	if t == nil {
		return errors.New("html: no trend to render")
	}
	var buf bytes.Buffer
	if err := trendTmpl().ExecuteTemplate(&buf, "trend", buildTrend(t)); err != nil {
		return fmt.Errorf("html: rendering the trend: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("html: writing: %w", err)
	}
	return nil
}

type trendPage struct {
	Title, FailOn string
	Scenarios     []trendScenario
	Alone         []trendPoint
}

type trendScenario struct {
	ID, Name, SHA string
	Points        []trendPoint
	Flags         []trendFlag
	Sections      []section
	Notes         []string
	Definitions   []definitions
}

type trendPoint struct {
	N                            int
	Label, File, Started, Status string
	Badge                        badge
	Notes                        []string
}

type trendFlag struct {
	Point, Metric, Reason string
	Badge                 badge
}

func buildTrend(t *trend.Trend) trendPage {
	p := trendPage{Title: "tollgate trend", FailOn: strings.Join(t.FailOn, " ")}
	if len(t.Scenarios) == 1 {
		p.Title = t.Scenarios[0].Name + " — trend"
	}
	for _, pt := range t.Alone {
		p.Alone = append(p.Alone, trendPointView(pt))
	}
	for i, sc := range t.Scenarios {
		v := trendScenario{ID: fmt.Sprintf("scenario-%d", i+1), Name: sc.Name, SHA: short(sc.SHA256), Notes: sc.Notes}
		for _, pt := range sc.Points {
			v.Points = append(v.Points, trendPointView(pt))
		}
		for _, d := range sc.Definitions {
			v.Definitions = append(v.Definitions, definitions{Side: "", Heading: d.Heading, Notes: d.Notes})
		}
		for _, f := range sc.Flags() {
			b := badge{"worse", "error", "▲"}
			switch f.Kind {
			case trend.FlagRegression:
				b = badge{"regression", "fail", "✗"}
			case trend.FlagInconclusive:
				b = badge{"inconclusive", "error", "?"}
			}
			v.Flags = append(v.Flags, trendFlag{Point: fmt.Sprintf("#%d %s", f.Point+1, sc.Points[f.Point].Label),
				Metric: f.Path + "." + f.Stat, Reason: f.Reason, Badge: b})
		}
		v.Sections = trendSections(sc, v.ID)
		p.Scenarios = append(p.Scenarios, v)
	}
	return p
}

func trendPointView(pt trend.Point) trendPoint {
	v := trendPoint{N: pt.N, Label: pt.Label, File: pt.File, Started: when(pt.Started), Status: pt.Status, Badge: statusBadge(pt.Status), Notes: pt.Invalid}
	if pt.Tool != "" {
		v.Notes = append([]string{"measured by " + pt.Tool}, v.Notes...)
	}
	return v
}

// trendSections are a scenario's charts, one section per run, phase and
// slice; metrics that never changed are named in its note, not drawn.
func trendSections(sc *trend.Scenario, id string) []section {
	var out []section
	at := map[string]int{}
	constant := map[string][]string{}
	for _, s := range sc.Metrics {
		where := s.Where()
		i, ok := at[where]
		if !ok {
			i = len(out)
			at[where] = i
			out = append(out, section{ID: fmt.Sprintf("%s-%d", id, i+1), Title: where})
		}
		if s.Constant() {
			v := "–"
			for _, vals := range s.Values {
				if x, ok := vals[s.Stats()[0]]; ok {
					v = view.Number(x)
					break
				}
			}
			constant[where] = append(constant[where], s.Metric()+" "+v)
			continue
		}
		out[i].Figures = append(out[i].Figures, trendChart(sc, s).figure(trendNote(s)))
	}
	for i := range out {
		if c := constant[out[i].Title]; len(c) > 0 {
			out[i].Note = "The same in every report: " + strings.Join(c, ", ") + "."
		}
	}
	return out
}

// Marker kinds and colours of the marks, apart from the statistics' own.
const (
	regressionColor, regressionMarker = 4, 3
	worseColor, worseMarker           = 9, 2
)

func trendChart(sc *trend.Scenario, s *trend.Series) lineChart {
	unit := unitOf(s.Name)
	c := lineChart{Title: s.Metric() + " — " + s.Where(), X: axis{Label: "report", Whole: true}, Y: axis{Label: s.Metric(), Unit: unit}}
	var regress, worse []xy
	for k, stat := range s.Stats() {
		ser := series{Name: stat, Color: k, Marker: k}
		for i, vals := range s.Values {
			v, ok := vals[stat]
			if !ok {
				continue
			}
			st := s.Steps[i]
			p := pt(float64(i+1), v, trendTip(sc, s, i, stat, v, unit))
			if b, ok := st.Band[stat]; ok && k == 0 {
				p.Lo, p.Hi = b[0], b[1]
			}
			ser.Pts = append(ser.Pts, p)
			if r, ok := st.Regressed(stat); ok {
				regress = append(regress, pt(float64(i+1), v, fmt.Sprintf("#%d %s: %s", i+1, stat, r.Reason)))
			} else if st.Outcome[stat] == compare.OutcomeWorse {
				worse = append(worse, pt(float64(i+1), v, fmt.Sprintf("#%d %s worse than #%d beyond noise", i+1, stat, i)))
			}
		}
		c.Series = append(c.Series, ser)
	}
	if len(regress) > 0 {
		c.Series = append(c.Series, series{Name: "regression (--fail-on)", Color: regressionColor, Marker: regressionMarker, Dots: true, Pts: regress})
	}
	if len(worse) > 0 {
		c.Series = append(c.Series, series{Name: "worse beyond noise", Color: worseColor, Marker: worseMarker, Dots: true, Pts: worse})
	}
	return c
}

func trendTip(sc *trend.Scenario, s *trend.Series, i int, stat string, v float64, unit string) string {
	pt := sc.Points[i]
	tip := fmt.Sprintf("#%d %s", i+1, pt.Label)
	if w := when(pt.Started); w != "" {
		tip += " (" + w + ")"
	}
	tip += ": " + fmtNum(v)
	if unit != "" {
		tip += " " + unit
	}
	if i > 0 {
		if prev, ok := s.Values[i-1][stat]; ok && prev != 0 {
			tip += ", " + compare.FormatChange((v-prev)/math.Abs(prev)*100) + " vs #" + fmt.Sprint(i)
		}
		if o, ok := s.Steps[i].Outcome[stat]; ok {
			tip += ", " + o.String()
		}
	}
	return tip
}

func trendNote(s *trend.Series) string {
	note := s.Direction.String() + ". "
	if s.Scalar {
		return note + "One value per report."
	}
	return note + "The whisker on each p50 is the noise band around the report before it, as tollgate compare estimates it: a p50 outside it changed beyond noise."
}

// unitOf is a metric's unit: the metric table's, else its name's suffix.
func unitOf(name string) string {
	if m, ok := report.MetricByKey(name); ok {
		return m.Unit
	}
	switch {
	case strings.HasSuffix(name, "_ms"):
		return "ms"
	case strings.HasSuffix(name, "_per_s"):
		return "/s"
	case strings.HasSuffix(name, "_bytes"), name == "wire_bytes":
		return "bytes"
	case strings.HasSuffix(name, "_pct"):
		return "%"
	}
	return ""
}
