package markdown

import (
	"flag"
	"io"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestWriter(t *testing.T) {
	testfixture.CheckWriter(t, "md", *update, func(w io.Writer, r *report.Report) error { return Write(w, r) })
}

func TestCell(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{name: "pipe and backtick", in: "a|b `c`", want: "a\\|b \\`c\\`"},
		{name: "html and newline", in: "<b>x\ny", want: "&lt;b>x y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cell(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
