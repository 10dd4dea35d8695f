package junit

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestWriter(t *testing.T) {
	testfixture.CheckWriter(t, "junit.xml", *update, func(w io.Writer, r *report.Report) error { return Write(w, r) })
}

func TestJUnitCounts(t *testing.T) {
	for _, tc := range []struct {
		name                             string
		r                                *report.Report
		tests, failures, errors, skipped int
		runCase                          bool
	}{
		{name: "failed gate, errored gate, optional, failed run", r: testfixture.SeamReport(), tests: 5, failures: 1, errors: 2, skipped: 1, runCase: true},
		{name: "interrupted", r: testfixture.LiveReport(), tests: 2, errors: 1, runCase: true},
		{name: "error from a gate only", r: func() *report.Report {
			r := testfixture.SeamReport()
			r.Runs["relay/cached"].Status, r.Status = "ok", report.StatusError
			r.Gates = r.Gates[2:3]
			return r
		}(), tests: 1, errors: 1},
		{name: "error with nothing to blame", r: func() *report.Report {
			r := testfixture.SeamReport()
			r.Runs["relay/cached"].Status, r.Status = "ok", report.StatusError
			r.Gates = nil
			return r
		}(), tests: 1, errors: 1, runCase: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, tc.r); err != nil {
				t.Fatal(err)
			}
			var doc junitSuites
			if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
				t.Fatalf("not XML: %v\n%s", err, buf.String())
			}
			s := doc.Suites[0]
			if s.Tests != tc.tests || s.Failures != tc.failures || s.Errors != tc.errors || s.Skipped != tc.skipped {
				t.Errorf("tests/failures/errors/skipped = %d/%d/%d/%d, want %d/%d/%d/%d",
					s.Tests, s.Failures, s.Errors, s.Skipped, tc.tests, tc.failures, tc.errors, tc.skipped)
			}
			if len(s.Cases) != s.Tests {
				t.Errorf("%d testcases, tests=%d", len(s.Cases), s.Tests)
			}
			hasRun := len(s.Cases) > 0 && s.Cases[len(s.Cases)-1].Name == "run"
			if hasRun != tc.runCase {
				t.Errorf("run testcase present = %v, want %v", hasRun, tc.runCase)
			}
		})
	}
}
