// Package workload reads the files a workload comes from: request traces
// (Mooncake JSONL, BurstGPT CSV, the Azure LLM inference trace CSV) and
// prompt datasets (ShareGPT JSON, JSONL). Every reader streams: memory does
// not grow with the file, and every error names the file and line (and the
// field) at fault, quoting at most a short excerpt of it. It imports
// nothing of the project but internal/safefile, which every file read
// goes through.
package workload

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/safefile"
)

// Trace formats.
const (
	FormatMooncake = "mooncake"
	FormatBurstGPT = "burstgpt"
	FormatAzure    = "azure"
)

// TraceFormats are the trace formats, in the order docs list them.
var TraceFormats = []string{FormatMooncake, FormatBurstGPT, FormatAzure}

// MaxLineBytes bounds one line of a trace or JSONL dataset.
const MaxLineBytes = 4 << 20

// MaxHashIDs bounds the hash_ids of one Mooncake request.
const MaxHashIDs = 1 << 16

// MaxTraceOffset bounds how long after a trace's first request any of its
// requests may come, in the trace's own time. Public traces span an hour
// (Azure 2023, Mooncake) to a week (Azure 2024) or months (BurstGPT); ten
// years is far past any of them and far inside what time.Duration holds
// (292 years), so every offset, and the difference of any two, is exact.
// A timestamp past it (a row dated 9999, a timestamp of 1e300 ms) is a
// typo or a different unit, an error at its line: unchecked, it would
// saturate or wrap and be replayed at once, or read as going backwards.
const MaxTraceOffset = 3650 * 24 * time.Hour

// MaxTraceTokens bounds a trace request's input and output sizes: the
// largest context window a model offers is 10 million tokens, and a
// replay builds each prompt of that many words (about 50 MB), so a size
// past it could only exhaust memory, never be served.
const MaxTraceTokens = 10_000_000

// Entry is one request of a trace.
type Entry struct {
	// Line is the entry's line in the file (1-based).
	Line int
	// Offset is the arrival time from the trace's first request.
	Offset time.Duration
	// InputTokens and OutputTokens are the trace's prompt and answer sizes.
	InputTokens, OutputTokens int
	// HashIDs are Mooncake's prompt blocks, in prompt order (nil for the
	// CSV formats).
	HashIDs []int64
}

// TraceReader streams a trace file entry by entry.
type TraceReader struct {
	name   string
	format string
	f      io.Closer
	sc     *bufio.Scanner
	csv    *csv.Reader
	cols   map[string]int
	line   int
	first  *time.Time // the CSV formats' first absolute timestamp
	firstF *float64   // the first relative timestamp
	// firstLine is the first request's line, for errors that measure
	// from it; layout is the Azure layout that parsed the last timestamp
	// (a file has one), tried first.
	firstLine int
	layout    int
	last      time.Duration
}

// OpenTrace opens name as a trace of format: a regular file of at most
// safefile.MaxTraceBytes.
func OpenTrace(name, format string) (*TraceReader, error) {
	f, err := safefile.Open(name, safefile.Rules{What: "trace", Limit: safefile.MaxTraceBytes})
	if err != nil {
		return nil, err
	}
	return NewTraceReader(name, f, format)
}

// NewTraceReader reads f, opened by the caller (see safefile.Open), as a
// trace of format; name is the file in errors. Close closes f, and so
// does an error.
func NewTraceReader(name string, f io.ReadCloser, format string) (*TraceReader, error) {
	t := &TraceReader{name: name, format: format, f: f}
	switch format {
	case FormatMooncake:
		t.sc = bufio.NewScanner(skipBOM(f))
		t.sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	case FormatBurstGPT, FormatAzure:
		// encoding/csv buffers a whole line whatever its length: the
		// limit holds its lines to MaxLineBytes, as a Scanner's are.
		t.csv = csv.NewReader(&lineLimit{r: skipBOM(f), max: MaxLineBytes})
		t.csv.ReuseRecord = true
		t.csv.FieldsPerRecord = -1
		if err := t.header(); err != nil {
			f.Close()
			return nil, err
		}
	default:
		f.Close()
		return nil, fmt.Errorf("unknown trace format %q (one of %s)", format, strings.Join(TraceFormats, ", "))
	}
	return t, nil
}

// Close closes the file.
func (t *TraceReader) Close() error { return t.f.Close() }

// columns each CSV format needs: the first name found wins.
var csvColumns = map[string]map[string][]string{
	FormatBurstGPT: {"time": {"Timestamp"}, "input": {"Request tokens"}, "output": {"Response tokens"}},
	FormatAzure:    {"time": {"TIMESTAMP"}, "input": {"ContextTokens"}, "output": {"GeneratedTokens"}},
}

func (t *TraceReader) header() error {
	rec, err := t.csv.Read()
	t.line = 1
	if err == io.EOF {
		return fmt.Errorf("%s: empty trace (no header line)", t.name)
	}
	if err != nil {
		return fmt.Errorf("%s:%d: %w", t.name, t.line, err)
	}
	t.cols = map[string]int{}
	want := csvColumns[t.format]
	for i, c := range rec {
		c = strings.TrimSpace(c)
		for k, names := range want {
			for _, n := range names {
				if strings.EqualFold(c, n) {
					t.cols[k] = i
				}
			}
		}
	}
	for _, k := range []string{"time", "input", "output"} {
		if _, ok := t.cols[k]; !ok {
			return fmt.Errorf("%s:1: not a %s trace: no %q column in the header", t.name, t.format, want[k][0])
		}
	}
	return nil
}

// Next returns the next entry; io.EOF after the last. Timestamps must not
// go backwards.
func (t *TraceReader) Next() (Entry, error) {
	var e Entry
	var err error
	if t.format == FormatMooncake {
		e, err = t.nextMooncake()
	} else {
		e, err = t.nextCSV()
	}
	if err != nil {
		return e, err
	}
	if e.Offset < t.last {
		return e, fmt.Errorf("%s:%d: timestamp goes backwards (%v after %v from the first request); sort the trace by time", t.name, e.Line, e.Offset, t.last)
	}
	t.last = e.Offset
	return e, nil
}

// relative is timestamp v, in unit, as an offset from the first request's
// (read from field, whose text is raw).
func (t *TraceReader) relative(line int, v float64, unit time.Duration, field, raw string) (time.Duration, error) {
	if t.firstF == nil {
		t.firstF, t.firstLine = &v, line
	}
	return t.offset(line, (v-*t.firstF)*float64(unit), field, raw)
}

// offset is ns nanoseconds from the first request as a Duration, refused
// past MaxTraceOffset either way: computed in floating point, so that a
// timestamp past what a Duration holds is caught before it could wrap.
func (t *TraceReader) offset(line int, ns float64, field, raw string) (time.Duration, error) {
	bound := float64(MaxTraceOffset)
	switch {
	case ns > bound || math.IsNaN(ns):
		return 0, fmt.Errorf("%s:%d: field %q: %s is %s after the first request (line %d), over the bound of %s (%g years) a trace may span%s",
			t.name, line, field, safefile.Excerpt(raw), SpanText(ns/1e9), t.firstLine, SpanText(bound/1e9), bound/float64(365*24*time.Hour), t.unitHint())
	case ns < -bound:
		return 0, fmt.Errorf("%s:%d: timestamp goes backwards (%s before the first request, line %d); sort the trace by time", t.name, line, SpanText(-ns/1e9), t.firstLine)
	}
	return time.Duration(math.Round(ns)), nil
}

// numberText writes a number read from JSON as it was likely written:
// whole numbers in full, up to where floating point would print them so.
func numberText(v float64) string {
	if math.Abs(v) < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// unitHint asks, of the formats whose timestamps are numbers, whether one
// past the bound is in another unit.
func (t *TraceReader) unitHint() string {
	switch t.format {
	case FormatMooncake:
		return " (its timestamps are milliseconds from any origin)"
	case FormatBurstGPT:
		return " (its timestamps are seconds from any origin)"
	}
	return ""
}

// SpanText writes a span of seconds for a message: as a duration up to two
// days, else in days (and years past MaxTraceOffset), so even 1e300 reads.
func SpanText(seconds float64) string {
	const day = 24 * 3600
	switch {
	case seconds < 2*day:
		return time.Duration(seconds * float64(time.Second)).Round(time.Millisecond).String()
	case seconds <= MaxTraceOffset.Seconds():
		return fmt.Sprintf("%.4g days", seconds/day)
	}
	return fmt.Sprintf("%.4g days (%.4g years)", seconds/day, seconds/day/365)
}

func (t *TraceReader) nextMooncake() (Entry, error) {
	for t.sc.Scan() {
		t.line++
		line := strings.TrimSpace(t.sc.Text())
		if line == "" {
			continue
		}
		var raw struct {
			Timestamp    *float64 `json:"timestamp"`
			InputLength  *int     `json:"input_length"`
			OutputLength *int     `json:"output_length"`
			HashIDs      []int64  `json:"hash_ids"`
		}
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return Entry{}, fmt.Errorf("%s:%d: field %q: expected %s, got %s", t.name, t.line, te.Field, te.Type, te.Value)
			}
			return Entry{}, fmt.Errorf("%s:%d: not a Mooncake JSON line: %v", t.name, t.line, err)
		}
		field := func(name string) error {
			return fmt.Errorf("%s:%d: field %q: missing or not a number", t.name, t.line, name)
		}
		switch {
		case raw.Timestamp == nil:
			return Entry{}, field("timestamp")
		case raw.InputLength == nil:
			return Entry{}, field("input_length")
		case raw.OutputLength == nil:
			return Entry{}, field("output_length")
		}
		e := Entry{Line: t.line, InputTokens: *raw.InputLength, OutputTokens: *raw.OutputLength, HashIDs: raw.HashIDs}
		if err := t.sizes(e); err != nil {
			return e, err
		}
		if len(raw.HashIDs) > MaxHashIDs {
			return e, fmt.Errorf("%s:%d: field \"hash_ids\": %d ids, over the bound of %d", t.name, t.line, len(raw.HashIDs), MaxHashIDs)
		}
		if *raw.Timestamp < 0 || math.IsNaN(*raw.Timestamp) || math.IsInf(*raw.Timestamp, 0) {
			return e, fmt.Errorf("%s:%d: field \"timestamp\": must be milliseconds ≥ 0, got %v", t.name, t.line, *raw.Timestamp)
		}
		var err error
		e.Offset, err = t.relative(t.line, *raw.Timestamp, time.Millisecond, "timestamp", numberText(*raw.Timestamp))
		return e, err
	}
	if err := t.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Entry{}, fmt.Errorf("%s:%d: %w", t.name, t.line+1, errLineTooLong)
		}
		return Entry{}, fmt.Errorf("%s: %v", t.name, err)
	}
	return Entry{}, io.EOF
}

func (t *TraceReader) sizes(e Entry) error {
	for _, f := range []struct {
		name string
		n    int
	}{{t.inputName(), e.InputTokens}, {t.outputName(), e.OutputTokens}} {
		if f.n < 1 {
			return fmt.Errorf("%s:%d: field %q: must be at least 1, got %d", t.name, e.Line, f.name, f.n)
		}
		if f.n > MaxTraceTokens {
			return fmt.Errorf("%s:%d: field %q: %d tokens is over the bound of %d a trace request may have (the largest context window of any model)", t.name, e.Line, f.name, f.n, MaxTraceTokens)
		}
	}
	return nil
}

func (t *TraceReader) inputName() string {
	if w, ok := csvColumns[t.format]; ok {
		return w["input"][0]
	}
	return "input_length"
}

func (t *TraceReader) outputName() string {
	if w, ok := csvColumns[t.format]; ok {
		return w["output"][0]
	}
	return "output_length"
}

// Azure timestamps: the 2023 traces write "2023-11-16 18:15:46.6805900"
// (no zone, 7 fractional digits: read as UTC), the 2024 ones
// "2024-05-10 00:00:00.009930+00:00" (6 digits and an offset, and none
// when the fraction is 0). Parsing accepts any fraction after the
// seconds, so one layout of each serves; RFC 3339 for converted files.
var azureLayouts = []string{"2006-01-02 15:04:05", "2006-01-02 15:04:05Z07:00", time.RFC3339Nano}

// parseAzure parses an Azure timestamp, trying the layout that parsed the
// last one first.
func (t *TraceReader) parseAzure(ts string) (time.Time, bool) {
	for k := range azureLayouts {
		i := (t.layout + k) % len(azureLayouts)
		if at, err := time.Parse(azureLayouts[i], ts); err == nil {
			t.layout = i
			return at, true
		}
	}
	return time.Time{}, false
}

func (t *TraceReader) nextCSV() (Entry, error) {
	for {
		rec, err := t.csv.Read()
		if err == io.EOF {
			return Entry{}, io.EOF
		}
		t.line++
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return Entry{}, fmt.Errorf("%s:%d: %w", t.name, pe.Line, pe.Err)
			}
			return Entry{}, fmt.Errorf("%s:%d: %w", t.name, t.line, err)
		}
		line, _ := t.csv.FieldPos(0)
		t.line = line
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		get := func(k string) (string, error) {
			i := t.cols[k]
			if i >= len(rec) {
				return "", fmt.Errorf("%s:%d: field %q: missing (the line has %d fields)", t.name, t.line, csvColumns[t.format][k][0], len(rec))
			}
			return strings.TrimSpace(rec[i]), nil
		}
		e := Entry{Line: t.line}
		for _, k := range []string{"input", "output"} {
			s, err := get(k)
			if err != nil {
				return e, err
			}
			n, err := strconv.Atoi(s)
			if err != nil {
				return e, fmt.Errorf("%s:%d: field %q: %s is not a whole number", t.name, t.line, csvColumns[t.format][k][0], safefile.Excerpt(s))
			}
			if k == "input" {
				e.InputTokens = n
			} else {
				e.OutputTokens = n
			}
		}
		ts, err := get("time")
		if err != nil {
			return e, err
		}
		if t.format == FormatBurstGPT {
			v, err := strconv.ParseFloat(ts, 64)
			if err != nil || !(v >= 0) || math.IsInf(v, 0) {
				return e, fmt.Errorf("%s:%d: field \"Timestamp\": %s is not seconds ≥ 0", t.name, t.line, safefile.Excerpt(ts))
			}
			if e.Offset, err = t.relative(t.line, v, time.Second, "Timestamp", ts); err != nil {
				return e, err
			}
		} else {
			at, ok := t.parseAzure(ts)
			if !ok {
				return e, fmt.Errorf("%s:%d: field \"TIMESTAMP\": %s is not a time such as 2023-11-16 18:15:46.6805900 or 2024-05-10 00:00:00.009930+00:00", t.name, t.line, safefile.Excerpt(ts))
			}
			if t.first == nil {
				t.first, t.firstLine = &at, t.line
			}
			// In seconds and nanoseconds apart: Sub saturates at 292
			// years, and a row dated 9999 must read as what it is.
			ns := float64(at.Unix()-t.first.Unix())*1e9 + float64(at.Nanosecond()-t.first.Nanosecond())
			if e.Offset, err = t.offset(t.line, ns, "TIMESTAMP", ts); err != nil {
				return e, err
			}
		}
		// BurstGPT logs failed requests with 0 response tokens: they are
		// replayed asking for one.
		if e.OutputTokens == 0 && t.format == FormatBurstGPT {
			e.OutputTokens = 1
		}
		if err := t.sizes(e); err != nil {
			return e, err
		}
		return e, nil
	}
}

// TraceSummary is what one pass over a trace learns.
type TraceSummary struct {
	// Requests are the entries in the window; Span is the first to the
	// last of their offsets (before any time scale).
	Requests int
	Span     time.Duration
	// First is the first entry's offset in the window; LastLine the
	// line of its last.
	First    time.Duration
	LastLine int
	// MaxInputTokens is the longest prompt.
	MaxInputTokens, MaxOutputTokens int
	// MaxContextLine is the line of the longest prompt + answer.
	MaxContext, MaxContextLine int
}

// Summarize streams a trace, checking every line, and counts the entries
// whose offset lies in [from, to) (to 0: no end), the first limit of them
// when limit > 0 (the lines after those are not read).
func Summarize(name, format string, from, to time.Duration, limit int) (TraceSummary, error) {
	t, err := OpenTrace(name, format)
	if err != nil {
		return TraceSummary{}, err
	}
	defer t.Close()
	return t.Summarize(from, to, limit)
}

// Summarize is the package's Summarize over an opened trace.
func (t *TraceReader) Summarize(from, to time.Duration, limit int) (TraceSummary, error) {
	var s TraceSummary
	var last time.Duration
	for limit <= 0 || s.Requests < limit {
		e, err := t.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
		if e.Offset < from || (to > 0 && e.Offset >= to) {
			continue
		}
		if s.Requests == 0 {
			s.First = e.Offset
		}
		s.Requests++
		last, s.LastLine = e.Offset, e.Line
		s.MaxInputTokens = max(s.MaxInputTokens, e.InputTokens)
		s.MaxOutputTokens = max(s.MaxOutputTokens, e.OutputTokens)
		if c := e.InputTokens + e.OutputTokens; c > s.MaxContext {
			s.MaxContext, s.MaxContextLine = c, e.Line
		}
	}
	if s.Requests > 0 {
		s.Span = last - s.First
	}
	return s, nil
}
