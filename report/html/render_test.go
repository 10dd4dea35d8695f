package html

import (
	"os"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// TestRenderFiles renders TOLLGATE_HTML_IN to TOLLGATE_HTML_OUT, for a look
// in a browser while working on the page; it skips otherwise.
func TestRenderFiles(t *testing.T) {
	in, out := os.Getenv("TOLLGATE_HTML_IN"), os.Getenv("TOLLGATE_HTML_OUT")
	if in == "" || out == "" {
		t.Skip("set TOLLGATE_HTML_IN and TOLLGATE_HTML_OUT (and TOLLGATE_HTML_BASE) to render a report")
	}
	load := func(p string) *report.Report {
		r, err := report.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var base *report.Report
	if b := os.Getenv("TOLLGATE_HTML_BASE"); b != "" {
		base = load(b)
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Write(f, load(in), base); err != nil {
		t.Fatal(err)
	}
}
