package schema

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// The embedded schemas are compiled without the validator's meta-schema
// check (see embeddedBase). This is the check they skip: the published
// schemas and the lean and plain ones compile under their published URLs against
// the 2020-12 meta-schema.
func TestSchemasMatchMetaSchema(t *testing.T) {
	for _, s := range []struct {
		url string
		doc []byte
	}{{ScenarioURL, scenarioJSON}, {ReportURL, reportJSON}, {ScenarioURL, scenarioLean}, {ScenarioURL, scenarioPlain}, {ReportURL, reportLean}} {
		if _, err := compile(s.url, s.doc, false); err != nil {
			t.Errorf("%s: %v", s.url, err)
		}
	}
	bad := []byte(`{"$id": "https://tollgate.dev/schema/bad.json", "type": "object", "properties": {"a": {"type": "strin"}}}`)
	if _, err := compile("https://tollgate.dev/schema/bad.json", bad, false); err == nil {
		t.Error("a schema that breaks the meta-schema compiled")
	}
	if _, err := compile("https://tollgate.dev/schema/bad.json", bad, true); err != nil {
		t.Errorf("the embedded compile checks the meta-schema after all (start-up pays for it again): %v", err)
	}
}

// The embedded compile (of the lean schema, and of the plain one for the
// documents it is for) and the published one give the same problems
// (compared as canonical sets: the validator's order follows Go's map
// order) for every example scenario, the quickstart report, and
// variants of them broken at each place in turn (an unknown key in each
// mapping, a value of the wrong type at each leaf).
func TestEmbeddedCompileAgrees(t *testing.T) {
	for _, s := range []struct {
		url       string
		doc, lean []byte
		docs      map[string]any
	}{
		{ScenarioURL, scenarioJSON, scenarioLean, exampleScenarios(t)},
		{ScenarioURL, scenarioJSON, scenarioPlain, plainScenarios(t)},
		{ReportURL, reportJSON, reportLean, quickstartReport(t)},
	} {
		full, err := compile(s.url, s.doc, false)
		if err != nil {
			t.Fatal(err)
		}
		embedded, err := compile(s.url, s.lean, true)
		if err != nil {
			t.Fatal(err)
		}
		checked, failing := 0, 0
		for _, name := range sortedKeys(s.docs) {
			for i, v := range variants(s.docs[name]) {
				want, err := validate(func() (*jsonschema.Schema, error) { return full, nil }, v)
				if err != nil {
					t.Fatal(err)
				}
				got, err := validate(func() (*jsonschema.Schema, error) { return embedded, nil }, v)
				if err != nil {
					t.Fatal(err)
				}
				g, err := canonical(got)
				if err != nil {
					t.Fatalf("%s variant %d: %v", name, i, err)
				}
				w, err := canonical(want)
				if err != nil {
					t.Fatalf("%s variant %d: %v", name, i, err)
				}
				if !reflect.DeepEqual(g, w) {
					t.Errorf("%s variant %d: embedded compile gives\n%v\nthe published one\n%v", name, i, g, w)
				}
				checked++
				if len(want) > 0 {
					failing++
				}
			}
		}
		if failing == 0 || failing == checked {
			t.Errorf("%s: %d of %d documents fail: the corpus tests nothing", s.url, failing, checked)
		}
		t.Logf("%s: %d documents, %d with problems", s.url, checked, failing)
	}
}

func exampleScenarios(t *testing.T) map[string]any {
	t.Helper()
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v (%d files)", err, len(files))
	}
	out := map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = jsonShapes(t, v)
	}
	return out
}

// plainScenarios are the example scenarios without include and profiles:
// the documents scenario.plain.json is for.
func plainScenarios(t *testing.T) map[string]any {
	t.Helper()
	out := exampleScenarios(t)
	for _, v := range out {
		delete(v.(map[string]any), "include")
		delete(v.(map[string]any), "profiles")
	}
	return out
}

func quickstartReport(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/quickstart.report.json")
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return map[string]any{"quickstart.report.json": v}
}

// jsonShapes turns a YAML-decoded value into the JSON one (through JSON,
// as the loader's values are JSON shapes).
func jsonShapes(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// variants returns v itself and, for each mapping in v, a copy with an
// unknown key added to it, and for each leaf, a copy with a value of
// another type in its place (of arrays, the first two elements).
func variants(v any) []any {
	out := []any{v}
	var walk func(path []any, x any)
	walk = func(path []any, x any) {
		switch x := x.(type) {
		case map[string]any:
			out = append(out, replaced(v, path, func(old any) any {
				m := clone(old).(map[string]any)
				m["not_a_tollgate_key"] = 1.0
				return m
			}))
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(append(append([]any{}, path...), k), x[k])
			}
		case []any:
			// The first two elements stand for the rest (a report's
			// samples, a scenario's gates).
			for i, e := range x[:min(len(x), 2)] {
				walk(append(append([]any{}, path...), i), e)
			}
		default:
			out = append(out, replaced(v, path, func(old any) any {
				switch old.(type) {
				case string:
					return 12345.5
				case float64:
					return "not a number"
				default:
					return []any{"x"}
				}
			}))
		}
	}
	walk(nil, v)
	// At most some 200 of them, spread over the document: a report has
	// thousands of leaves, and validating it is milliseconds.
	if step := len(out) / 200; step > 1 {
		var some []any
		for i := 0; i < len(out); i += step {
			some = append(some, out[i])
		}
		out = some
	}
	return out
}

// replaced is a deep copy of root with the value at path replaced by f's.
func replaced(root any, path []any, f func(any) any) any {
	if len(path) == 0 {
		return f(root)
	}
	c := clone(root)
	switch x := c.(type) {
	case map[string]any:
		k := path[0].(string)
		x[k] = replaced(x[k], path[1:], f)
	case []any:
		i := path[0].(int)
		x[i] = replaced(x[i], path[1:], f)
	default:
		panic(fmt.Sprintf("path %v into %T", path, c))
	}
	return c
}

// clone copies a value one level deep (replaced copies down its path).
func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = e
		}
		return m
	case []any:
		return append([]any{}, x...)
	}
	return v
}

// canonical is ps in a form that does not depend on Go's map order, for
// comparing two validations of one document. The validator walks an
// instance mapping in map order: the names an additionalProperties
// problem lists (its Properties, and its Message, which quotes them) come
// in that order, and so do the problems found at one instance location
// under different keys, which validate's sort by location keeps as they
// came. So each problem's Properties are sorted and its Message rewritten
// to list them sorted, and the problems are sorted by location, keyword,
// message and properties: what is compared is the set of problems, each
// by location, keyword, message and names. A Message that does not list
// its Properties as the validator does is an error (a new validator
// version words it otherwise, and this must learn how), never a flaky
// comparison.
func canonical(ps []Problem) ([]Problem, error) {
	out := make([]Problem, len(ps))
	for i, p := range ps {
		if len(p.Properties) > 0 {
			listed := joinQuoted(p.Properties)
			if !strings.Contains(p.Message, listed) {
				return nil, fmt.Errorf("problem %v: its message does not list its properties %s", p, listed)
			}
			sorted := slices.Sorted(slices.Values(p.Properties))
			p.Message = strings.Replace(p.Message, listed, joinQuoted(sorted), 1)
			p.Properties = sorted
		}
		out[i] = p
	}
	slices.SortFunc(out, func(a, b Problem) int {
		return cmp.Or(
			slices.Compare(a.Path, b.Path),
			strings.Compare(a.Keyword, b.Keyword),
			strings.Compare(a.Message, b.Message),
			slices.Compare(a.Properties, b.Properties),
		)
	})
	return out, nil
}

// joinQuoted lists names as the validator's messages do (kind.joinQuoted):
// each single-quoted, separated by a comma and a space.
func joinQuoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		s := fmt.Sprintf("%q", n)
		s = strings.ReplaceAll(s, `\"`, `"`)
		s = strings.ReplaceAll(s, `'`, `\'`)
		q[i] = "'" + s[1:len(s)-1] + "'"
	}
	return strings.Join(q, ", ")
}

// ValidateScenario takes the plain schema only for a document with neither
// include nor profiles.
func TestPlainFor(t *testing.T) {
	for _, tc := range []struct {
		doc   string
		plain bool
	}{
		{`{"phases": {"decode": {}}}`, true},
		{`{"include": "b.yaml"}`, false},
		{`{"include": null}`, false},
		{`{"phases": {"decode": {}}, "profiles": {}}`, false},
		{`[]`, false},
		{`"x"`, false},
	} {
		v, err := jsonValue(tc.doc)
		if err != nil {
			t.Fatal(err)
		}
		if got := plainFor(v); got != tc.plain {
			t.Errorf("%s: plain %v, want %v", tc.doc, got, tc.plain)
		}
	}
}

// canonical makes two validations of one document equal however Go's map
// order lists the unknown keys, and says so when a message does not list
// a problem's properties as the validator does.
func TestCanonicalIgnoresMapOrder(t *testing.T) {
	doc := map[string]any{"phases": map[string]any{}}
	for _, k := range []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"} {
		doc[k] = 1.0
	}
	var first []Problem
	for i := range 20 {
		ps, err := validate(scenarioSchema, doc)
		if err != nil {
			t.Fatal(err)
		}
		c, err := canonical(ps)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = c
			found := false
			for _, p := range c {
				found = found || p.Keyword == "additionalProperties" && len(p.Properties) == 8
			}
			if !found {
				t.Fatalf("no additionalProperties problem listing the 8 keys: %v", c)
			}
			continue
		}
		if !reflect.DeepEqual(c, first) {
			t.Fatalf("validation %d: %v, the first %v", i, c, first)
		}
	}
	ba := []Problem{{Path: []string{"x"}, Keyword: "additionalProperties", Properties: []string{"b", "it's"}, Message: `additional properties 'b', 'it\'s' not allowed`}}
	ab := []Problem{{Path: []string{"x"}, Keyword: "additionalProperties", Properties: []string{"it's", "b"}, Message: `additional properties 'it\'s', 'b' not allowed`}}
	cba, err := canonical(ba)
	if err != nil {
		t.Fatal(err)
	}
	cab, err := canonical(ab)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cba, cab) {
		t.Errorf("%v and %v differ", cba, cab)
	}
	if _, err := canonical([]Problem{{Properties: []string{"a", "b"}, Message: "unknown keys a and b"}}); err == nil {
		t.Error("a message that does not list its properties was compared as if it did")
	}
}
