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
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/report"
)

//go:embed page.html.tmpl
var pageSource string

// pageTmpl is parsed once; html/template escapes every report value, which
// matters because scenario names, gate expressions and server metadata are
// whatever the scenario author or the server wrote.
var pageTmpl = template.Must(template.New("page").Parse(pageSource))

// Write renders r as a self-contained HTML page. With a baseline, the page
// sets old against new: a delta table and old-vs-new overlays on the charts.
func Write(w io.Writer, r *report.Report, baseline *report.Report) error {
	if r == nil {
		return errors.New("html: no report to render")
	}
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, build(r, baseline)); err != nil {
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
	Unchanged         []deltaRow // rows where nothing moved by sameBand or more
	Runs              []runView
	SeamRun           *runView // the first seam run, whose target configuration is shown
	SeamRows          []seamRow
	Sections          []section
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
	if base != nil {
		p.Baseline = &baseInfo{Name: base.Scenario.Name, Started: when(base.StartedAt), Status: base.Status,
			File: base.Scenario.File, SHA: short(base.Scenario.SHA256),
			Tool: strings.TrimSpace(base.Tool.Name + " " + base.Tool.Version), Badge: statusBadge(base.Status)}
	}
	p.Gates, p.GateCounts = gateRows(r, base)
	for _, d := range deltas(r, base) {
		if d.changed() {
			p.Deltas = append(p.Deltas, d)
		} else {
			p.Unchanged = append(p.Unchanged, d)
		}
	}
	p.Runs = runViews(r)
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
			or := obsRow{Left: fmtAny(o.Left), Op: o.Op, Right: fmtAny(o.Right), Expr: strings.Join(strings.Fields(o.Expr), " "), OK: o.Result}
			if i < maxShownObs {
				row.Shown = append(row.Shown, or)
			} else {
				row.More = append(row.More, or)
			}
		}
		rows = append(rows, row)
	}
	var parts []string
	for _, s := range []string{report.StatusPass, report.StatusFail, report.StatusError} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	return rows, strings.Join(parts, ", ")
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case float64:
		return fmtNum(x)
	case string:
		return fmt.Sprintf("%q", x)
	case []any:
		if len(x) > 6 {
			return fmt.Sprintf("[%d items]", len(x))
		}
	case map[string]any:
		return fmt.Sprintf("{%d keys}", len(x))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Deltas.

type deltaRow struct {
	Run, Phase, Metric, Better string
	Cells                      []deltaCell
}

func (d deltaRow) changed() bool {
	for _, c := range d.Cells {
		if c.Class == "better" || c.Class == "worse" {
			return true
		}
	}
	return false
}

type deltaCell struct {
	Old, New, Delta, Word, Class string
}

// metricDef names a shared metric and which direction is better.
type metricDef struct {
	name        string
	lowerBetter bool
	stat        func(*report.ServingMetrics) report.Stat
}

var servingDefs = []metricDef{
	{"ttft_ms", true, func(m *report.ServingMetrics) report.Stat { return m.TTFTMS }},
	{"e2e_ms", true, func(m *report.ServingMetrics) report.Stat { return m.E2EMS }},
	{"tpot_ms", true, func(m *report.ServingMetrics) report.Stat { return m.TPOTMS }},
	{"itl_ms", true, func(m *report.ServingMetrics) report.Stat { return m.ITLMS }},
	{"decode_tokens_per_s", false, func(m *report.ServingMetrics) report.Stat { return m.DecodeTokensPerS }},
	{"prefill_tokens_per_s", false, func(m *report.ServingMetrics) report.Stat { return m.PrefillTokensPerS }},
}

// sameBand is the relative change below which a delta is called unchanged.
const sameBand = 0.01

func cell(old, cur float64, lowerBetter bool) deltaCell {
	c := deltaCell{Old: fmtNum(old), New: fmtNum(cur), Delta: "–", Class: "same"}
	if !finite(old, cur) {
		return c
	}
	if old == 0 {
		if cur == 0 {
			c.Delta = "0%"
		}
		return c
	}
	rel := (cur - old) / math.Abs(old)
	c.Delta = fmt.Sprintf("%+.1f%%", rel*100)
	if math.Abs(rel) < 0.0005 {
		c.Delta = "±0%"
	}
	switch {
	case math.Abs(rel) < sameBand:
		c.Word = "same"
	case (rel < 0) == lowerBetter:
		c.Word, c.Class = "better", "better"
	default:
		c.Word, c.Class = "worse", "worse"
	}
	return c
}

func statRow(run, phase, metric string, lowerBetter bool, old, cur report.Stat) (deltaRow, bool) {
	if old.Count == 0 && cur.Count == 0 {
		return deltaRow{}, false
	}
	return deltaRow{Run: run, Phase: phase, Metric: metric, Better: better(lowerBetter), Cells: []deltaCell{
		cell(val(old.P50), val(cur.P50), lowerBetter), cell(val(old.P95), val(cur.P95), lowerBetter)}}, true
}

func better(lower bool) string {
	if lower {
		return "lower is better"
	}
	return "higher is better"
}

func scalarRow(run, phase, metric string, lowerBetter bool, old, cur *float64) (deltaRow, bool) {
	if old == nil && cur == nil {
		return deltaRow{}, false
	}
	return deltaRow{Run: run, Phase: phase, Metric: metric, Better: better(lowerBetter),
		Cells: []deltaCell{cell(val(old), val(cur), lowerBetter), {Class: "na"}}}, true
}

func deltas(r, base *report.Report) []deltaRow {
	if base == nil {
		return nil
	}
	var rows []deltaRow
	add := func(d deltaRow, ok bool) {
		if ok {
			rows = append(rows, d)
		}
	}
	for _, rn := range runOrder(r) {
		run, brun := r.Runs[rn], base.Runs[rn]
		if brun == nil {
			continue
		}
		for _, pn := range phaseOrder(run) {
			p, bp := run.Phases[pn], brun.Phases[pn]
			if bp == nil || p.Kind == "warmup" {
				continue
			}
			if p.ServingMetrics != nil && bp.ServingMetrics != nil {
				for _, d := range servingDefs {
					add(statRow(rn, pn, d.name, d.lowerBetter, d.stat(bp.ServingMetrics), d.stat(p.ServingMetrics)))
				}
			}
			for _, group := range []struct {
				label     string
				cur, prev map[string]*report.Point
				keys      []string
			}{
				{"", p.ByPromptTokens, bp.ByPromptTokens, pointKeys(p.ByPromptTokens)},
				{"", p.Variants, bp.Variants, variantKeys(p.Variants)},
			} {
				for _, k := range group.keys {
					cp, op := group.cur[k], group.prev[k]
					if op == nil || cp.ServingMetrics == nil || op.ServingMetrics == nil {
						continue
					}
					add(statRow(rn, pn+" "+k, "ttft_ms", true, op.TTFTMS, cp.TTFTMS))
				}
			}
			if p.SeamMetrics != nil && bp.SeamMetrics != nil {
				add(statRow(rn, pn, "seam_latency_ms", true, bp.SeamLatencyMS, p.SeamLatencyMS))
				add(statRow(rn, pn, "queue_wait_ms", true, bp.QueueWaitMS, p.QueueWaitMS))
				add(scalarRow(rn, pn, "tokens_per_s", false, bp.TokensPerS, p.TokensPerS))
				add(scalarRow(rn, pn, "bytes_per_token", true, bp.BytesPerToken, p.BytesPerToken))
				add(scalarRow(rn, pn, "compression_ratio", false, bp.CompressionRatio, p.CompressionRatio))
			}
		}
	}
	return rows
}

// Runs.

type runView struct {
	Name, Kind, Status, Error, Params string
	Target                            targetView
	Seam                              bool
	ServingRows                       []servingRow
	SeamRows                          []seamRow
	Notes                             []string
	Extra                             []kv // seam run facts
}

type targetView struct {
	Name, BaseURL, Model, ModelSource, Endpoint, Ready, Description, Config string
	Metadata                                                                []kv
}

type kv struct{ Key, Value string }

type servingRow struct {
	Label, OK, TTFT, TPOT, Decode, Prefill, E2E, Cached, Speedup string
	Warmup                                                       bool
}

type seamRow struct {
	Run                                                                 string
	Span                                                                int // rows the run name spans; 0 on the run's later rows
	Phase, Transfers, Latency, Queue, Rate, BytesPerToken, Bytes, Conns string
}

func runViews(r *report.Report) []runView {
	var out []runView
	for _, rn := range runOrder(r) {
		run := r.Runs[rn]
		v := runView{Name: rn, Kind: run.Target.Kind, Status: run.Status, Error: run.Error, Seam: run.Target.Kind == "seam"}
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
			v.Target.Ready = fmtNum(*t.ReadyMS) + " ms"
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
			v.Extra = append(v.Extra, kv{"output tokens", fmtAny(run.OutputTokens)})
		}
		if c := run.Cleanup; c != nil {
			v.Extra = append(v.Extra, kv{"cleanup", fmt.Sprintf("session closed %v, open connections %d, queued %d, telemetry %d",
				c.SessionClosed, c.OpenConnections, c.QueuedActivations, c.TelemetryAggregates)})
		}
		for _, pn := range phaseOrder(run) {
			p := run.Phases[pn]
			if p.SeamMetrics != nil {
				v.SeamRows = append(v.SeamRows, seamRowOf(pn, p.SeamMetrics))
			}
			if p.ServingMetrics != nil {
				v.ServingRows = append(v.ServingRows, servingRows(pn, p)...)
				for _, w := range p.Warnings {
					v.Notes = append(v.Notes, pn+": "+w)
				}
				for _, e := range p.Errors.Examples {
					v.Notes = append(v.Notes, fmt.Sprintf("%s: %s error (%s): %s", pn, e.Class, e.Request, e.Message))
				}
			}
			if p.ServerMetricsNote != "" {
				v.Notes = append(v.Notes, pn+": "+p.ServerMetricsNote)
			}
		}
		out = append(out, v)
	}
	return out
}

func pair(a, b *float64) string {
	if a == nil && b == nil {
		return "–"
	}
	return fmtNum(val(a)) + " / " + fmtNum(val(b))
}

func one(a *float64) string { return fmtNum(val(a)) }

func servingRows(pn string, p *report.Phase) []servingRow {
	row := func(label string, m *report.ServingMetrics, speedup *float64) servingRow {
		sp := "–"
		if speedup != nil {
			sp = fmtNum(*speedup) + "×"
		}
		return servingRow{Label: label, OK: fmt.Sprintf("%d/%d", m.Succeeded, m.Requests), TTFT: pair(m.TTFTMS.P50, m.TTFTMS.P95),
			TPOT: one(m.TPOTMS.P50), Decode: one(m.DecodeTokensPerS.P50), Prefill: one(m.PrefillTokensPerS.P50),
			E2E: one(m.E2EMS.P50), Cached: one(m.CachedTokens.P50), Speedup: sp}
	}
	switch {
	case p.Kind == "warmup":
		return []servingRow{{Label: pn, OK: fmt.Sprintf("%d/%d", p.Succeeded, p.Requests), Warmup: true}}
	case len(p.ByPromptTokens) > 0:
		var rows []servingRow
		for _, k := range pointKeys(p.ByPromptTokens) {
			if pt := p.ByPromptTokens[k]; pt.ServingMetrics != nil {
				rows = append(rows, row(pn+" "+k, pt.ServingMetrics, nil))
			}
		}
		return rows
	case len(p.Variants) > 0:
		var rows []servingRow
		for _, k := range variantKeys(p.Variants) {
			if v := p.Variants[k]; v.ServingMetrics != nil {
				rows = append(rows, row(pn+" "+k, v.ServingMetrics, v.Speedup))
			}
		}
		return rows
	}
	return []servingRow{row(pn, p.ServingMetrics, nil)}
}

func seamRowOf(pn string, m *report.SeamMetrics) seamRow {
	ratio := ""
	if m.CompressionRatio != nil {
		ratio = " (" + fmtNum(*m.CompressionRatio) + "×)"
	}
	return seamRow{Phase: pn, Transfers: fmt.Sprint(m.Transfers), Latency: pair(m.SeamLatencyMS.P50, m.SeamLatencyMS.P95),
		Queue: one(m.QueueWaitMS.P95), Rate: one(m.TokensPerS), BytesPerToken: one(m.BytesPerToken),
		Bytes: fmt.Sprintf("%d / %d%s", m.PayloadBytes, m.WireBytes, ratio), Conns: fmt.Sprint(m.ConnectionAttempts)}
}
