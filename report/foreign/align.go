package foreign

import (
	"fmt"
	"strconv"

	"github.com/tollgate-dev/tollgate/report"
)

// Align names an imported report's run and load phase after those of
// other (a tollgate report, another import, or the shape of a scenario's
// report) when other has one run with one load phase: compare matches
// metrics by their path (runs["server"].phases.load.points[0].ttft_ms)
// and gates read them by it, so an import of a vLLM run is compared and
// judged as the one load phase it measured. A note on imp says so. It
// returns false, changing nothing, when imp was not imported or other's
// shape is not one run with one load phase (paths then compare as they
// are: only in old, only in new).
func Align(imp, other *report.Report) bool {
	if imp == nil || imp.Imported == nil || other == nil || len(imp.RunOrder) != 1 || len(other.Runs) != 1 {
		return false
	}
	to := other.RunNames()[0]
	phase := ""
	for _, pn := range other.Runs[to].PhaseNames() {
		if p := other.Runs[to].Phases[pn]; p != nil && p.Kind == report.KindLoad {
			if phase != "" {
				return false // two load phases: which one is not ours to guess
			}
			phase = pn
		}
	}
	from := imp.RunOrder[0]
	run := imp.Runs[from]
	if phase == "" || run == nil || len(run.PhaseOrder) != 1 {
		return false
	}
	fromPhase := run.PhaseOrder[0]
	ph := run.Phases[fromPhase]
	delete(imp.Runs, from)
	run.Name = to
	imp.Runs[to] = run
	imp.RunOrder = []string{to}
	delete(run.Phases, fromPhase)
	run.Phases[phase] = ph
	run.PhaseOrder = []string{phase}
	if s, ok := ph.Samples.([]report.RequestSample); ok {
		for i := range s {
			s[i].Phase = phase
		}
	}
	imp.Imported.Notes = append(imp.Imported.Notes, fmt.Sprintf("names: its one run and load phase are read as runs[%s].phases[%s], the other side's, "+
		"and its load points are matched by position (points[0], …) as compare matches a sweep's", strconv.Quote(to), strconv.Quote(phase)))
	return true
}
