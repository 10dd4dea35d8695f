package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// These tests keep the published schemas useful in an editor: the
// yaml-language-server shows a property's description on hover and offers
// its examples on completion, so a scenario property without them is a
// property users have to look up elsewhere. Every offender is listed in one
// failure, so a schema edit can fix them in one pass.
//
// A property "has" a description or examples when it carries them itself or
// when its $ref target (followed through further $refs) does, since editors
// show the referenced schema's annotations too.

// keysThatHoldValues are schema keywords whose values are instance data, not
// subschemas; the walk never looks inside them for "properties".
var keysThatHoldValues = map[string]bool{
	"examples": true, "default": true, "const": true, "enum": true,
	"required": true, "dependentRequired": true,
	"description": true, "title": true, "pattern": true, "$comment": true,
}

// conditionKeys hold subschemas that only test an instance (if: {properties:
// {kind: {const: seam}}}) and declare nothing an editor shows; their
// "properties" are matchers, not properties of the scenario.
var conditionKeys = map[string]bool{"if": true, "not": true}

// property is one entry of a "properties" map somewhere in a schema.
type property struct {
	path   string // JSON pointer of the property's subschema
	name   string
	schema map[string]any
}

func decodeSchema(t *testing.T, name string, doc []byte) map[string]any {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		t.Fatalf("%s schema is not JSON: %v", name, err)
	}
	return root
}

// properties returns every property under a "properties" map anywhere in
// the schema, in a stable order.
func properties(root map[string]any) []property {
	var out []property
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				if keysThatHoldValues[k] || conditionKeys[k] {
					continue
				}
				child := path + "/" + pointerEscape(k)
				if k == "properties" {
					if props, ok := x[k].(map[string]any); ok {
						for _, name := range sortedKeys(props) {
							p, ok := props[name].(map[string]any)
							if !ok {
								continue
							}
							pp := child + "/" + pointerEscape(name)
							out = append(out, property{path: pp, name: name, schema: p})
							walk(p, pp)
						}
						continue
					}
				}
				walk(x[k], child)
			}
		case []any:
			for i, e := range x {
				walk(e, path+"/"+itoa(i))
			}
		}
	}
	walk(root, "#")
	return out
}

// resolved returns s and the targets of its $ref chain.
func resolved(root, s map[string]any) []map[string]any {
	out := []map[string]any{s}
	seen := map[string]bool{}
	for {
		ref, ok := s["$ref"].(string)
		if !ok || seen[ref] || !strings.HasPrefix(ref, "#/") {
			return out
		}
		seen[ref] = true
		var cur any = root
		for _, seg := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, ok := cur.(map[string]any)
			if !ok {
				return out
			}
			cur = m[pointerUnescape(seg)]
		}
		next, ok := cur.(map[string]any)
		if !ok {
			return out
		}
		out = append(out, next)
		s = next
	}
}

func has(root, s map[string]any, key string) bool {
	for _, r := range resolved(root, s) {
		switch v := r[key].(type) {
		case string:
			if strings.TrimSpace(v) != "" {
				return true
			}
		case []any:
			if len(v) > 0 {
				return true
			}
		case nil:
		default:
			return true
		}
	}
	return false
}

// isObjectWithProperties is true for a property that is itself an object
// with declared properties (directly or through $ref); its leaves carry the
// examples.
func isObjectWithProperties(root, s map[string]any) bool {
	for _, r := range resolved(root, s) {
		if _, ok := r["properties"].(map[string]any); ok {
			return true
		}
	}
	return false
}

func TestScenarioSchemaPropertiesHaveDescriptions(t *testing.T) {
	root := decodeSchema(t, "scenario", Scenario())
	var missing []string
	props := properties(root)
	for _, p := range props {
		if !has(root, p.schema, "description") {
			missing = append(missing, p.path)
		}
	}
	if len(props) == 0 {
		t.Fatal("found no properties in the scenario schema; the walk is broken")
	}
	report(t, "scenario schema properties without a description", missing)
}

func TestScenarioSchemaLeavesHaveExamples(t *testing.T) {
	root := decodeSchema(t, "scenario", Scenario())
	var missing []string
	for _, p := range properties(root) {
		if isObjectWithProperties(root, p.schema) {
			continue
		}
		if !has(root, p.schema, "examples") {
			missing = append(missing, p.path)
		}
	}
	report(t, "scenario schema leaf properties without examples", missing)
}

// metricDefs are the report's $defs of aggregates: every property in them
// (and nested in them, such as errors.count and goodput.good_requests) is a
// measurement.
var metricDefs = []string{"stat", "seamMetrics", "servingMetrics", "point", "loadPoint"}

// Elsewhere (per-transfer and per-request samples, run-level fields) a
// measurement is known by its unit, as the report's naming rule gives it.
var (
	metricSuffixes = []string{"_ms", "_bytes", "_per_s", "_pct", "_tokens", "_ratio", "_s", "_events"}
	metricPrefixes = []string{"bytes_"}
)

func TestReportSchemaMetricsHaveDescriptions(t *testing.T) {
	root := decodeSchema(t, "report", Report())
	var missing []string
	seen := 0
	for _, p := range properties(root) {
		if !isMetric(p) {
			continue
		}
		seen++
		if !has(root, p.schema, "description") {
			missing = append(missing, p.path)
		}
	}
	if seen == 0 {
		t.Fatal("found no metric properties in the report schema; the walk is broken")
	}
	report(t, "report schema metric properties without a description", missing)
}

func isMetric(p property) bool {
	for _, d := range metricDefs {
		if strings.HasPrefix(p.path, "#/$defs/"+d+"/") {
			return true
		}
	}
	for _, s := range metricSuffixes {
		if strings.HasSuffix(p.name, s) {
			return true
		}
	}
	for _, s := range metricPrefixes {
		if strings.HasPrefix(p.name, s) {
			return true
		}
	}
	return false
}

func TestPropertyWalk(t *testing.T) {
	root := map[string]any{
		"properties": map[string]any{
			"a": map[string]any{"type": "string", "description": "A.", "examples": []any{"x"}},
			"b": map[string]any{"$ref": "#/$defs/size"},
			"c": map[string]any{"type": "object", "properties": map[string]any{
				"d": map[string]any{"type": "integer"},
			}},
			"e": map[string]any{"examples": []any{map[string]any{"properties": map[string]any{"not": "a schema"}}}},
		},
		"if": map[string]any{"properties": map[string]any{"kind": map[string]any{"const": "x"}}},
		"$defs": map[string]any{
			"size": map[string]any{"description": "Bytes.", "examples": []any{4096}},
		},
	}
	var paths []string
	for _, p := range properties(root) {
		paths = append(paths, p.path)
	}
	want := []string{"#/properties/a", "#/properties/b", "#/properties/c", "#/properties/c/properties/d", "#/properties/e"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("properties: got %v, want %v", paths, want)
	}
	props := properties(root)
	if !has(root, props[1].schema, "description") || !has(root, props[1].schema, "examples") {
		t.Error("a $ref property should inherit its target's description and examples")
	}
	if !isObjectWithProperties(root, props[2].schema) || isObjectWithProperties(root, props[3].schema) {
		t.Error("c is an object with properties, d is a leaf")
	}
	if has(root, props[3].schema, "description") {
		t.Error("d has no description")
	}
}

func report(t *testing.T, what string, offenders []string) {
	t.Helper()
	if len(offenders) == 0 {
		return
	}
	t.Errorf("%d %s:\n  %s", len(offenders), what, strings.Join(offenders, "\n  "))
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func pointerUnescape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// The validator walks an object's keys in map order; what it reports of
// several unknown keys must read the same on every run.
func TestUnknownKeysAreListedInOrder(t *testing.T) {
	doc := map[string]any{"zz_unknown": 1, "aa_unknown": 2, "mm_unknown": 3, "kk_unknown": 4}
	var first string
	for i := range 30 {
		probs := ValidateScenario(doc)
		var b strings.Builder
		for _, p := range probs {
			if p.Keyword == "additionalProperties" && len(p.Path) == 0 {
				if !slices.IsSorted(p.Properties) {
					t.Fatalf("run %d: properties %v not sorted", i, p.Properties)
				}
			}
			fmt.Fprintf(&b, "%v %s %s %v\n", p.Path, p.Keyword, p.Message, p.Properties)
		}
		if !strings.Contains(b.String(), "'aa_unknown', 'kk_unknown', 'mm_unknown', 'zz_unknown'") {
			t.Fatalf("run %d: unknown keys not listed in order:\n%s", i, b.String())
		}
		if i == 0 {
			first = b.String()
		} else if b.String() != first {
			t.Fatalf("run %d differs from the first:\n%s\nvs\n%s", i, b.String(), first)
		}
	}
}
