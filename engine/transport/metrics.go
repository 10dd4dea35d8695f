package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/tollgate-dev/tollgate/engine/measure"
)

// scrapeBytes bounds a /metrics body: a big vLLM exposition is a few
// hundred KiB, so this only stops a runaway server.
const scrapeBytes = 64 << 20

// ScrapeMetrics reads /metrics (Prometheus text format); see ParsePrometheus.
// Lines the parser rejects are warnings in the scrape, not a lost scrape.
// A /metrics that goes unanswered within MetricsTimeout is not asked again
// by this client: each later scrape fails at once, saying why.
func (c *Client) ScrapeMetrics(ctx context.Context) (measure.Scrape, error) {
	if c.metricsSilent.Load() {
		return measure.Scrape{}, fmt.Errorf("openai: scrape metrics: %w within %s earlier in this run; not asked again", ErrNoAnswer, c.wait(c.waits.metrics))
	}
	status, body, truncated, err := c.get(ctx, "/metrics", scrapeBytes, c.waits.metrics)
	if err != nil {
		if errors.Is(err, ErrNoAnswer) {
			c.metricsSilent.Store(true)
		}
		return measure.Scrape{}, fmt.Errorf("openai: scrape metrics: %w", err)
	}
	if !ok2xx(status) {
		return measure.Scrape{}, fmt.Errorf("openai: scrape metrics: HTTP %d", status)
	}
	if truncated {
		return measure.Scrape{}, fmt.Errorf("openai: scrape metrics: body over %d MiB", scrapeBytes>>20)
	}
	s, err := ParsePrometheus(body)
	if err != nil {
		return measure.Scrape{}, c.safeErr(fmt.Errorf("openai: scrape metrics: %w", err))
	}
	for i, w := range s.Warnings {
		s.Warnings[i] = c.safe(w)
	}
	return s, nil
}

// Bounds on a bad exposition: each rejected line costs re-parsing its
// family, and a report needs only enough warnings to say what went wrong.
const (
	maxBadLines = 32
	maxWarnings = 20
)

// ParsePrometheus parses the Prometheus text exposition format with the
// Prometheus project's own parser, accepting Prometheus 3's quoted UTF-8
// names. That parser fails a whole input on one bad line, so when it does
// the text is parsed again family by family, and in a family's block a
// rejected line is blanked and the block parsed again (at most maxBadLines
// times in all): one bad line loses only itself, and becomes a warning.
func ParsePrometheus(text []byte) (measure.Scrape, error) {
	if len(text) > 0 && text[len(text)-1] != '\n' {
		// The parser calls a last line without its newline a premature end.
		text = append(bytes.Clone(text), '\n')
	}
	families, err := parseText(text)
	var warnings []string
	if err != nil {
		if families, warnings, err = parseByBlock(text); err != nil {
			return measure.Scrape{}, err
		}
	}
	s := fromFamilies(families)
	s.Warnings = boundWarnings(append(warnings, s.Warnings...))
	return s, nil
}

func parseText(text []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(text))
}

// parseByBlock parses each block on its own, so a bad line costs re-parsing
// its family, not the whole exposition.
func parseByBlock(text []byte) (map[string]*dto.MetricFamily, []string, error) {
	all := map[string]*dto.MetricFamily{}
	var warnings []string
	bad := 0
	for _, b := range blocks(text) {
		families, err := parseText(b.text)
		for err != nil {
			var pe expfmt.ParseError
			if !errors.As(err, &pe) {
				return nil, nil, fmt.Errorf("parse metrics: %w", err)
			}
			if bad == maxBadLines {
				return nil, nil, fmt.Errorf("parse metrics: more than %d bad lines, the last: %w", maxBadLines, err)
			}
			var line []byte
			if b.text, line = blankLine(b.text, pe.Line); len(line) == 0 {
				// Nothing left to drop: the error is not one line's.
				return nil, nil, fmt.Errorf("parse metrics: %w", err)
			}
			bad++
			warnings = append(warnings, fmt.Sprintf("/metrics line %d dropped: %s: %q", b.line+pe.Line-1, pe.Msg, Cut(line, 120)))
			families, err = parseText(b.text)
		}
		for name, mf := range families {
			prev, ok := all[name]
			switch {
			case !ok:
				all[name] = mf
			case prev.GetType() == mf.GetType():
				prev.Metric = append(prev.Metric, mf.Metric...)
			default:
				warnings = append(warnings, fmt.Sprintf("%s declared again as a %s: dropped", name, strings.ToLower(mf.GetType().String())))
			}
		}
	}
	return all, warnings, nil
}

// block is a run of lines of an exposition, from line number line (1-based).
type block struct {
	line int
	text []byte
}

// blocks splits text, which ends with a newline, where a HELP or TYPE line
// follows a sample: each block holds one family's HELP, TYPE and samples,
// as servers write them.
func blocks(text []byte) []block {
	var out []block
	start, startLine, sampled := 0, 1, false
	for off, line := 0, 1; off < len(text); line++ {
		end := bytes.IndexByte(text[off:], '\n')
		if end < 0 {
			end = len(text) - off
		}
		l := bytes.TrimLeft(text[off:off+end], " \t")
		switch {
		case descriptor(l):
			if sampled {
				out = append(out, block{startLine, text[start:off]})
				start, startLine, sampled = off, line, false
			}
		case len(l) > 0 && l[0] != '#':
			sampled = true
		}
		off += end + 1
	}
	return append(out, block{startLine, text[start:]})
}

// descriptor reports a HELP or TYPE line, spaced as loosely as the parser
// accepts it.
func descriptor(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("#"))
	if !ok {
		return false
	}
	rest = bytes.TrimLeft(rest, " \t")
	for _, kw := range []string{"HELP", "TYPE"} {
		if r, ok := bytes.CutPrefix(rest, []byte(kw)); ok && len(r) > 0 && (r[0] == ' ' || r[0] == '\t') {
			return true
		}
	}
	return false
}

// blankLine returns text with its n-th line (1-based) emptied, keeping the
// line numbers of the rest, and the line's old content (nil if none).
func blankLine(text []byte, n int) ([]byte, []byte) {
	start := 0
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(text[start:], '\n')
		if j < 0 {
			return text, nil
		}
		start += j + 1
	}
	end := len(text)
	if j := bytes.IndexByte(text[start:], '\n'); j >= 0 {
		end = start + j
	}
	if start >= end {
		return text, nil
	}
	line := bytes.Clone(text[start:end])
	return append(text[:start:start], text[end:]...), line
}

func boundWarnings(w []string) []string {
	if len(w) <= maxWarnings {
		return w
	}
	return append(w[:maxWarnings:maxWarnings], fmt.Sprintf("and %d more /metrics warnings", len(w)-maxWarnings))
}

// fromFamilies flattens parsed families into series by key. Values JSON
// cannot carry are dropped with a warning, except a summary's NaN quantile,
// which only means no observation in its window.
func fromFamilies(families map[string]*dto.MetricFamily) measure.Scrape {
	var out measure.Scrape
	at := map[string]int{}
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		mf := families[name]
		if name == "*" {
			// The report's open maps use "*" for "any key".
			out.Warnings = append(out.Warnings, `metric named "*" dropped: the name is reserved`)
			continue
		}
		for _, m := range mf.GetMetric() {
			key := seriesKey(name, m.GetLabel())
			s, why := series(mf.GetType(), m)
			if why != "" {
				out.Warnings = append(out.Warnings, key+" dropped: "+why)
				continue
			}
			s.Key, s.Family, s.Labelled = key, name, len(m.GetLabel()) > 0
			if i, dup := at[key]; dup {
				out.Warnings = append(out.Warnings, key+" appears twice: the last kept")
				out.Series[i] = s
				continue
			}
			at[key] = len(out.Series)
			out.Series = append(out.Series, s)
		}
	}
	return out
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// series converts one parsed metric, or says why it cannot be kept.
func series(t dto.MetricType, m *dto.Metric) (measure.Series, string) {
	var s measure.Series
	switch t {
	case dto.MetricType_COUNTER:
		s.Type, s.Value = measure.MetricCounter, m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		s.Type, s.Value = measure.MetricGauge, m.GetGauge().GetValue()
	case dto.MetricType_UNTYPED:
		s.Type, s.Value = measure.MetricUntyped, m.GetUntyped().GetValue()
	case dto.MetricType_HISTOGRAM:
		return histogram(m.GetHistogram())
	case dto.MetricType_SUMMARY:
		return summary(m.GetSummary())
	default:
		return s, "a " + strings.ToLower(t.String()) + " has no per-phase meaning"
	}
	if !finite(s.Value) {
		return s, fmt.Sprintf("value %v", s.Value)
	}
	return s, ""
}

func histogram(h *dto.Histogram) (measure.Series, string) {
	s := measure.Series{Type: measure.MetricHistogram, Count: float64(h.GetSampleCount()), Sum: h.GetSampleSum()}
	if h.SampleCountFloat != nil {
		s.Count = h.GetSampleCountFloat()
	}
	for _, b := range h.GetBucket() {
		c := float64(b.GetCumulativeCount())
		if b.CumulativeCountFloat != nil {
			c = b.GetCumulativeCountFloat()
		}
		ub := b.GetUpperBound()
		if math.IsNaN(ub) || math.IsInf(ub, -1) || !finite(c) {
			return s, fmt.Sprintf("bucket le=%v count %v", ub, c)
		}
		s.Buckets = append(s.Buckets, measure.Bucket{LE: formatFloat(ub), UpperBound: ub, Count: c})
	}
	sort.SliceStable(s.Buckets, func(i, j int) bool { return s.Buckets[i].UpperBound < s.Buckets[j].UpperBound })
	if n := len(s.Buckets); n > 0 && !math.IsInf(s.Buckets[n-1].UpperBound, 1) {
		// _count is the +Inf bucket by definition; an exposition may omit it.
		s.Buckets = append(s.Buckets, measure.Bucket{LE: "+Inf", UpperBound: math.Inf(1), Count: s.Count})
	}
	if !finite(s.Count) || !finite(s.Sum) {
		return s, fmt.Sprintf("count %v, sum %v", s.Count, s.Sum)
	}
	return s, ""
}

func summary(sm *dto.Summary) (measure.Series, string) {
	s := measure.Series{Type: measure.MetricSummary, Count: float64(sm.GetSampleCount()), Sum: sm.GetSampleSum()}
	if !finite(s.Sum) {
		return s, fmt.Sprintf("sum %v", s.Sum)
	}
	qs := slices.Clone(sm.GetQuantile())
	sort.SliceStable(qs, func(i, j int) bool { return qs[i].GetQuantile() < qs[j].GetQuantile() })
	for _, q := range qs {
		if finite(q.GetValue()) {
			s.Quantiles = append(s.Quantiles, measure.Quantile{Q: formatFloat(q.GetQuantile()), Value: q.GetValue()})
		}
	}
	return s, ""
}

func formatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// seriesKey is name{label="value",...} with labels sorted by name and values
// escaped as in the exposition, or the bare name; a label name only UTF-8
// allows is quoted, as Prometheus 3 writes it.
func seriesKey(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	ls := slices.Clone(labels)
	sort.Slice(ls, func(a, b int) bool { return ls[a].GetName() < ls[b].GetName() })
	var sb strings.Builder
	sb.WriteString(name)
	sb.WriteByte('{')
	for k, l := range ls {
		if k > 0 {
			sb.WriteByte(',')
		}
		if n := l.GetName(); model.LegacyValidation.IsValidLabelName(n) {
			sb.WriteString(n)
		} else {
			sb.WriteString(strconv.Quote(n))
		}
		sb.WriteString(`="`)
		sb.WriteString(labelEscaper.Replace(l.GetValue()))
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
