// Package foreign reads other benchmarking tools' result files as tollgate
// reports, and writes tollgate's load points as a vLLM result.
//
// A result file is recognised by its content, never by its name: a vLLM
// `benchmark_serving.py` / `vllm bench serve --save-result` file (one JSON
// object, or one a line as --append-result writes them), a GuideLLM
// `benchmarks.json`, an NVIDIA AIPerf `profile_export_aiperf.json`, an
// llm-d benchmark report (v0.1 or v0.2.x, as JSON). Each is
// mapped onto tollgate's own report types and metric table (report.Metrics):
// one run of one load phase, one load point per benchmark. Per-request
// values, where the file has them, become request samples folded by
// report/fold exactly as a run's are, so compare, report and judge treat
// them as they treat tollgate's, noise test included; a file with only
// summaries carries its statistics as the tool computed them and no
// samples, so a comparison cannot tell its noise (compare's own rule).
//
// Where a tool defines a metric differently from tollgate, the report's
// Imported.Notes say how (definition notes), and every reader shows them.
package foreign

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/report/view"
)

// ErrFormat marks a file recognised as another tool's result that this
// tollgate cannot read: a field missing or of the wrong type, a key or a
// version it does not know. It wraps report.ErrNotReport.
var ErrFormat = fmt.Errorf("%w as this tollgate reads it", report.ErrNotReport)

// Expected is what a reader of reports accepts, for errors that say what
// a file was expected to be.
const Expected = "a tollgate report (schema_version, tool.name \"tollgate\"), a vLLM bench serve result (--save-result: backend or endpoint_type, model_id, num_prompts, …), " +
	"a GuideLLM benchmarks.json (v0.2/v0.3: benchmarks[].metrics), an AIPerf profile_export_aiperf.json (records of time_to_first_token, request_latency, …) " +
	"or an llm-d benchmark report in JSON (v0.1: version, scenario, metrics; v0.2.x: version, run, scenario, results)"

// ReadFile reads the tollgate report or other tool's result at path,
// recognised by its content, under report.ReadFile's rules (a regular
// file of at most report.MaxReportBytes). A tollgate report is decoded as
// report.ReadFile decodes it; another tool's result is mapped (Decode).
func ReadFile(path string) (*report.Report, error) {
	data, err := report.ReadBytes(path)
	if err != nil {
		return nil, err
	}
	return Decode(path, data)
}

// Decode maps data, read from path, onto a report: a tollgate report as
// it is (report.DecodeFile), a result of another tool through its reader.
// A JSON document that is neither is refused as report.DecodeFile refuses
// it, naming what was expected.
func Decode(path string, data []byte) (*report.Report, error) {
	body := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	tool, first := detect(body)
	var rep *report.Report
	var err error
	as := ""
	switch tool {
	case toolTollgate:
		return report.DecodeFile(path, data)
	case toolVLLM:
		rep, err = readVLLM(body)
		as = VLLMTool
	case toolGuideLLM:
		rep, err = readGuideLLM(first)
		as = GuideLLMTool
	case toolAIPerf:
		rep, err = readAIPerf(first)
		as = AIPerfTool
	case toolLLMD:
		rep, err = readLLMD(first)
		as = LLMDTool
	default:
		rep, err = report.DecodeFile(path, data)
		if err != nil {
			err = fmt.Errorf("%w\n(tollgate reads %s)", err, Expected)
		}
		return rep, err
	}
	if err == nil {
		err = sound(rep)
	}
	if err != nil && as != "" {
		return nil, fmt.Errorf("%s (read as a result of %s): %w", path, as, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rep.Scenario.File = path
	rep.Imported.File = path
	return rep, nil
}

// sound checks a mapped report as a tollgate report is checked when it is
// read back (the report schema, min ≤ p50 ≤ … ≤ max, succeeded + errors =
// requests), but for its host, which no tool records: what the readers
// of reports rely on holds of an import too.
func sound(rep *report.Report) error {
	c := *rep
	c.Host = report.Host{OS: "-", Arch: "-", CPUCores: 1, GoVersion: "-"}
	data, err := json.Marshal(&c)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if v := report.Check(doc); len(v) > 0 {
		return fmt.Errorf("%w: mapped onto a tollgate report, %s", ErrFormat, v[0])
	}
	return nil
}

const (
	toolUnknown = iota
	toolTollgate
	toolVLLM
	toolGuideLLM
	toolAIPerf
	toolLLMD
)

// detect names the tool that wrote data by the keys of its first JSON
// object, which it returns decoded (numbers as json.Number).
func detect(data []byte) (int, map[string]any) {
	dec := json.NewDecoder(bytes.NewReader(pythonJSON(data)))
	dec.UseNumber()
	var first any
	if err := dec.Decode(&first); err != nil {
		return toolUnknown, nil
	}
	m, ok := first.(map[string]any)
	if !ok {
		return toolUnknown, nil
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				return false
			}
		}
		return true
	}
	switch {
	case has("schema_version") || has("tool"):
		return toolTollgate, m
	case has("model_id", "num_prompts") && (has("backend") || has("endpoint_type")):
		return toolVLLM, m
	case has("benchmarks"):
		return toolGuideLLM, m
	case has("records") || isAIPerfFlat(m):
		return toolAIPerf, m
	case has("version", "scenario") && (has("metrics") || has("results")):
		return toolLLMD, m
	}
	return toolUnknown, m
}

// pythonJSON turns the non-JSON tokens Python's json module writes for
// floats (NaN, Infinity, -Infinity: vLLM's mean of no values) into null,
// outside strings; other input is returned as it is.
func pythonJSON(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	var out bytes.Buffer
	inStr, esc := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			out.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
		case bytes.HasPrefix(data[i:], []byte("NaN")):
			out.WriteString("null")
			i += len("NaN") - 1
			continue
		case bytes.HasPrefix(data[i:], []byte("-Infinity")):
			out.WriteString("null")
			i += len("-Infinity") - 1
			continue
		case bytes.HasPrefix(data[i:], []byte("Infinity")):
			out.WriteString("null")
			i += len("Infinity") - 1
			continue
		}
		out.WriteByte(c)
	}
	return out.Bytes()
}

// FieldError is a value of a result file that cannot be read: where (a
// JSON pointer into the file, with the line of a JSON-lines file) and why.
type FieldError struct {
	// Line is the 1-based line of a JSON-lines file; 0 for a document.
	Line    int
	Pointer string
	Message string
}

func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Pointer, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Pointer, e.Message)
}

// Unwrap makes a FieldError an ErrFormat.
func (e *FieldError) Unwrap() error { return ErrFormat }

// rd reads a decoded document, keeping the first problem: each accessor
// returns a zero value after one, so a reader checks err once at the end.
type rd struct {
	line int
	err  error
}

func (r *rd) fail(ptr, format string, a ...any) {
	if r.err == nil {
		r.err = &FieldError{Line: r.line, Pointer: ptr, Message: fmt.Sprintf(format, a...)}
	}
}

// at is ptr with key appended, escaped as JSON pointers escape it.
func at(ptr, key string) string {
	return ptr + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// number is v as a finite number; ok false for null (or absent), which
// the tools write for a figure they have not got.
func (r *rd) number(v any, ptr string) (float64, bool) {
	switch x := v.(type) {
	case nil:
		return 0, false
	case json.Number:
		f, err := x.Float64()
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			r.fail(ptr, "%s is not a finite number", x)
			return 0, false
		}
		return f, true
	}
	r.fail(ptr, "want a number, got %s", kindOf(v))
	return 0, false
}

// count is v as a whole number ≥ 0.
func (r *rd) count(v any, ptr string) (int, bool) {
	f, ok := r.number(v, ptr)
	if !ok {
		return 0, false
	}
	if f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		r.fail(ptr, "want a whole number ≥ 0, got %v", f)
		return 0, false
	}
	return int(f), true
}

// nonNegative is v as a number ≥ 0.
func (r *rd) nonNegative(v any, ptr string) (float64, bool) {
	f, ok := r.number(v, ptr)
	if ok && f < 0 {
		r.fail(ptr, "want a number ≥ 0, got %v", f)
		return 0, false
	}
	return f, ok
}

func (r *rd) text(v any, ptr string) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	}
	r.fail(ptr, "want a string, got %s", kindOf(v))
	return "", false
}

func (r *rd) object(v any, ptr string) (map[string]any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case map[string]any:
		return x, true
	}
	r.fail(ptr, "want an object, got %s", kindOf(v))
	return nil, false
}

func (r *rd) list(v any, ptr string) ([]any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case []any:
		return x, true
	}
	r.fail(ptr, "want a list, got %s", kindOf(v))
	return nil, false
}

// need is m[key], failing when it is absent or null.
func (r *rd) need(m map[string]any, ptr, key string, what string) any {
	v, ok := m[key]
	if !ok || v == nil {
		r.fail(at(ptr, key), "missing; %s", what)
		return nil
	}
	return v
}

// summary is a distribution as a tool summarised it, in tollgate's units.
type summary struct {
	count                              int
	mean, min, p50, p90, p95, p99, max *float64
	// at is where a statistic (min, p50, …, mean) is in the file.
	at func(stat string) string
}

// stat is the summary as a report.Stat, after checking its order (min ≤
// p50 ≤ … ≤ max, min ≤ mean ≤ max) as a tollgate report's is checked.
func (r *rd) stat(s summary) report.Stat {
	st := report.Stat{Count: s.count}
	if s.count == 0 {
		return st // a statistic over nothing is absent
	}
	st.Mean, st.Min, st.P50, st.P90, st.P95, st.P99, st.Max = s.mean, s.min, s.p50, s.p90, s.p95, s.p99, s.max
	above := func(a, b float64) bool { return a > b+1e-9*math.Max(math.Abs(a), math.Abs(b)) }
	order := []struct {
		name string
		v    *float64
	}{{"min", s.min}, {"p50", s.p50}, {"p90", s.p90}, {"p95", s.p95}, {"p99", s.p99}, {"max", s.max}}
	prev := -1
	for i, o := range order {
		if o.v == nil {
			continue
		}
		if prev >= 0 && above(*order[prev].v, *o.v) {
			r.fail(s.at(order[prev].name), "%v is above the %s (%v at %s): a summary's statistics never decrease from min to max",
				*order[prev].v, o.name, *o.v, s.at(o.name))
		}
		prev = i
	}
	if s.mean != nil && s.min != nil && above(*s.min, *s.mean) {
		r.fail(s.at("mean"), "%v is below the min (%v at %s)", *s.mean, *s.min, s.at("min"))
	}
	if s.mean != nil && s.max != nil && above(*s.mean, *s.max) {
		r.fail(s.at("mean"), "%v is above the max (%v at %s)", *s.mean, *s.max, s.at("max"))
	}
	return st
}

// point is one benchmark of a result, before it is folded: its load and
// either its requests or its summaries.
type point struct {
	lp *report.LoadPoint // Concurrency or Rate, and the tool's throughputs
	// samples are every request of the point, in order; nil when the file
	// has only summaries, which are then in lp.ServingMetrics.
	samples []report.RequestSample
}

// phaseName and the run name are what an imported report's one run and
// load phase are called until Align names them after another report's.
const phaseName = "load"

// build folds the points into one load phase of one run named runName,
// in a report of the scenario name: every request sample through
// report/fold, as a run's, and summaries as they are.
func build(imp *report.Imported, name, runName string, identity map[string]string, started time.Time, target report.Target, points []point) *report.Report {
	ph := &report.Phase{Kind: report.KindLoad}
	all := fold.New(fold.Options{})
	var samples []report.RequestSample
	haveSamples := len(points) > 0
	for _, p := range points {
		haveSamples = haveSamples && p.samples != nil
	}
	var total float64
	for _, p := range points {
		label := view.PointLabel(p.lp)
		if haveSamples {
			f := fold.New(fold.Options{})
			var inFlightMS float64
			for j := range p.samples {
				s := &p.samples[j]
				s.Phase, s.Point = phaseName, label
				f.Add(s, fmt.Sprintf("%s %s request %d", phaseName, label, s.Index))
				all.Add(s, fmt.Sprintf("%s %s request %d", phaseName, label, s.Index))
				inFlightMS += s.E2EMS
			}
			p.lp.ServingMetrics = f.Close()
			if p.lp.DurationS > 0 && p.lp.AchievedConcurrency == nil {
				p.lp.AchievedConcurrency = report.F(inFlightMS / 1000 / p.lp.DurationS)
			}
			samples = append(samples, p.samples...)
		}
		if p.lp.ServingMetrics.Warnings == nil {
			p.lp.ServingMetrics.Warnings = []string{}
		}
		ph.Points = append(ph.Points, p.lp)
		total += p.lp.DurationS
	}
	switch {
	case haveSamples:
		ph.ServingMetrics = all.Close()
		ph.Samples = samples
	case len(points) == 1:
		cp := *points[0].lp.ServingMetrics
		ph.ServingMetrics = &cp
	default:
		ph.ServingMetrics = pooledCounts(points)
	}
	imp.Samples = haveSamples
	run := &report.Run{Name: runName, Params: map[string]string{}, Target: target, Status: "ok",
		Phases: map[string]*report.Phase{phaseName: ph}, PhaseOrder: []string{phaseName}}
	sha, ident := identityOf(identity)
	ended := started
	if !started.IsZero() {
		ended = started.Add(time.Duration(total * float64(time.Second)))
	}
	return &report.Report{
		SchemaVersion: report.SchemaVersion,
		Tool:          report.Tool{Name: "tollgate"},
		Scenario:      report.ScenarioInfo{Name: name, SHA256: sha, Identity: ident, Vars: map[string]any{}},
		StartedAt:     started.UTC(), EndedAt: ended.UTC(),
		Status:   report.StatusNotGated,
		Runs:     map[string]*report.Run{runName: run},
		RunOrder: []string{runName},
		Gates:    []report.GateResult{},
		Imported: imp,
	}
}

// pooledCounts is a phase over several points known only by their
// summaries: counts add, and every statistic is its count alone (the
// points' distributions cannot be pooled from their percentiles).
func pooledCounts(points []point) *report.ServingMetrics {
	m := &report.ServingMetrics{Errors: report.ErrorSummary{ByClass: map[string]int{}}, Warnings: []string{}}
	for _, c := range report.ErrorClasses {
		m.Errors.ByClass[c] = 0
	}
	for _, p := range points {
		s := p.lp.ServingMetrics
		m.Requests += s.Requests
		m.Succeeded += s.Succeeded
		m.Errors.Count += s.Errors.Count
		for k, v := range s.Errors.ByClass {
			m.Errors.ByClass[k] += v
		}
		for _, row := range report.Metrics {
			row.Stat(m).Count += row.Stat(s).Count
		}
	}
	if m.Requests > 0 {
		m.Errors.Rate = report.F(float64(m.Errors.Count) / float64(m.Requests))
	}
	return m
}

// summaries are a point's serving metrics from a tool's summaries: the
// counts, the failures under class, and the statistics given.
func summaries(requests, succeeded int, class string, stats map[string]report.Stat) *report.ServingMetrics {
	m := &report.ServingMetrics{Requests: requests, Succeeded: succeeded, Warnings: []string{},
		Errors: report.ErrorSummary{Count: requests - succeeded, ByClass: map[string]int{}}}
	for _, c := range report.ErrorClasses {
		m.Errors.ByClass[c] = 0
	}
	m.Errors.ByClass[class] += m.Errors.Count
	if requests > 0 {
		m.Errors.Rate = report.F(float64(m.Errors.Count) / float64(requests))
	}
	for _, row := range report.Metrics {
		if st, ok := stats[row.Key]; ok {
			*row.Stat(m) = st
		}
	}
	return m
}

// identityOf is the scenario identity of an imported result: a hash per
// field of what it measured (its load, its client's settings) and the
// SHA-256 over them, as a tollgate scenario's, so that two results of
// the same benchmark compare and two of different ones are refused
// naming the fields.
func identityOf(fields map[string]string) (string, map[string]string) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ident := make(map[string]string, len(fields))
	var all strings.Builder
	for _, k := range keys {
		h := sha256.Sum256([]byte(fields[k]))
		ident[k] = hex.EncodeToString(h[:8])
		fmt.Fprintf(&all, "%s\x00%s\n", k, ident[k])
	}
	h := sha256.Sum256([]byte(all.String()))
	return hex.EncodeToString(h[:]), ident
}

// jsonText is v as compact JSON, for identity fields.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// excerpt bounds a message quoted from a file (a Python traceback).
func excerpt(s string) string {
	const most = 300
	s = strings.TrimSpace(s)
	if len(s) > most {
		cut := most
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// errNoPoints is a result with no benchmark in it.
var errNoPoints = errors.New("no benchmark in it")
