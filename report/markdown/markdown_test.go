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
		{name: "a heading after a newline", in: "ok\r\n# owned", want: "ok # owned"},
		{name: "a backslash before a pipe", in: `a\|b`, want: `a\\\|b`},
		{name: "a link and an image", in: "[x](http://e) ![i](http://t/p.png)", want: "[x]\\(http://e) ![i]\\(http://t/p.png)"},
		{name: "emphasis", in: "*b* _i_ ~~s~~ __u__", want: "\\*b\\* \\_i\\_ \\~\\~s\\~\\~ \\_\\_u\\_\\_"},
		{name: "an underscore inside a word stays", in: "prefix_cache.ttft_ms", want: "prefix_cache.ttft_ms"},
		{name: "an entity", in: "&lt;b&gt; &#124;", want: "&amp;lt;b&amp;gt; &amp;#124;"},
		{name: "math", in: "$x^2$", want: "\\$x^2\\$"},
		{name: "a list index is no link", in: "points[0].ttft_ms", want: "points[0].ttft_ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cell(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
