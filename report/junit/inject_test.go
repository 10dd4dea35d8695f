package junit

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
)

// Strings from a report reach the XML as text: the document parses, and
// each gate's name and expression come back as written (a "]]>" in the
// CDATA body included: encoding/xml splits the section there), so no
// string can end an attribute, an element or a CDATA section.
func TestReportStringsStayText(t *testing.T) {
	for _, rc := range testfixture.Reports() {
		t.Run(rc.Name, func(t *testing.T) {
			r := testfixture.WithHostileStrings(rc.Report(t))
			var buf bytes.Buffer
			if err := Write(&buf, r); err != nil {
				t.Fatal(err)
			}
			var doc junitSuites
			if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
				t.Fatalf("not XML: %v\n%s", err, buf.String())
			}
			s := doc.Suites[0]
			if !strings.HasSuffix(s.Name, strings.ReplaceAll(testfixture.Hostile, "\r", `\x0d`)) {
				t.Errorf("suite name %q", s.Name)
			}
			for i, g := range r.Gates {
				c := s.Cases[i]
				if !strings.HasSuffix(c.Name, `]]> "q" 'a'`) {
					t.Errorf("testcase %d name %q, want gate %q", i, c.Name, g.Name)
				}
				for _, p := range []*junitProblem{c.Failure, c.Error} {
					if p != nil && !strings.Contains(p.Body, `]]> "q" 'a'`) {
						t.Errorf("testcase %d body lost the text after ]]>: %q", i, p.Body)
					}
				}
			}
		})
	}
}
