package markdown

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
)

var (
	// unescapedPipe is a | that no backslash escapes.
	unescapedPipe = regexp.MustCompile(`(^|[^\\])(\\\\)*\|`)
	// made are what hostile would make if it reached the page raw.
	made = map[string]*regexp.Regexp{
		"a link or image": regexp.MustCompile(`\]\(`),
		"HTML":            regexp.MustCompile(`<b>`),
		"an entity":       regexp.MustCompile(`&amp; `),
		"emphasis":        regexp.MustCompile(`(^|[^\\])\*b|(^|[^\\])_i|(^|[^\\])~~s`),
		"code":            regexp.MustCompile("(^|[^\\\\])`c"),
		"math":            regexp.MustCompile(`(^|[^\\])\$m`),
	}
)

// Every string a report supplies is text on the page: it starts no
// heading or list, keeps every table row at its table's width, and makes
// no link, image, emphasis, code, math or HTML. Our own headings and
// tables are all the structure there is.
func TestReportStringsMakeNoMarkdown(t *testing.T) {
	for _, rc := range testfixture.Reports() {
		t.Run(rc.Name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, testfixture.WithHostileStrings(rc.Report(t))); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if !strings.Contains(out, "item [link]") {
				t.Fatalf("the hostile strings are not on the page:\n%s", out)
			}
			width := -1
			for i, line := range strings.Split(out, "\n") {
				switch {
				case strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "## tollgate: ") && !strings.HasPrefix(line, "### "):
					t.Errorf("line %d starts a heading: %q", i+1, line)
				case strings.HasPrefix(line, "|"):
					n := len(unescapedPipe.FindAllString(line, -1))
					if width < 0 {
						width = n
					} else if n != width {
						t.Errorf("line %d has %d cell borders, its table %d: %q", i+1, n, width, line)
					}
				default:
					width = -1
				}
				for what, re := range made {
					if re.MatchString(line) {
						t.Errorf("line %d makes %s: %q", i+1, what, line)
					}
				}
			}
		})
	}
}
