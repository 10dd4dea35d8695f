package compare

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
)

// Direction says which way a metric improves.
type Direction int

const (
	// Neutral metrics describe the workload (cached tokens) rather than rate it.
	Neutral Direction = iota
	// LowerIsBetter: durations (*_ms), bytes, error rates, connections.
	LowerIsBetter
	// HigherIsBetter: rates (*_per_s), speedup, compression ratio.
	HigherIsBetter
)

func (d Direction) String() string {
	switch d {
	case LowerIsBetter:
		return "lower is better"
	case HigherIsBetter:
		return "higher is better"
	}
	return "neutral"
}

// direction of a metric: the metric table's for a request metric, else by
// its name: durations lower, rates higher.
func direction(name string) Direction {
	if m, ok := report.MetricByKey(name); ok {
		return Direction(m.Better)
	}
	switch {
	case strings.HasSuffix(name, "_ms"), strings.HasSuffix(name, "_bytes"), name == "bytes_per_token",
		name == "rate", name == "connection_attempts":
		return LowerIsBetter
	case strings.HasSuffix(name, "_per_s"), name == "speedup", name == "compression_ratio", name == "max_concurrency", name == "attained_pct":
		return HigherIsBetter
	}
	return Neutral
}

// entry is one metric of one report.
type entry struct {
	path          []string
	values        map[string]float64 // statistic → value; absent statistics are missing
	scalar        bool
	samples       []float64 // nil when the report kept none for this metric
	samplesNote   string    // why samples is nil although the phase has samples
	deterministic bool      // seam runs: virtual time, no noise
	// reps holds, per statistic, its value in each repetition of the
	// scenario (run --repeat-runs), when the report has them.
	reps map[string][]float64
	// workload names a load point's offered load ("concurrency 8",
	// "rate 20/s"): points are matched by position, and the same position
	// under another load is not the same workload.
	workload string
}

// metrics lists every metric of a report by its path key, in report order,
// and the phases left out as pooled (walker.pooled).
func metrics(r *report.Report) (map[string]*entry, []string, []string, error) {
	w := &walker{byKey: map[string]*entry{}}
	for _, rn := range r.RunNames() {
		run := r.Runs[rn]
		if run == nil {
			continue
		}
		if err := w.run(rn, run); err != nil {
			return nil, nil, nil, fmt.Errorf("run %s: %w", rn, err)
		}
	}
	if r.Repetitions != nil {
		for _, e := range w.byKey {
			e.reps = repValues(r.Repetitions.Runs, e.path[1:])
		}
	}
	return w.byKey, w.order, w.pooled, nil
}

// workloads counts the workloads a live phase's own distributions pool: its
// prompt sizes, variants and load points. More than one means the
// phase-level distribution mixes different workloads, which no comparison
// may judge: a phase whose every prompt size got 50% slower can show a
// faster pooled p50 when the mix of sizes shifts.
func workloads(p *report.Phase) int {
	return max(len(p.ByPromptTokens), len(p.Variants), len(p.Points))
}

type walker struct {
	byKey map[string]*entry
	order []string
	// pooled names the phases whose own distributions pool several
	// workloads (prompt sizes, variants, load points) and so are left out:
	// only their slices are compared.
	pooled []string
	// workload is set while a load point's metrics are walked.
	workload string
	seamLive bool // the run being walked is a live seam capture
}

func (w *walker) add(e *entry) {
	k := pathKey(e.path)
	if _, dup := w.byKey[k]; dup {
		return
	}
	e.workload = w.workload
	w.byKey[k] = e
	w.order = append(w.order, k)
}

func (w *walker) dist(path []string, s report.Stat, samples []float64, note string, det bool) {
	vals := map[string]float64{}
	for _, name := range []string{"p50", "p90", "p95", "p99", "mean", "min", "max"} {
		if v := s.Field(name); v != nil {
			vals[name] = *v
		}
	}
	if samples != nil && len(samples) != s.Count {
		note = fmt.Sprintf("%d samples for a statistic over %d: noise unknown", len(samples), s.Count)
		samples = nil
	}
	w.add(&entry{path: path, values: vals, samples: samples, samplesNote: note, deterministic: det})
}

func (w *walker) scalar(path []string, v *float64, det bool) {
	vals := map[string]float64{}
	if v != nil {
		vals["value"] = *v
	}
	w.add(&entry{path: path, values: vals, scalar: true, deterministic: det})
}

func (w *walker) run(rn string, run *report.Run) error {
	base := []string{"runs", rn}
	// A seam captured live is timed on a wall clock: not deterministic.
	w.seamLive = run.Source == report.SourceLive
	if run.Target.Kind == report.TargetSeam {
		var all []report.SeamSample
		haveSamples := false
		for _, pn := range run.PhaseNames() {
			p := run.Phases[pn]
			if p == nil || p.SeamMetrics == nil {
				continue
			}
			_, ss, err := report.PhaseSamples(p, report.TargetSeam)
			if err != nil {
				return fmt.Errorf("phase %s: %w", pn, err)
			}
			if ss != nil {
				haveSamples = true
				all = append(all, ss...)
			}
			pp := join(base, "phases", pn)
			w.seam(pp, p.SeamMetrics, ss, ss != nil, "")
			for _, sn := range sortedKeys(p.SeamsByName) {
				w.seam(join(pp, "seams", sn), p.SeamsByName[sn], ss, ss != nil, sn)
			}
		}
		for _, sn := range sortedKeys(run.Seams) {
			w.seam(join(base, "seams", sn), run.Seams[sn], all, haveSamples, sn)
		}
		if run.Connections != nil {
			v := float64(run.Connections.Attempts)
			w.scalar(join(base, "connections", "attempts"), &v, !w.seamLive)
		}
		return nil
	}
	for _, pn := range run.PhaseNames() {
		p := run.Phases[pn]
		if p != nil && p.Capacity != nil {
			w.capacity(join(base, "phases", pn, "capacity"), p.Capacity)
		}
		if p == nil || p.ServingMetrics == nil || p.Kind == report.KindWarmup {
			continue
		}
		reqs, _, err := report.PhaseSamples(p, run.Target.Kind)
		if err != nil {
			return fmt.Errorf("phase %s: %w", pn, err)
		}
		pp := join(base, "phases", pn)
		if n := workloads(p); n > 1 {
			w.pooled = append(w.pooled, fmt.Sprintf("%s/%s (%d workloads)", rn, pn, n))
			w.scalar(join(pp, "errors", "rate"), p.ServingMetrics.Errors.Rate, false)
		} else {
			w.serving(pp, p.ServingMetrics, reqs, reqs != nil, nil)
		}
		for _, k := range report.PointKeys(p.ByPromptTokens) {
			if pt := p.ByPromptTokens[k]; pt != nil && pt.ServingMetrics != nil {
				w.serving(join(pp, "by_prompt_tokens", k), pt.ServingMetrics, reqs, reqs != nil, &k)
			}
		}
		// Load points: matched by position, which the scenario hash (same
		// sweep) makes the same point in both reports.
		for i, lp := range p.Points {
			if lp == nil || lp.ServingMetrics == nil {
				continue
			}
			ip := join(pp, "points", strconv.Itoa(i))
			w.workload = fmt.Sprintf("concurrency %d", lp.Concurrency)
			if lp.Rate > 0 {
				w.workload = fmt.Sprintf("rate %g/s", lp.Rate)
			}
			// A point's samples carry its label (engine/live names them
			// the same way as the workload).
			label := w.workload
			w.serving(ip, lp.ServingMetrics, reqs, reqs != nil, &label)
			w.dist(join(ip, "queue_ms"), lp.QueueMS, nil, "", false)
			w.scalar(join(ip, "request_throughput_per_s"), lp.RequestThroughputPerS, false)
			w.scalar(join(ip, "output_tokens_per_s"), lp.OutputTokensPerS, false)
			w.scalar(join(ip, "total_tokens_per_s"), lp.TotalTokensPerS, false)
			w.scalar(join(ip, "achieved_rate_per_s"), lp.AchievedRatePerS, false)
			if g := lp.Goodput; g != nil {
				w.scalar(join(ip, "goodput", "good_requests_per_s"), g.GoodRequestsPerS, false)
				w.scalar(join(ip, "goodput", "attained_pct"), g.AttainedPct, false)
			}
			w.workload = ""
		}
		for _, k := range report.PointKeys(p.Variants) {
			if pt := p.Variants[k]; pt != nil && pt.ServingMetrics != nil {
				vp := join(pp, "variants", k)
				w.serving(vp, pt.ServingMetrics, reqs, reqs != nil, &k)
				if pt.Speedup != nil {
					w.scalar(join(vp, "speedup"), pt.Speedup, false)
				}
			}
		}
	}
	return nil
}

func (w *walker) seam(path []string, m *report.SeamMetrics, ss []report.SeamSample, have bool, seam string) {
	if m == nil {
		return
	}
	det := !w.seamLive
	var lat, q []float64
	if have {
		lat, q = []float64{}, []float64{}
		for _, s := range ss {
			if seam == "" || s.Seam == seam {
				lat = append(lat, s.SeamLatencyMS)
				q = append(q, s.QueueWaitMS)
			}
		}
	}
	w.dist(join(path, "seam_latency_ms"), m.SeamLatencyMS, lat, "", det)
	if w.seamLive {
		q = nil // a capture cannot see queueing: its samples hold none
	}
	w.dist(join(path, "queue_wait_ms"), m.QueueWaitMS, q, "", det)
	w.scalar(join(path, "tokens_per_s"), m.TokensPerS, det)
	w.scalar(join(path, "bytes_per_token"), m.BytesPerToken, det)
	w.scalar(join(path, "total_latency_ms"), &m.TotalLatencyMS, det)
	w.scalar(join(path, "compression_ratio"), m.CompressionRatio, det)
	wire := float64(m.WireBytes)
	w.scalar(join(path, "wire_bytes"), &wire, det)
	conns := float64(m.ConnectionAttempts)
	w.scalar(join(path, "connection_attempts"), &conns, det)
}

// servingFields are the distributions of a live phase or point that carry a
// value per request sample; itl_ms has none (samples do not hold the gaps).
func (w *walker) serving(path []string, m *report.ServingMetrics, reqs []report.RequestSample, have bool, point *string) {
	pick := func(get func(*report.RequestSample) (float64, bool)) []float64 {
		if !have {
			return nil
		}
		out := []float64{}
		for i := range reqs {
			s := &reqs[i]
			if !s.OK || (point != nil && s.Point != *point) {
				continue
			}
			if v, ok := get(s); ok {
				out = append(out, v)
			}
		}
		return out
	}
	for _, d := range report.Metrics {
		if !d.Compared {
			continue
		}
		var samples []float64
		note := ""
		if d.Value != nil {
			samples = pick(d.Value)
		} else if have {
			note = "no per-request values in the samples: noise unknown"
		}
		w.dist(join(path, d.Key), *d.Stat(m), samples, note, false)
	}
	w.scalar(join(path, "errors", "rate"), m.Errors.Rate, false)
}

func join(base []string, more ...string) []string {
	return append(append(make([]string, 0, len(base)+len(more)), base...), more...)
}

// pathKey is a metric's path in gate syntax: runs["a/b"].phases.decode.ttft_ms.
func pathKey(path []string) string {
	var b strings.Builder
	for i, s := range path {
		switch {
		case i == 0:
			b.WriteString(s)
		case isIndex(s):
			b.WriteString("[" + s + "]")
		case isIdent(s):
			b.WriteString("." + s)
		default:
			b.WriteString("[" + strconv.Quote(s) + "]")
		}
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// repValues finds, under a repetitions tree (report.Repetitions.Runs), the
// statistics at path (a metric's path below runs) and returns each one's
// values across the repetitions; nil when the tree lacks the path.
func repValues(tree map[string]any, path []string) map[string][]float64 {
	var cur any = tree
	for _, k := range path {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil
	}
	out := map[string][]float64{}
	for stat, v := range m {
		switch x := v.(type) {
		case report.RepStat:
			out[stat] = x.Values
		case map[string]any: // decoded from JSON
			list, _ := x["values"].([]any)
			var vals []float64
			for _, e := range list {
				if f, ok := e.(float64); ok {
					vals = append(vals, f)
				}
			}
			if len(vals) > 0 {
				out[stat] = vals
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// capacity adds a capacity search: the value found, and its bracket beside
// it (the highest pass and the lowest fail, neutral: where the search
// probed, not how well the server did).
func (w *walker) capacity(path []string, c *report.Capacity) {
	if c.By == "concurrency" {
		var v *float64
		if c.MaxConcurrency != nil {
			f := float64(*c.MaxConcurrency)
			v = &f
		}
		w.scalar(join(path, "max_concurrency"), v, false)
	} else {
		w.scalar(join(path, "max_rate_per_s"), c.MaxRatePerS, false)
	}
	w.scalar(join(path, "bracket", "pass"), c.Bracket.Pass, false)
	w.scalar(join(path, "bracket", "fail"), c.Bracket.Fail, false)
}
