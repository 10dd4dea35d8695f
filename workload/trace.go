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
	last   time.Duration
}

// OpenTrace opens name as a trace of format: a regular file of at most
// safefile.MaxDataBytes.
func OpenTrace(name, format string) (*TraceReader, error) {
	f, err := safefile.Open(name, safefile.Rules{What: "trace"})
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
		t.sc = bufio.NewScanner(f)
		t.sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	case FormatBurstGPT, FormatAzure:
		t.csv = csv.NewReader(bufio.NewReader(f))
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
		return fmt.Errorf("%s:%d: %v", t.name, t.line, err)
	}
	t.cols = map[string]int{}
	want := csvColumns[t.format]
	for i, c := range rec {
		c = strings.TrimSpace(strings.TrimPrefix(c, "\ufeff"))
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

func (t *TraceReader) relative(v float64, unit time.Duration) time.Duration {
	if t.firstF == nil {
		t.firstF = &v
	}
	return time.Duration(math.Round((v - *t.firstF) * float64(unit)))
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
		e.Offset = t.relative(*raw.Timestamp, time.Millisecond)
		return e, nil
	}
	if err := t.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Entry{}, fmt.Errorf("%s:%d: line longer than %d bytes", t.name, t.line+1, MaxLineBytes)
		}
		return Entry{}, fmt.Errorf("%s: %v", t.name, err)
	}
	return Entry{}, io.EOF
}

func (t *TraceReader) sizes(e Entry) error {
	if e.InputTokens < 1 {
		return fmt.Errorf("%s:%d: field %q: must be at least 1, got %d", t.name, e.Line, t.inputName(), e.InputTokens)
	}
	if e.OutputTokens < 1 {
		return fmt.Errorf("%s:%d: field %q: must be at least 1, got %d", t.name, e.Line, t.outputName(), e.OutputTokens)
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

// Azure timestamps: "2023-11-16 18:15:46.6805900" (7 fractional digits).
var azureLayouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", time.RFC3339Nano}

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
				return Entry{}, fmt.Errorf("%s:%d: %v", t.name, pe.Line, pe.Err)
			}
			return Entry{}, fmt.Errorf("%s:%d: %v", t.name, t.line, err)
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
			if err != nil || v < 0 || math.IsInf(v, 0) {
				return e, fmt.Errorf("%s:%d: field \"Timestamp\": %s is not seconds ≥ 0", t.name, t.line, safefile.Excerpt(ts))
			}
			e.Offset = t.relative(v, time.Second)
		} else {
			var at time.Time
			var perr error
			for _, l := range azureLayouts {
				if at, perr = time.Parse(l, ts); perr == nil {
					break
				}
			}
			if perr != nil {
				return e, fmt.Errorf("%s:%d: field \"TIMESTAMP\": %s is not a time such as 2023-11-16 18:15:46.6805900", t.name, t.line, safefile.Excerpt(ts))
			}
			if t.first == nil {
				t.first = &at
			}
			e.Offset = at.Sub(*t.first)
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
	// First is the first entry's offset in the window.
	First time.Duration
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
		last = e.Offset
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
