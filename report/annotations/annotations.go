// Package annotations writes a tollgate report as GitHub Actions workflow
// commands that annotate the job and the scenario file.
// It reads only the report, so it writes the same bytes for a report built
// in-process and one decoded from JSON; golden files under testdata pin the
// format, which once shipped only grows, so scripts that parse it keep
// working.
package annotations

import (
	"fmt"
	"io"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/iox"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// Place is where in the scenario an annotation points: a file and, when
// known, a line of it (0: the file as a whole).
type Place struct {
	File string
	Line int
}

// Places says where a report's gates and phases are written: the
// scenario file, and each gate's (by name) and each phase's (by name)
// own place in it or in a file it includes. One that is not listed points
// at Scenario as a whole.
type Places struct {
	Scenario string
	Gates    map[string]Place
	Phases   map[string]Place
}

// Write writes GitHub Actions workflow commands that annotate the job
// (and, with scenarioFile set, the scenario file in the pull request);
// WriteAt, with each gate's and phase's line, annotates those lines.
func Write(w io.Writer, r *report.Report, scenarioFile string) error {
	return WriteAt(w, r, Places{Scenario: scenarioFile})
}

// WriteAt writes GitHub Actions workflow commands that annotate the job,
// and the scenario's lines in the pull request:
//
//	::error file=examples/route-session.yaml,line=42,title=<gate>::gate failed: <expr>: <left> <op> <right>; …
//	::error file=…,title=<gate>::gate errored: <message>
//	::warning file=…,title=<gate> (optional)::optional gate failed: …
//	::error file=…,title=run <name>::<run error>
//	::error file=…,title=run incomplete::interrupted: …
//	::warning file=…,line=…,title=<run>/<phase>::<phase warning>
//
// A line per failed or errored gate (error for a required gate, warning for
// an optional one), per failed run, and per phase warning; nothing for a run
// where everything passed. A gate's and a phase warning's annotation has
// the line the gate or phase starts on, when at says it. Data escapes %,
// \r and \n; property values also escape : and , — the workflow-command
// rules.
func WriteAt(w io.Writer, r *report.Report, at Places) error {
	r = view.Sanitized(r) // the job log is a terminal too
	ew := iox.NewErrWriter(w)
	whole := Place{File: at.Scenario}
	emitAt := func(pl Place, level, title, msg string) {
		var props []string
		if f := view.Clean(pl.File); f != "" {
			props = append(props, "file="+escapeProperty(f))
			if pl.Line > 0 {
				props = append(props, fmt.Sprintf("line=%d", pl.Line))
			}
		}
		props = append(props, "title="+escapeProperty(title))
		fmt.Fprintf(ew, "::%s %s::%s\n", level, strings.Join(props, ","), escapeData(msg))
	}
	placeOf := func(m map[string]Place, name string) Place {
		if pl, ok := m[name]; ok {
			return pl
		}
		return whole
	}
	for _, g := range r.Gates {
		emit := func(level, title, msg string) { emitAt(placeOf(at.Gates, g.Name), level, title, msg) }
		var msg string
		switch g.Status {
		case report.StatusFail:
			msg = "gate failed: " + view.GateReason(g, 10)
		case report.StatusError:
			msg = "gate errored: " + view.GateReason(g, 10)
		case report.StatusInconclusive:
			msg = "gate inconclusive: " + view.GateReason(g, 10)
		case report.StatusSkipped:
			emit("notice", g.Name, g.Message) // never a failure: said, not flagged
			continue
		default:
			continue
		}
		if g.Optional {
			emit("warning", g.Name+" (optional)", "optional "+msg)
			continue
		}
		emit("error", g.Name, msg)
	}
	for _, run := range view.FailedRuns(r) {
		msg := run.Error
		if msg == "" {
			msg = "the run could not complete"
		}
		emitAt(whole, "error", "run "+run.Name, msg)
	}
	if view.Interrupted(r) {
		emitAt(whole, "error", "run incomplete", "interrupted: the report is partial and marked incomplete")
	}
	for _, rn := range r.RunNames() {
		warnings, _ := view.Notes(rn, r.Runs[rn])
		for _, n := range warnings {
			emitAt(placeOf(at.Phases, n.Phase), "warning", n.Run+"/"+n.Phase, n.Text)
		}
	}
	if err := ew.Err(); err != nil {
		return fmt.Errorf("writing annotations: %w", err)
	}
	return nil
}

// escapeData escapes a workflow command's message.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a workflow command's property value.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
