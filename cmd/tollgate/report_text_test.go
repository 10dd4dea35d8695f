package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// tollgate report on a hand-edited report: a status that is not one is
// refused (exit 2, the JSON pointer named) before any output, and names
// and messages edited to carry Markdown come out as text in --markdown.
func TestReportOfAnEditedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	saved := filepath.Join(dir, "saved.json")
	if r := tollgate(t, "run", example, "-q", "--json-out", saved); r.code != 0 {
		t.Fatal(r.stderr)
	}
	edit := func(name string, change func(m map[string]any)) string {
		return editReport(t, saved, filepath.Join(dir, name), change)
	}
	const md = "\n# owned | [link](http://e) *b*"
	for _, tc := range []struct {
		name   string
		change func(m map[string]any)
		code   int
		want   []string // in stdout (exit 0) or stderr
	}{
		{name: "a status that is not one", change: func(m map[string]any) { m["status"] = "pass" + md },
			code: ExitInvalid, want: []string{"/status: value must be one of"}},
		{name: "names and messages", change: func(m map[string]any) {
			m["scenario"].(map[string]any)["name"] = "route" + md
			for _, g := range m["gates"].([]any) {
				g.(map[string]any)["name"] = "gate" + md
			}
		}, want: []string{"## tollgate: route # owned \\| [link]\\(http://e) \\*b\\* — ", "| gate # owned \\| [link]\\(http://e) \\*b\\* |"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tollgate(t, "report", edit(strings.ReplaceAll(tc.name, " ", "-")+".json", tc.change), "--markdown", "-")
			out := r.stdout
			if tc.code != 0 {
				out = r.stderr
			}
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, line := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(line, "# ") {
					t.Errorf("a report string made a heading: %q", line)
				}
			}
		})
	}
}
