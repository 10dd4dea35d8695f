package measure

import (
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// The classes a request fails with are the report's by_class keys.
func TestErrorClassesAreTheReports(t *testing.T) {
	if len(ErrorClasses) != len(report.ErrorClasses) {
		t.Fatalf("%d classes here, %d in the report", len(ErrorClasses), len(report.ErrorClasses))
	}
	for i, c := range ErrorClasses {
		if string(c) != report.ErrorClasses[i] {
			t.Errorf("class %d: %q here, %q in the report", i, c, report.ErrorClasses[i])
		}
	}
}
