package view_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/annotations"
	"github.com/tollgate-dev/tollgate/report/csv"
	"github.com/tollgate-dev/tollgate/report/html"
	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
	"github.com/tollgate-dev/tollgate/report/junit"
	"github.com/tollgate-dev/tollgate/report/markdown"
	"github.com/tollgate-dev/tollgate/report/text"
	"github.com/tollgate-dev/tollgate/report/view"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text is kept", "decode p50 ≥ 50 ✓", "decode p50 ≥ 50 ✓"},
		{"tab and newline are kept", "a\tb\nc", "a\tb\nc"},
		{"NUL", "a\x00b", `a\x00b`},
		{"ANSI colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"carriage return", "ok\rFAIL", `ok\x0dFAIL`},
		{"DEL", "a\x7f", `a\x7f`},
		{"C1 CSI", "a\u009b31m", `a\u009b31m`},
		{"invalid UTF-8", "a\xff\xfeb", `a\xff\xfeb`},
		{"truncated rune", "a\xe2\x80", `a\xe2\x80`},
		{"line separator", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"bidi override", "a\u202eb\u2066c", `a\u202eb\u2066c`},
		{"XML noncharacter", "a\uffff", `a\uffff`},
		{"replacement character itself is kept", "a\ufffdb", "a\ufffdb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := view.Clean(tc.in); got != tc.want {
				t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// hostile is what a misbehaving server can send: NUL, an ANSI colour, a
// carriage return that rewrites the line, invalid UTF-8, a line separator,
// and the table and newline characters that break Markdown cells.
const hostile = "a\x00b \x1b[31mred\x1b[0m \rPASS \xff\xfe \u2028 | x | `y`\nnext"

// hostileReport puts hostile text everywhere a server's (or a scenario's)
// words reach a report: run errors, the model id, target metadata, request
// errors and warnings, samples, gate messages and observed values.
func hostileReport() *report.Report {
	r := testfixture.LiveReport()
	r.Scenario.Name = "quick" + hostile
	r.Host.Hostname = hostile
	run := r.Runs["embedded"]
	run.Target.Model = "model" + hostile
	run.Target.BaseURL = "http://127.0.0.1:1/" + hostile
	run.Target.Metadata = map[string]any{"/v1/models": map[string]any{"id": hostile}, "version" + hostile: hostile}
	dec := run.Phases["decode"]
	dec.Errors.Examples = []report.RequestError{{Class: "http_status", Status: 500, Message: hostile, Request: "decode #2"}}
	dec.Warnings = []string{"warning " + hostile}
	samples := dec.Samples.([]report.RequestSample)
	samples[2].Error = &report.RequestError{Class: "http_status", Status: 500, Message: hostile}
	samples[1].FinishReason = hostile
	r.Runs["broken"+hostile] = &report.Run{Name: "broken" + hostile, Status: report.RunError, Error: "connect: " + hostile,
		Target: report.Target{Name: "live", Kind: "openai", Model: hostile}}
	r.Runs["seam"] = &report.Run{Name: "seam", Status: report.RunError, Error: hostile, Target: report.Target{Kind: report.TargetSeam}}
	r.RunOrder = append(r.RunOrder, "broken"+hostile, "seam")
	r.Gates = append(r.Gates,
		report.GateResult{Name: "model" + hostile, Expr: "model == 'x'", Status: report.StatusFail, Message: hostile,
			Observations: []report.Observation{{Expr: "model ==\n'x'" + hostile, Op: "==", Left: hostile, Right: "x"}}},
		report.GateResult{Name: "errored", Expr: "x", Status: report.StatusError, Message: "evaluating: " + hostile},
		report.GateResult{Name: "optional" + hostile, Expr: "x", Optional: true, Status: report.StatusFail, Message: hostile},
	)
	r.Status = report.StatusFail
	return r
}

// TestRenderersSanitiseWireText renders a report full of control bytes
// with every writer, in-process and decoded from JSON, and holds each
// output to what its reader needs.
func TestRenderersSanitiseWireText(t *testing.T) {
	writers := []struct {
		name  string
		write func(io.Writer, *report.Report) error
		check func(t *testing.T, out []byte)
	}{
		{"text", text.Summary, nil},
		{"markdown", markdown.Write, checkMarkdownTables},
		{"junit", junit.Write, checkXML},
		{"csv", csv.Write, nil},
		{"annotations", func(w io.Writer, r *report.Report) error { return annotations.Write(w, r, "s"+hostile+".yaml") }, checkAnnotations},
		{"html", func(w io.Writer, r *report.Report) error { return html.Write(w, r, r) }, nil},
	}
	reports := []struct {
		name string
		r    func(t *testing.T) *report.Report
	}{
		{"in-process", func(*testing.T) *report.Report { return hostileReport() }},
		{"decoded from JSON", func(t *testing.T) *report.Report { return testfixture.RoundTrip(t, hostileReport()) }},
	}
	for _, rep := range reports {
		for _, w := range writers {
			t.Run(rep.name+"/"+w.name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := w.write(&buf, rep.r(t)); err != nil {
					t.Fatal(err)
				}
				out := buf.Bytes()
				checkNoControl(t, out)
				if !bytes.Contains(out, []byte(`\x1b[31m`)) {
					t.Errorf("the escape is not shown visibly as \\x1b[31m:\n%s", out)
				}
				if w.check != nil {
					w.check(t, out)
				}
			})
		}
	}
}

// checkNoControl: valid UTF-8, and no control character but tab and
// newline, no C1, no line separator, no bidi override.
func checkNoControl(t *testing.T, out []byte) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Errorf("output is not valid UTF-8")
	}
	for i, r := range string(out) {
		bad := r < 0x20 && r != '\t' && r != '\n' || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 || r == 0x202e
		if bad {
			t.Errorf("raw %U at byte %d: %q", r, i, out[max(0, i-30):min(len(out), i+30)])
			return
		}
	}
}

func checkXML(t *testing.T, out []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(out))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("JUnit does not parse: %v", err)
		}
	}
}

// checkMarkdownTables: every row of a table has its header's number of
// cells (unescaped pipes).
func checkMarkdownTables(t *testing.T, out []byte) {
	t.Helper()
	want := -1
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "|") {
			want = -1
			continue
		}
		n := strings.Count(line, "|") - strings.Count(line, `\|`)
		if want < 0 {
			want = n
		} else if n != want {
			t.Errorf("row has %d pipes, its header %d: %q", n, want, line)
		}
	}
}

// checkAnnotations: every line is a workflow command; nothing injected one.
func checkAnnotations(t *testing.T, out []byte) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if !strings.HasPrefix(line, "::error ") && !strings.HasPrefix(line, "::warning ") {
			t.Errorf("not a workflow command: %q", line)
		}
	}
}

// TestSanitizedLeavesTheReport: the writers clean a copy.
func TestSanitizedLeavesTheReport(t *testing.T) {
	r := hostileReport()
	before := testfixture.RoundTrip(t, r)
	s := view.Sanitized(r)
	if s.Runs["embedded"].Target.Model == r.Runs["embedded"].Target.Model {
		t.Errorf("model id not cleaned: %q", s.Runs["embedded"].Target.Model)
	}
	if !reflect.DeepEqual(testfixture.RoundTrip(t, r), before) {
		t.Errorf("Sanitized modified its argument")
	}
	if !s.StartedAt.Equal(r.StartedAt) {
		t.Errorf("started_at %v, want %v", s.StartedAt, r.StartedAt)
	}
	if view.Sanitized(nil) != nil {
		t.Errorf("Sanitized(nil) is not nil")
	}
}
