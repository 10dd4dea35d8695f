package gates

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Every example's own gates load against its shape.
func TestExampleGatesCompile(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc, err := scenarios.Load(f, scenarios.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var specs []Spec
			for _, g := range sc.Gates {
				specs = append(specs, Spec{Name: g.Name, Expr: g.Expr, Optional: g.Optional})
			}
			// As run does: gates that read baseline are checked against a
			// baseline of the run's own shape.
			set, problems := Compile(specs, withBaseline(t, shapeOf(t, filepath.Base(f))))
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			if len(set.Gates) != len(sc.Gates) {
				t.Fatalf("%d of %d gates compiled", len(set.Gates), len(sc.Gates))
			}
		})
	}
}

type docGate struct {
	section, expr string
	wantError     bool // the cookbook says this one errors at run time
	wantRefused   bool // the cookbook says this one does not load
}

var (
	sectionRe = regexp.MustCompile(`^### .*\((examples/[a-z-]+\.yaml)`)
	commentRe = regexp.MustCompile(`\s{2,}#\s.*$`)
)

// cookbookGates extracts every gate of docs/gates.md's cookbook with the
// example it is written for ("" for the baseline section).
func cookbookGates(t *testing.T) []docGate {
	t.Helper()
	b, err := os.ReadFile("../docs/gates.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "## Cookbook")
	if i < 0 {
		t.Fatal("docs/gates.md has no cookbook")
	}
	var out []docGate
	section := ""
	var block []string
	lang, in := "", false
	for _, line := range strings.Split(text[i:], "\n") {
		if m := sectionRe.FindStringSubmatch(line); m != nil {
			section = m[1]
		} else if strings.HasPrefix(line, "### ") {
			section = ""
		}
		if strings.HasPrefix(line, "```") {
			if !in {
				in, lang, block = true, strings.TrimPrefix(line, "```"), nil
				continue
			}
			in = false
			out = append(out, blockGates(t, section, lang, block)...)
			continue
		}
		if in {
			block = append(block, line)
		}
	}
	return out
}

func blockGates(t *testing.T, section, lang string, block []string) []docGate {
	if lang == "yaml" {
		var gates []struct{ Expr string }
		if err := yaml.Unmarshal([]byte(strings.Join(block, "\n")), &gates); err != nil {
			t.Fatalf("cookbook yaml: %v", err)
		}
		var out []docGate
		for _, g := range gates {
			out = append(out, docGate{section: section, expr: g.Expr})
		}
		return out
	}
	var lines []docGate
	var whole []string
	for _, l := range block {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue // a comment line of the cookbook, not a gate
		}
		g := docGate{section: section, expr: commentRe.ReplaceAllString(l, ""), wantError: strings.Contains(l, "# ERROR"), wantRefused: strings.Contains(l, "# REFUSED")}
		whole = append(whole, g.expr)
		if strings.TrimSpace(g.expr) != "" {
			lines = append(lines, g)
		}
	}
	// One gate over several lines, or one gate a line: a block of several
	// gates does not parse as one expression.
	if _, problems := Compile([]Spec{{Name: "probe", Expr: strings.Join(whole, "\n")}}, map[string]any{}); len(problems) > 0 && errors.Is(problems[0], ErrSyntax) {
		return lines
	}
	return []docGate{{section: section, expr: strings.Join(whole, "\n"), wantError: len(lines) == 1 && lines[0].wantError,
		wantRefused: len(lines) == 1 && lines[0].wantRefused}}
}

// Every gate of the cookbook loads against the shape of the example it is
// written for, and the deterministic ones (route-session runs in virtual
// time) give the verdicts the cookbook states.
func TestCookbookGates(t *testing.T) {
	gates := cookbookGates(t)
	if len(gates) < 30 {
		t.Fatalf("found only %d cookbook gates", len(gates))
	}
	shapes := map[string]map[string]any{}
	for _, f := range []string{"quickstart.yaml", "load-sweep.yaml", "route-session.yaml"} {
		shapes["examples/"+f] = shapeOf(t, f)
	}
	seams := seamEnv(t)
	for _, g := range gates {
		t.Run(g.expr, func(t *testing.T) {
			candidates := []string{g.section}
			if g.section == "" {
				// The baseline section: against either example, with a baseline.
				candidates = []string{"examples/quickstart.yaml", "examples/route-session.yaml"}
			}
			var last []Problem
			for _, c := range candidates {
				shape := shapes[c]
				if g.section == "" {
					shape = withBaseline(t, shape)
				}
				set, problems := Compile([]Spec{{Name: "cookbook", Expr: g.expr}}, shape)
				if g.wantRefused {
					if len(problems) == 0 {
						t.Errorf("loads, the cookbook says it is refused")
					}
					return
				}
				if len(problems) > 0 {
					last = problems
					continue
				}
				last = nil
				if c != "examples/route-session.yaml" {
					return
				}
				env := seams
				if g.section == "" {
					env = withBaseline(t, seams)
				}
				res := set.Evaluate(env)[0]
				want := report.StatusPass
				if g.wantError {
					want = report.StatusError
				}
				if res.Status != want {
					t.Errorf("%s (%s), the cookbook says %s", res.Status, res.Message, want)
				}
				return
			}
			t.Fatal(last)
		})
	}
}
