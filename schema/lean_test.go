package schema

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The validator compiles scenario.lean.json and report.lean.json: the
// published schemas without their annotations (description, examples, …:
// what an editor shows, which no validation reads) and without white
// space, a fifth of the bytes to decode and walk at start-up; and, for a
// scenario file with neither include nor profiles, scenario.plain.json
// (plainScenario). They are derived, never edited by hand: this test says
// when they are stale, and -update rewrites them (go generate ./schema).
func TestLeanSchemasAreDerived(t *testing.T) {
	for _, s := range []struct {
		published, lean string
		derive          func(any) (any, error)
	}{
		{"scenario.schema.json", "scenario.lean.json", nil},
		{"scenario.schema.json", "scenario.plain.json", plainScenario},
		{"report.schema.json", "report.lean.json", nil},
	} {
		data, err := os.ReadFile(s.published)
		if err != nil {
			t.Fatal(err)
		}
		if *update && s.published == "scenario.schema.json" {
			// go test -update rewrites the part_* definitions too, in
			// TestScenarioSchemaPartsAreDerived, which runs after this
			// test: derive from what it writes.
			doc, err := parseOrdered(data)
			if err != nil {
				t.Fatal(err)
			}
			if data, err = render(deriveParts(doc.(*object))); err != nil {
				t.Fatal(err)
			}
		}
		doc, err := parseOrdered(data)
		if err != nil {
			t.Fatal(err)
		}
		doc = leanSchema(doc)
		if s.derive != nil {
			if doc, err = s.derive(doc); err != nil {
				t.Fatalf("%s: %v", s.lean, err)
			}
		}
		var want bytes.Buffer
		if err := writeCompact(&want, doc); err != nil {
			t.Fatal(err)
		}
		want.WriteByte('\n')
		have, err := os.ReadFile(s.lean)
		if err == nil && bytes.Equal(have, want.Bytes()) {
			continue
		}
		if *update {
			if err := os.WriteFile(s.lean, want.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is stale (%v); run go generate ./schema", s.lean, err)
	}
}

// annotations are the keywords that only annotate: no validation reads
// them, and no message of the validator quotes them.
var annotations = map[string]bool{
	"title": true, "description": true, "examples": true, "default": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$comment": true,
	"markdownDescription": true,
}

// Keywords whose values are schemas: a map of them, one, or a list.
var (
	schemaMaps  = map[string]bool{"$defs": true, "definitions": true, "properties": true, "patternProperties": true, "dependentSchemas": true}
	schemaOne   = map[string]bool{"additionalProperties": true, "items": true, "contains": true, "propertyNames": true, "not": true, "if": true, "then": true, "else": true, "unevaluatedProperties": true, "unevaluatedItems": true, "contentSchema": true}
	schemaLists = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true}
)

// leanSchema drops the annotations of a schema and of its subschemas. It
// looks only where 2020-12 puts subschemas: a property named description
// stays, as does everything in enum, const or a keyword it does not know.
func leanSchema(v any) any {
	o, ok := v.(*object)
	if !ok {
		return v
	}
	out := &object{vals: map[string]any{}}
	for _, k := range o.keys {
		e := o.vals[k]
		switch {
		case annotations[k]:
			continue
		case schemaMaps[k]:
			if m, ok := e.(*object); ok {
				sub := &object{vals: map[string]any{}}
				for _, name := range m.keys {
					sub.set(name, leanSchema(m.vals[name]))
				}
				e = sub
			}
		case schemaOne[k]:
			e = leanSchema(e)
		case schemaLists[k]:
			if l, ok := e.([]any); ok {
				sub := make([]any, len(l))
				for i, s := range l {
					sub[i] = leanSchema(s)
				}
				e = sub
			}
		}
		out.set(k, e)
	}
	return out
}

// plainScenario derives, from the lean scenario schema, the schema a
// document with neither include nor profiles is validated against, with
// the same result: the root's then (it applies only to a document with
// include) and scenario's profiles property become true, and the part_*
// definitions, which nothing else refers to, are dropped; half the schema
// to compile. It refuses a schema whose shape it does not know.
func plainScenario(doc any) (any, error) {
	root, ok := doc.(*object)
	if !ok {
		return nil, fmt.Errorf("the schema is not an object")
	}
	cond, _ := root.get("if")
	if c, ok := cond.(*object); !ok || !reflect.DeepEqual(c.vals, map[string]any{"required": []any{"include"}}) {
		return nil, fmt.Errorf("the root's if is not {required: [include]}: plainScenario needs a change")
	}
	for _, k := range root.keys {
		switch k {
		case "$schema", "$id", "if", "then", "else", "$defs":
		default:
			return nil, fmt.Errorf("the root has %s: plainScenario needs a change", k)
		}
	}
	out := &object{vals: map[string]any{}}
	for _, k := range root.keys {
		out.set(k, root.vals[k])
	}
	out.set("then", true)
	defs, _ := root.get("$defs")
	d, ok := defs.(*object)
	if !ok {
		return nil, fmt.Errorf("no $defs")
	}
	plainDefs := &object{vals: map[string]any{}}
	for _, name := range d.keys {
		if strings.HasPrefix(name, "part_") {
			continue
		}
		plainDefs.set(name, d.vals[name])
	}
	sc, _ := plainDefs.get("scenario")
	scObj, ok := sc.(*object)
	if !ok {
		return nil, fmt.Errorf("no $defs/scenario")
	}
	props, _ := scObj.get("properties")
	p, ok := props.(*object)
	if !ok {
		return nil, fmt.Errorf("$defs/scenario has no properties")
	}
	if _, ok := p.get("profiles"); !ok {
		return nil, fmt.Errorf("$defs/scenario has no profiles property: plainScenario needs a change")
	}
	newProps := &object{vals: map[string]any{}}
	for _, k := range p.keys {
		newProps.set(k, p.vals[k])
	}
	newProps.set("profiles", true)
	newSc := &object{vals: map[string]any{}}
	for _, k := range scObj.keys {
		newSc.set(k, scObj.vals[k])
	}
	newSc.set("properties", newProps)
	plainDefs.set("scenario", newSc)
	out.set("$defs", plainDefs)
	var b bytes.Buffer
	if err := writeCompact(&b, out); err != nil {
		return nil, err
	}
	for _, ref := range []string{"part_", "$dynamicRef", "$recursiveRef"} {
		if bytes.Contains(b.Bytes(), []byte(ref)) {
			return nil, fmt.Errorf("the plain schema still names %s: plainScenario needs a change", ref)
		}
	}
	return out, nil
}
