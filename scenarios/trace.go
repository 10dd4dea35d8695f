package scenarios

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/workload"
)

// PhaseTrace replays a request trace with its timestamps. Only the trace
// kind's own files name it, so it is spelt here, not in report/kinds.go.
const PhaseTrace = "trace"

// TraceKind is the trace kind's scenario side: its keys and checks. The
// live side is live's traceKind; its row in phaseKindTable
// registers both (live.Kinds is generated from it).
func TraceKind() KindSpec {
	return KindSpec{name: PhaseTrace, keys: traceKeys, check: checkTrace}
}

// TraceFields are a trace phase's keys (the trace block) and what loading
// found in its file; Phase has them through KindFields.
type TraceFields struct {
	Trace     TraceSpec  `yaml:"trace" json:"trace"`
	TraceInfo *TraceInfo `yaml:"-" json:"-"`
}

// TraceSpec is a trace phase's trace: the file, its format, the time
// scale and the window replayed.
type TraceSpec struct {
	Meta   `json:"-"`
	File   string `yaml:"file" json:"file"`
	Format string `yaml:"format" json:"format"`
	// BlockTokens is the prompt tokens behind one Mooncake hash id.
	BlockTokens int `yaml:"block_tokens" json:"block_tokens,omitempty"`
	// Speed divides every offset (10: ten times faster); Rate instead
	// scales the trace to this mean arrival rate (requests/s).
	Speed float64 `yaml:"speed" json:"speed,omitempty"`
	Rate  float64 `yaml:"rate" json:"rate,omitempty"`
	// From and To select the requests whose trace offset lies in
	// [from, to), in trace time; they are replayed from from.
	From Duration `yaml:"from" json:"from"`
	To   Duration `yaml:"to" json:"to"`
}

// TraceInfo is what the load-time pass over a trace found.
type TraceInfo struct {
	workload.TraceSummary
	// Path is the file as named (relative to the working directory);
	// Resolved is where it led, symlinks resolved, when it was checked
	// against the scenario's tree: a replay opens that file, not
	// whatever the name leads to by then.
	Path, Resolved string
	// Scale multiplies trace offsets into replay offsets (1 / speed).
	Scale float64
}

// ReplayRate is the trace's mean arrival rate after the time scale
// (requests/s over the window's span); 0 when the span is 0.
func (t *TraceInfo) ReplayRate() float64 {
	span := t.Span.Seconds() * t.Scale
	if t.Requests < 2 || span <= 0 {
		return 0
	}
	return float64(t.Requests-1) / span
}

// MaxTraceReplay bounds how long a trace phase's replay may last: the
// window's span (its first request to its last) × the time scale. A week
// of trace (Azure 2024's) replayed in real time is 7 days, and a month is
// four times that; a replay past it could not finish in any CI job or
// soak window, and the number behind it is a typo: a row a century off, a
// speed of 1e-300. Past the bound the phase is refused at load, naming the
// row and the key that scales it, rather than wait for months, or, past
// what a time.Duration holds (292 years), wrap and send everything at once.
const MaxTraceReplay = 30 * 24 * time.Hour

var traceKeys = []string{"kind", "description", "trace", "requests", "max_tokens", "max_in_flight", "max_dispatch_lag", "seed", "max_error_rate"}

// checkTrace applies a trace phase's defaults and streams the trace once,
// so a bad line is an error before anything is sent.
func checkTrace(d *decoder, p *Phase, path string) {
	e, scenarioFile := d.errs, d.file
	t := &p.Trace
	tp := path + ".trace"
	errsBefore := len(e.list)
	if !p.Has("trace") || t.File == "" {
		e.add(p.Pos, "%s: a trace phase needs trace.file (and trace.format: %s)", path, strings.Join(workload.TraceFormats, ", "))
		return
	}
	if t.Format == "" {
		t.Format = workload.FormatMooncake
		if strings.HasSuffix(t.File, ".csv") {
			e.add(t.At("file"), "%s.format: a CSV trace needs its format (burstgpt or azure)", tp)
			return
		}
	}
	if !oneOf(t.Format, workload.TraceFormats) {
		e.add(t.At("format"), "%s.format: unknown %q (one of %s)%s", tp, t.Format, strings.Join(workload.TraceFormats, ", "), suggest(t.Format, workload.TraceFormats))
		return
	}
	if t.BlockTokens == 0 {
		t.BlockTokens = 512 // Mooncake's
	}
	if t.BlockTokens < 1 {
		e.add(t.At("block_tokens"), "%s.block_tokens: must be at least 1, got %d", tp, t.BlockTokens)
	}
	if t.Has("block_tokens") && t.Format != workload.FormatMooncake {
		e.add(t.At("block_tokens"), "%s.block_tokens: applies to mooncake traces (their hash_ids)", tp)
	}
	if t.Has("speed") && t.Has("rate") {
		e.add(t.At("rate"), "%s: give speed or rate, not both", tp)
	}
	if t.Has("speed") && !(t.Speed > 0) {
		e.add(t.At("speed"), "%s.speed: must be positive, got %v", tp, t.Speed)
	}
	if t.Has("rate") && !(t.Rate > 0) {
		e.add(t.At("rate"), "%s.rate: must be a positive number of requests per second, got %v", tp, t.Rate)
	}
	if t.From.Duration < 0 || (t.Has("to") && t.To.Duration <= t.From.Duration) {
		e.add(t.At("to"), "%s: the window needs 0 <= from < to, got from %v to %v", tp, t.From.Duration, t.To.Duration)
	}
	if p.Requests.List != nil {
		e.add(p.At("requests"), "%s.requests: a trace phase takes a count (the first N requests of the window)", path)
	}
	if p.MaxInFlight < 0 {
		e.add(p.At("max_in_flight"), "%s.max_in_flight: must be positive, got %d", path, p.MaxInFlight)
	}
	if len(e.list) > errsBefore {
		return
	}
	full := resolve(scenarioFile, t.File)
	s, resolved, err := summarizeTrace(d, t.At("file"), full, t, p.Requests.Count)
	if err != nil {
		e.add(t.At("file"), "%s.file: %v", tp, err)
		return
	}
	if s.Requests == 0 {
		e.add(t.At("file"), "%s.file: %s holds no requests%s", tp, full, window(t))
		return
	}
	info := &TraceInfo{TraceSummary: s, Path: full, Resolved: resolved, Scale: 1}
	if t.Speed > 0 {
		info.Scale = 1 / t.Speed
	}
	if t.Rate > 0 {
		if s.Requests < 2 || s.Span <= 0 {
			e.add(t.At("rate"), "%s.rate: the window's %d requests span no time, so there is no rate to scale", tp, s.Requests)
			return
		}
		info.Scale = float64(s.Requests-1) / s.Span.Seconds() / t.Rate
	}
	if !checkReplay(e, t, tp, info) {
		return
	}
	p.TraceInfo = info
}

// checkReplay refuses a time scale that would make the replay last past
// MaxTraceReplay (or that is not a finite number), at the key that sets
// the scale (trace.speed, trace.rate, else trace.file), naming the
// window's last request.
func checkReplay(e *errs, t *TraceSpec, tp string, info *TraceInfo) bool {
	key, scale := "file", "at speed 1"
	switch {
	case t.Has("speed"):
		key, scale = "speed", fmt.Sprintf("at speed %v", t.Speed)
	case t.Has("rate"):
		key, scale = "rate", fmt.Sprintf("at rate %v/s", t.Rate)
	}
	replay := info.Span.Seconds() * info.Scale // seconds; +Inf or NaN when the scale overflows
	if !math.IsInf(info.Scale, 0) && replay <= MaxTraceReplay.Seconds() {
		return true
	}
	after := "would be sent " + workload.SpanText(replay) + " after its first"
	if math.IsInf(replay, 0) || math.IsNaN(replay) {
		after = "would be sent after its first by more than a number can hold"
	}
	e.add(t.At(key), "%s.%s: %s the window's last request (%s:%d, %v after its first in the trace) %s, over the bound of %s a replay may last; give a larger speed or rate, or narrow the window (trace.from, trace.to, requests)",
		tp, key, scale, info.Path, info.LastLine, workload.SpanText(info.Span.Seconds()), after, workload.SpanText(MaxTraceReplay.Seconds()))
	return false
}

// summarizeTrace opens the trace by the rules of every file a scenario
// names (openNamed) and streams it once.
func summarizeTrace(d *decoder, at Pos, full string, t *TraceSpec, limit int) (workload.TraceSummary, string, error) {
	f, err := d.openNamed(at, full, "trace", MaxTraceBytes)
	if err != nil {
		return workload.TraceSummary{}, "", err
	}
	tr, err := workload.NewTraceReader(full, f, t.Format)
	if err != nil {
		return workload.TraceSummary{}, "", err
	}
	defer tr.Close()
	s, err := tr.Summarize(t.From.Duration, t.To.Duration, limit)
	return s, f.Resolved, err
}

func window(t *TraceSpec) string {
	if !t.Has("from") && !t.Has("to") {
		return ""
	}
	return fmt.Sprintf(" in the window [%v, %v)", t.From.Duration, t.To.Duration)
}
