package annotations

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestWriter(t *testing.T) {
	testfixture.CheckWriter(t, "annotations.txt", *update, func(w io.Writer, r *report.Report) error { return Write(w, r, r.Scenario.File) })
}

func TestEscaping(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		fn             func(string) string
	}{
		{name: "data percent and newlines", in: "100%\r\nnext", want: "100%25%0D%0Anext", fn: escapeData},
		{name: "data keeps colon and comma", in: "a: b, c", want: "a: b, c", fn: escapeData},
		{name: "property colon and comma", in: "p95: 1,5%", want: "p95%3A 1%2C5%25", fn: escapeProperty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.fn(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A gate skipped for want of a baseline is a notice, never an error.
func TestSkippedGateIsANotice(t *testing.T) {
	r := &report.Report{Gates: []report.GateResult{{Name: "no slower", Status: report.StatusSkipped, Message: "skipped (no baseline): give --baseline"}}}
	var b strings.Builder
	if err := Write(&b, r, "s.yaml"); err != nil {
		t.Fatal(err)
	}
	if want := "::notice file=s.yaml,title=no slower::skipped (no baseline): give --baseline\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// A gate's and a phase warning's annotation carries the line it is
// written on, in its own file; what has no place points at the scenario.
func TestAnnotationsCarryTheLine(t *testing.T) {
	r := &report.Report{
		RunOrder: []string{"s"},
		Runs: map[string]*report.Run{"s": {Name: "s", Status: report.RunOK, PhaseOrder: []string{"decode"}, Phases: map[string]*report.Phase{
			"decode": {Kind: report.KindDecode, ServingMetrics: &report.ServingMetrics{Warnings: []string{"no usage"}}}}}},
		Gates: []report.GateResult{
			{Name: "floor", Status: report.StatusFail, Message: "x >= 50: 10 >= 50 is false"},
			{Name: "shared", Status: report.StatusError, Message: "boom"},
			{Name: "from --set", Status: report.StatusFail, Message: "no"},
		},
	}
	at := Places{Scenario: "perf/s.yaml",
		Gates:  map[string]Place{"floor": {File: "perf/s.yaml", Line: 29}, "shared": {File: "perf/shared/gates.yaml", Line: 4}},
		Phases: map[string]Place{"decode": {File: "perf/s.yaml", Line: 16}}}
	var b strings.Builder
	if err := WriteAt(&b, r, at); err != nil {
		t.Fatal(err)
	}
	want := "::error file=perf/s.yaml,line=29,title=floor::gate failed: x >= 50: 10 >= 50 is false\n" +
		"::error file=perf/shared/gates.yaml,line=4,title=shared::gate errored: boom\n" +
		"::error file=perf/s.yaml,title=from --set::gate failed: no\n" +
		"::warning file=perf/s.yaml,line=16,title=s/decode::no usage\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
