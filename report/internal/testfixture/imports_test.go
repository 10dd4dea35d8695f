package testfixture

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/tollgate-dev/tollgate"

// TestImportArrows keeps the arrows this package and workload rely on:
// only tests import testfixture, report and internal import nothing above
// them (the route-session runs are a JSON file this package's test writes),
// workload imports
// nothing of the project (scenarios and engine both read it), and
// scenarios imports nothing under engine (engine depends on scenarios).
func TestImportArrows(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	imports := map[string][]string{} // package dir (slash, from the root) -> project imports of its non-test files
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if p == module || strings.HasPrefix(p, module+"/") {
				imports[dir] = append(imports[dir], strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) == 0 {
		t.Fatal("no project imports found: is the root right?")
	}
	for _, c := range []struct {
		name   string
		from   func(dir string) bool
		banned func(imp string) bool
	}{
		{"only tests import report/internal/testfixture",
			func(dir string) bool { return dir != "report/internal/testfixture" },
			func(imp string) bool { return imp == "report/internal/testfixture" }},
		{"report and internal import nothing above them (gates, engine, scenarios, cmd)",
			func(dir string) bool {
				return strings.HasPrefix(dir, "internal/") || dir == "report" || strings.HasPrefix(dir, "report/")
			},
			func(imp string) bool {
				for _, up := range []string{"gates", "engine", "scenarios", "cmd"} {
					if imp == up || strings.HasPrefix(imp, up+"/") {
						return true
					}
				}
				return false
			}},
		{"workload imports nothing of the project but internal/safefile and internal/suggest",
			func(dir string) bool { return dir == "workload" },
			// safefile, a leaf (it imports nothing of the project), is how
			// every named file is opened; suggest, a leaf too, says which
			// word a misspelt one meant (a dataset's chat role).
			func(imp string) bool { return imp != "internal/safefile" && imp != "internal/suggest" }},
		{"internal/safefile imports nothing of the project",
			func(dir string) bool { return dir == "internal/safefile" },
			func(string) bool { return true }},
		{"scenarios imports nothing under engine",
			func(dir string) bool { return dir == "scenarios" || strings.HasPrefix(dir, "scenarios/") },
			func(imp string) bool { return imp == "engine" || strings.HasPrefix(imp, "engine/") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			for dir, imps := range imports {
				if !c.from(dir) {
					continue
				}
				for _, imp := range imps {
					if c.banned(imp) {
						t.Errorf("%s imports %s", dir, imp)
					}
				}
			}
		})
	}
}
