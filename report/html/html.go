// Package html renders a tollgate report, optionally against a baseline, as
// one self-contained HTML page: inline CSS, inline SVG charts drawn in Go and
// a few lines of optional script, so it opens from a CI artifact with no
// network and reads the same with JavaScript off.
package html

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

//go:embed page.html.tmpl
var pageSource string

// pageTmpl is parsed once, when the first page is written (not at start:
// parsing was 0.4 ms of every command's start-up, html
// or not); html/template escapes every report value, which matters because
// scenario names, gate expressions and server metadata are whatever the
// scenario author or the server wrote.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(pageSource))
})

// Write renders r as a self-contained HTML page. With a baseline, the page
// sets old against new: a delta table and old-vs-new overlays on the charts.
func Write(w io.Writer, r *report.Report, baseline *report.Report) error {
	if r == nil {
		return errors.New("html: no report to render")
	}
	// html/template escapes markup; Sanitized makes control characters visible.
	r, baseline = view.Sanitized(r), view.Sanitized(baseline)
	var buf bytes.Buffer
	if err := pageTmpl().Execute(&buf, build(r, baseline)); err != nil {
		return fmt.Errorf("html: rendering %q: %w", r.Scenario.Name, err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("html: writing: %w", err)
	}
	return nil
}

type page struct {
	Name, Description string
	Status            badge
	Incomplete        bool
	Started, Duration string
	Tool              string
	File, SHA         string
	Host              report.Host
	Vars              string
	Baseline          *baseInfo
	Gates             []gateRow
	GateCounts        string
	Deltas            []deltaRow // rows where something changed
	Unchanged         []deltaRow // rows where nothing moved beyond noise
	DeltaNote         string     // why there are no deltas against a baseline
	Runs              []runView
	LiveColumns       []string // view.LiveColumns, the live tables' header
	LoadColumns       []string // view.LoadColumns, the load-point tables' header
	ServerColumns     []string // view.ServerColumns, the server-timings tables' header
	NotJudged         string   // why the gates were not judged (view.GatesNotJudged), when a run failed
	SeamRun           *runView // the first seam run, whose target configuration is shown
	SeamRows          []seamRow
	Sections          []section
	RunCards          bool // some run has a card in the Runs section
	// Definitions are the definition notes of this report and of the
	// baseline when another tool measured them (report.Imported).
	Definitions []definitions
}

// definitions are one report's definition notes.
type definitions struct {
	Side, Heading string
	Notes         []string
}

type badge struct{ Text, Class, Icon string }

func statusBadge(s string) badge {
	switch s {
	case report.StatusPass:
		return badge{"pass", "pass", "✓"}
	case report.StatusFail:
		return badge{"fail", "fail", "✗"}
	case report.StatusError:
		return badge{"error", "error", "!"}
	case report.StatusIncomplete:
		return badge{"incomplete", "error", "…"}
	case report.StatusNotGated:
		return badge{"not gated", "neutral", "–"}
	case report.StatusSkipped:
		return badge{"skipped", "neutral", "–"}
	case report.StatusInconclusive:
		return badge{"inconclusive", "error", "?"}
	case "":
		return badge{"unknown", "neutral", "?"}
	}
	return badge{s, "neutral", "?"}
}

type baseInfo struct {
	Name, Started, Status, File, SHA, Tool string
	Badge                                  badge
}

func build(r, base *report.Report) page {
	p := page{
		Name:        r.Scenario.Name,
		Description: r.Scenario.Description,
		Status:      statusBadge(r.Status),
		Incomplete:  r.Incomplete,
		Started:     when(r.StartedAt),
		Duration:    duration(r.StartedAt, r.EndedAt),
		Tool:        strings.TrimSpace(r.Tool.Name + " " + r.Tool.Version),
		File:        r.Scenario.File,
		SHA:         short(r.Scenario.SHA256),
		Host:        r.Host,
		Vars:        pretty(r.Scenario.Vars),
	}
	if p.Name == "" {
		p.Name = "tollgate report"
	}
	for _, side := range []struct {
		name string
		r    *report.Report
	}{{"", r}, {"baseline", base}} {
		if side.r != nil && side.r.Imported != nil {
			p.Definitions = append(p.Definitions, definitions{Side: side.name, Heading: side.r.Imported.Heading(), Notes: side.r.Imported.Notes})
		}
	}
	if r.Imported != nil {
		p.Tool = "tollgate, reading a " + r.Imported.Tool + " result"
	}
	if base != nil {
		p.Baseline = &baseInfo{Name: base.Scenario.Name, Started: when(base.StartedAt), Status: base.Status,
			File: base.Scenario.File, SHA: short(base.Scenario.SHA256),
			Tool: strings.TrimSpace(base.Tool.Name + " " + base.Tool.Version), Badge: statusBadge(base.Status)}
	}
	p.Gates, p.GateCounts = gateRows(r, base)
	rows, err := deltaRows(r, base)
	if err != nil {
		p.DeltaNote = err.Error()
	}
	for _, d := range rows {
		if d.moved {
			p.Deltas = append(p.Deltas, d)
		} else {
			p.Unchanged = append(p.Unchanged, d)
		}
	}
	p.Runs = runViews(r)
	p.LiveColumns, p.LoadColumns, p.ServerColumns = view.LiveColumns(), view.LoadColumns(), view.ServerColumns()
	if why := view.GatesNotJudged(r); why != "" && !view.Interrupted(r) && r.Status != report.StatusNotGated {
		p.NotJudged = why // (an interruption has its own banner; --no-gate asked for none)
	}
	// Seam runs share one table: they differ in a few parameters and read
	// best row against row.
	for i := range p.Runs {
		v := &p.Runs[i]
		if !v.Seam {
			continue
		}
		if p.SeamRun == nil {
			p.SeamRun = v
		}
		for j, row := range v.SeamRows {
			row.Run = v.Name
			if j == 0 {
				row.Span = len(v.SeamRows)
			}
			p.SeamRows = append(p.SeamRows, row)
		}
	}
	p.RunCards = len(p.SeamRows) > 0
	for _, v := range p.Runs {
		p.RunCards = p.RunCards || !v.Seam && !v.Empty()
	}
	p.Sections = newCharts(r, base).sections()
	return p
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func duration(a, b time.Time) string {
	if a.IsZero() || b.IsZero() || b.Before(a) {
		return ""
	}
	d := b.Sub(a)
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func pretty(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Gates.

type gateRow struct {
	Name, Description, Expr, Message string
	Status                           badge
	Optional                         bool
	Shown, More                      []obsRow
	Old                              *badge
}

type obsRow struct {
	Left, Op, Right, Expr string
	OK                    bool
}

// maxShownObs keeps a gate over many runs readable; the rest fold away.
const maxShownObs = 3

func gateRows(r, base *report.Report) ([]gateRow, string) {
	old := map[string]string{}
	if base != nil {
		for _, g := range base.Gates {
			old[g.Name] = g.Status
		}
	}
	counts := map[string]int{}
	var rows []gateRow
	for _, g := range r.Gates {
		counts[g.Status]++
		row := gateRow{Name: g.Name, Description: g.Description, Expr: strings.TrimSpace(g.Expr), Message: g.Message,
			Status: statusBadge(g.Status), Optional: g.Optional}
		if restates(g) {
			row.Message = "" // the false comparisons below say it, with their values
		}
		if s, ok := old[g.Name]; ok {
			b := statusBadge(s)
			row.Old = &b
		}
		// The comparisons that agree with the verdict decided it, so they come
		// first: the false ones of a failed gate, the true ones of a passed
		// gate (whose false ones are short-circuited alternatives).
		obs := append([]report.Observation(nil), g.Observations...)
		want := g.Status != report.StatusFail
		sort.SliceStable(obs, func(i, j int) bool { return obs[i].Result == want && obs[j].Result != want })
		for i, o := range obs {
			or := obsRow{Left: view.Value(o.Left), Op: o.Op, Right: view.Value(o.Right), Expr: view.OneLine(o.Expr), OK: o.Result}
			if i < maxShownObs {
				row.Shown = append(row.Shown, or)
			} else {
				row.More = append(row.More, or)
			}
		}
		rows = append(rows, row)
	}
	var parts []string
	for _, s := range []string{report.StatusPass, report.StatusFail, report.StatusError, report.StatusInconclusive, report.StatusSkipped} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	return rows, strings.Join(parts, ", ")
}

// restates reports whether a failed gate's message only restates its
// false comparisons ("expr: 6.78 <= 0.88 is false", as gates writes it when
// nothing else failed), which the row already shows: the message of a
// no_regression failure, of an error or of a skipped gate says more.
func restates(g report.GateResult) bool {
	if g.Status != report.StatusFail || g.Message == "" {
		return false
	}
	var exprs []string
	for _, o := range g.Observations {
		if !o.Result {
			exprs = append(exprs, o.Expr+": ")
		}
	}
	if len(exprs) == 0 {
		return false
	}
	for _, part := range strings.Split(g.Message, "; ") {
		if !strings.HasSuffix(part, " is false") || !slices.ContainsFunc(exprs, func(e string) bool { return strings.HasPrefix(part, e) }) {
			return false
		}
	}
	return true
}

// Deltas.

// deltaRow is one metric both reports have, as view.Deltas (and so
// report/compare) judges it.
type deltaRow struct {
	Run, Phase, Metric, Better string
	Cells                      []deltaCell
	moved                      bool
}

// deltaCell is one statistic: old, new, the change and its outcome
// (better, worse, changed, same, unknown); Class "na" fills the p95 columns
// of a single-valued metric.
type deltaCell struct {
	Stat, Old, New, Delta, Word, Class string
}

func deltaRows(r, base *report.Report) ([]deltaRow, error) {
	if base == nil {
		return nil, nil
	}
	ds, err := view.Deltas(base, r)
	if err != nil {
		return nil, err
	}
	rows := make([]deltaRow, 0, len(ds))
	for _, d := range ds {
		row := deltaRow{Run: d.Run, Phase: d.Where, Metric: d.Name, Better: d.Metric.Direction.String(), moved: d.Moved()}
		for _, st := range d.Stats {
			row.Cells = append(row.Cells, deltaCell{Stat: st.Stat, Old: st.Old, New: st.New, Delta: st.Change,
				Word: st.Word, Class: st.Outcome.String()})
		}
		if len(row.Cells) == 1 {
			row.Cells = append(row.Cells, deltaCell{Class: "na"})
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Runs.

type runView struct {
	Name, Kind, Status, Error, Params string
	Target                            targetView
	Seam, Failed                      bool
	ServingRows                       []view.LiveRow
	Points                            []view.LoadRow
	Server                            []view.ServerRow
	SeamRows                          []seamRow
	Capacity                          []capacityView
	Notes                             []string
	Extra                             []kv // seam run facts
}

// Empty: the run has nothing for its card (a phase kind with no table).
func (v runView) Empty() bool {
	return v.Error == "" && !v.Failed && len(v.ServingRows) == 0 && len(v.Points) == 0 && len(v.Capacity) == 0 && len(v.Notes) == 0
}

type targetView struct {
	Name, BaseURL, Model, ModelSource, Endpoint, Ready, Description, Config string
	Metadata                                                                []kv
}

type kv struct{ Key, Value string }

type seamRow struct {
	Run                                                                 string
	Span                                                                int // rows the run name spans; 0 on the run's later rows
	Phase, Transfers, Latency, Queue, Rate, BytesPerToken, Bytes, Conns string
}

func runViews(r *report.Report) []runView {
	live := map[string]view.LiveRun{}
	for _, lr := range view.Live(r) {
		live[lr.Name] = lr
	}
	var out []runView
	for _, rn := range r.RunNames() {
		run := r.Runs[rn]
		v := runView{Name: rn, Kind: run.Target.Kind, Status: run.Status, Error: run.Error, Seam: run.Target.Kind == report.TargetSeam,
			Failed: run.Status == report.RunError}
		var params []string
		for k, val := range run.Params {
			params = append(params, k+"="+val)
		}
		sort.Strings(params)
		v.Params = strings.Join(params, ", ")
		t := run.Target
		v.Target = targetView{Name: t.Name, BaseURL: t.BaseURL, Model: t.Model, ModelSource: t.ModelSource,
			Endpoint: t.Endpoint, Description: t.Description, Config: pretty(t.Config)}
		if t.ReadyMS != nil {
			v.Target.Ready = view.Num(t.ReadyMS, "%.1f") + " ms"
		}
		keys := make([]string, 0, len(t.Metadata))
		for k := range t.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, ok := t.Metadata[k].(string)
			if !ok {
				s = pretty(t.Metadata[k])
			}
			v.Target.Metadata = append(v.Target.Metadata, kv{k, s})
		}
		if run.Connections != nil {
			v.Extra = append(v.Extra, kv{"connections", fmt.Sprint(run.Connections.Attempts)})
		}
		if run.SessionID != "" {
			v.Extra = append(v.Extra, kv{"session", run.SessionID})
		}
		if len(run.OutputTokens) > 0 {
			v.Extra = append(v.Extra, kv{"output tokens", view.Value(run.OutputTokens)})
		}
		if c := run.Cleanup; c != nil {
			v.Extra = append(v.Extra, kv{"cleanup", fmt.Sprintf("session closed %v, open connections %d, queued %d, telemetry %d",
				c.SessionClosed, c.OpenConnections, c.QueuedActivations, c.TelemetryAggregates)})
		}
		if lr, ok := live[rn]; ok {
			v.ServingRows, v.Points, v.Server = lr.Rows, lr.Points, lr.Server
			for _, n := range append(lr.Warnings, lr.Errors...) {
				v.Notes = append(v.Notes, n.Phase+": "+n.Text)
			}
		}
		v.Capacity = capacityViews(run)
		for _, pn := range run.PhaseNames() {
			p := run.Phases[pn]
			if p.SeamMetrics != nil {
				v.SeamRows = append(v.SeamRows, seamRowOf(pn, p.SeamMetrics))
			}
			if p.ServerMetricsNote != "" {
				v.Notes = append(v.Notes, pn+": "+p.ServerMetricsNote)
			}
		}
		out = append(out, v)
	}
	return out
}

// seamRowOf is a seam phase's row, formatted as the seam table's figures.
func seamRowOf(pn string, m *report.SeamMetrics) seamRow {
	return seamRow{Phase: pn, Transfers: fmt.Sprint(m.Transfers), Latency: view.Pair(m.SeamLatencyMS.P50, m.SeamLatencyMS.P95, "%.4f"),
		Queue: view.Num(m.QueueWaitMS.P95, "%.2f"), Rate: view.Num(m.TokensPerS, "%.1f"), BytesPerToken: view.Num(m.BytesPerToken, "%.0f"),
		Bytes: fmt.Sprintf("%d/%d (%s)", m.PayloadBytes, m.WireBytes, view.Ratio(m.CompressionRatio, "%.2f")), Conns: fmt.Sprint(m.ConnectionAttempts)}
}
