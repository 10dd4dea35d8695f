package schema

import (
	"bytes"
	"os"
	"testing"
)

// The validator compiles scenario.lean.json and report.lean.json: the
// published schemas without their annotations (description, examples, …:
// what an editor shows, which no validation reads) and without white
// space, a fifth of the bytes to decode and walk at start-up. They are
// derived, never edited by hand: this test says when they are stale, and
// -update rewrites them (go generate ./schema).
func TestLeanSchemasAreDerived(t *testing.T) {
	for _, s := range []struct{ published, lean string }{
		{"scenario.schema.json", "scenario.lean.json"},
		{"report.schema.json", "report.lean.json"},
	} {
		data, err := os.ReadFile(s.published)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := parseOrdered(data)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := writeCompact(&want, leanSchema(doc)); err != nil {
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
