// Package junit writes a tollgate report as JUnit XML, a test case per gate,
// for CI test panes.
// It reads only the report, so it writes the same bytes for a report built
// in-process and one decoded from JSON; golden files under testdata pin the
// format, which once shipped only grows, so scripts that parse it keep
// working.
package junit

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/iox"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// Write writes the report as JUnit XML: one <testsuite> named after the
// scenario and one <testcase> per gate (classname = scenario name, name =
// gate name).
//
//   - a failed gate has <failure type="gate_failed" message="…"> whose message
//     lists each false observation as "expr: left op right" (the body holds
//     the gate's expression and every observation);
//   - an errored gate has <error type="gate_error" message="…">;
//   - an optional gate that failed or errored is <skipped message="optional
//     gate failed: …"/>, so CI reports it without going red;
//   - when a run failed, the run was interrupted, or the status is error with
//     no gate to blame, a testcase named "run" carries <error type="run_error">
//     listing each failed run and its error.
//
// Suite time is ended_at − started_at in seconds; the timestamp attribute is
// omitted when started_at is zero.
func Write(w io.Writer, r *report.Report) error {
	r = view.Sanitized(r) // XML 1.0 forbids most control characters, even in CDATA
	suite := junitSuite{
		Name:      r.Scenario.Name,
		Time:      seconds(r),
		Hostname:  r.Host.Hostname,
		Timestamp: timestamp(r),
		Properties: []junitProperty{
			{Name: "tollgate.status", Value: r.Status},
			{Name: "tollgate.schema_version", Value: strconv.Itoa(r.SchemaVersion)},
			{Name: "tollgate.tool_version", Value: r.Tool.Version},
			{Name: "scenario.file", Value: r.Scenario.File},
			{Name: "scenario.sha256", Value: r.Scenario.SHA256},
		},
	}
	for _, g := range r.Gates {
		tc := junitCase{Classname: r.Scenario.Name, Name: g.Name, Time: "0"}
		switch {
		case g.Status == report.StatusPass:
		case g.Optional && (g.Status == report.StatusFail || g.Status == report.StatusError || g.Status == report.StatusInconclusive):
			tc.Skipped = &junitSkipped{Message: "optional gate failed: " + view.GateReason(g, 10)}
			suite.Skipped++
		case g.Status == report.StatusFail:
			tc.Failure = &junitProblem{Type: "gate_failed", Message: view.GateReason(g, 10), Body: gateBody(g)}
			suite.Failures++
		case g.Status == report.StatusError:
			tc.Error = &junitProblem{Type: "gate_error", Message: view.GateReason(g, 10), Body: gateBody(g)}
			suite.Errors++
		case g.Status == report.StatusInconclusive:
			// Not a regression shown, not a pass: it could not be judged.
			tc.Error = &junitProblem{Type: "gate_inconclusive", Message: view.GateReason(g, 10), Body: gateBody(g)}
			suite.Errors++
		case g.Status == report.StatusSkipped:
			tc.Skipped = &junitSkipped{Message: g.Message}
			suite.Skipped++
		default: // not evaluated (e.g. --no-gate)
			tc.Skipped = &junitSkipped{Message: "gate not evaluated: status " + g.Status}
			suite.Skipped++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	if runNeedsCase(r) {
		msg := runFailure(r)
		if msg == "" {
			msg = "run status is " + r.Status
		}
		suite.Cases = append(suite.Cases, junitCase{
			Classname: r.Scenario.Name, Name: "run", Time: suite.Time,
			Error: &junitProblem{Type: "run_error", Message: view.OneLine(strings.ReplaceAll(msg, "\n", "; ")), Body: msg},
		})
		suite.Errors++
	}
	suite.Tests = len(suite.Cases)
	doc := junitSuites{
		Name: "tollgate", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite},
	}
	ew := iox.NewErrWriter(w)
	if _, err := io.WriteString(ew, xml.Header); err != nil {
		return fmt.Errorf("writing JUnit: %w", err)
	}
	enc := xml.NewEncoder(ew)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("writing JUnit: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("writing JUnit: %w", err)
	}
	if _, err := io.WriteString(ew, "\n"); err != nil {
		return fmt.Errorf("writing JUnit: %w", err)
	}
	return nil
}

// runFailure says why the run as a whole is not judged: its failed runs, or
// that it was interrupted. It is empty when every run completed.
func runFailure(r *report.Report) string {
	var parts []string
	for _, run := range view.FailedRuns(r) {
		msg := run.Error
		if msg == "" {
			msg = "status error"
		}
		parts = append(parts, fmt.Sprintf("run %s: %s", run.Name, msg))
	}
	if view.Interrupted(r) {
		parts = append(parts, "interrupted: the report is partial and marked incomplete")
	}
	return strings.Join(parts, "\n")
}

// gateErrored reports whether a non-optional gate errored.
func gateErrored(r *report.Report) bool {
	for _, g := range r.Gates {
		if !g.Optional && g.Status == report.StatusError {
			return true
		}
	}
	return false
}

// runNeedsCase reports whether the run itself must show as an error: a run
// failed, the run was interrupted, or the status is error with no gate to
// blame for it.
func runNeedsCase(r *report.Report) bool {
	if runFailure(r) != "" {
		return true
	}
	return r.Status == report.StatusError && !gateErrored(r)
}

// gateBody is the full text of a failed or errored gate: its expression, its
// message and every comparison it evaluated, each marked true or false.
func gateBody(g report.GateResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gate: %s\nexpr: %s\n", g.Name, view.OneLine(g.Expr))
	if g.Message != "" {
		fmt.Fprintf(&b, "message: %s\n", g.Message)
	}
	for _, o := range g.Observations {
		fmt.Fprintf(&b, "%-5t %s: %s %s %s\n", o.Result, view.OneLine(o.Expr), view.Value(o.Left), o.Op, view.Value(o.Right))
	}
	return b.String()
}

func seconds(r *report.Report) string {
	if r.StartedAt.IsZero() || r.EndedAt.IsZero() || r.EndedAt.Before(r.StartedAt) {
		return "0.000"
	}
	return strconv.FormatFloat(r.EndedAt.Sub(r.StartedAt).Seconds(), 'f', 3, 64)
}

func timestamp(r *report.Report) string {
	if r.StartedAt.IsZero() {
		return ""
	}
	return r.StartedAt.UTC().Format("2006-01-02T15:04:05")
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Hostname   string          `xml:"hostname,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitSkipped `xml:"skipped"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitProblem struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Body    string `xml:",cdata"`
}
