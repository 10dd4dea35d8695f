package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the derived part_* definitions of scenario.schema.json")

// A file with include: holds part of a scenario: a target it overrides
// may leave out kind, and phases may come from the included file. The
// scenario schema checks such a file against part_scenario, which is
// scenario with nothing required. The part_* definitions are derived from
// the others, never edited by hand: this test says when they are stale,
// and -update rewrites them.
func TestScenarioSchemaPartsAreDerived(t *testing.T) {
	const file = "scenario.schema.json"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseOrdered(data)
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(deriveParts(doc.(*object)))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(data, want) {
		return
	}
	if *update {
		if err := os.WriteFile(file, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s: the part_* definitions are stale; run go test ./schema -run TestScenarioSchemaPartsAreDerived -update", file)
}

// A part accepts what a scenario leaves to its included files, and still
// refuses what no merge can mend.
func TestScenarioPartValidation(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		ok   bool
	}{
		{name: "include only", doc: `{"include": ["base.yaml"], "gates": [{"name": "g", "expr": "true"}]}`, ok: true},
		{name: "target without kind", doc: `{"include": "b.yaml", "targets": {"route": {"costs": {"transport_ms": 0.7}}}}`, ok: true},
		{name: "openai target without kind", doc: `{"include": "b.yaml", "targets": {"s": {"base_url": "http://h:1"}}}`, ok: true},
		{name: "unknown key still refused", doc: `{"include": "b.yaml", "targets": {"s": {"base_ulr": "http://h:1"}}}`},
		{name: "wrong type still refused", doc: `{"include": "b.yaml", "phases": {"decode": {"max_tokens": "x"}}}`},
		{name: "whole scenario needs phases", doc: `{"name": "x"}`},
		{name: "replace_gates needs include", doc: `{"replace_gates": true, "phases": {"decode": {}}}`},
		{name: "replace_gates in a profile", doc: `{"phases": {"decode": {}}, "profiles": {"ci": {"replace_gates": true, "gates": []}}}`, ok: true},
		{name: "include inside a profile", doc: `{"phases": {"decode": {}}, "profiles": {"ci": {"include": "x.yaml"}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := jsonValue(tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			probs := ValidateScenario(v)
			if (len(probs) == 0) != tc.ok {
				t.Errorf("valid %v, want %v: %v", len(probs) == 0, tc.ok, probs)
			}
		})
	}
}

func jsonValue(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode %q: %w", s, err)
	}
	return v, nil
}

// object is a JSON object that keeps its key order, so the derived file
// reads like the hand-written one.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) (any, bool) { v, ok := o.vals[k]; return v, ok }

func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, x := range o.keys {
		if x == k {
			o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
			break
		}
	}
}

func parseOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the schema")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := &object{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			o.set(kt.(string), v)
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		l := []any{}
		for dec.More() {
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		_, err := dec.Token()
		return l, err
	}
	return tok, nil
}

func render(v any) ([]byte, error) {
	var compact bytes.Buffer
	if err := writeCompact(&compact, v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func writeCompact(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCompact(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeCompact(b, x.vals[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCompact(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case json.Number:
		b.WriteString(string(x))
	default:
		var s bytes.Buffer
		enc := json.NewEncoder(&s)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return err
		}
		b.Write(bytes.TrimRight(s.Bytes(), "\n"))
	}
	return nil
}

const partPrefix = "part_"

// deriveParts replaces the part_* definitions of doc with fresh copies of
// every definition that requires something (directly or through a $ref),
// with the requirements dropped: required and dependentRequired, except
// inside if and not, where they test an instance rather than demand, and
// the entries of allOf marked "$comment": "whole: …", rules that hold of
// the merged scenario only.
func deriveParts(doc *object) *object {
	defsV, _ := doc.get("$defs")
	defs := defsV.(*object)
	for _, k := range append([]string{}, defs.keys...) {
		if strings.HasPrefix(k, partPrefix) {
			defs.del(k)
		}
	}
	// A definition needs a part copy when stripping changes it, or when it
	// refers to one that does.
	needs := map[string]bool{}
	for _, k := range defs.keys {
		if requires(defs.vals[k], false) {
			needs[k] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, k := range defs.keys {
			if !needs[k] && refersTo(defs.vals[k], needs) {
				needs[k], changed = true, true
			}
		}
	}
	for _, k := range append([]string{}, defs.keys...) {
		if !needs[k] {
			continue
		}
		p := strip(defs.vals[k], needs, false).(*object)
		if k == "scenario" {
			p.set("description", "Part of a scenario: a file with include:, or a profile. The keys of a scenario with nothing required, since the included files may supply it; the loader checks the whole once the files are merged.")
		}
		defs.set(partPrefix+k, p)
	}
	return doc
}

// whole reports whether v is an allOf entry marked as a rule of the
// merged scenario only.
func whole(v any) bool {
	o, ok := v.(*object)
	if !ok {
		return false
	}
	c, _ := o.vals["$comment"].(string)
	return strings.HasPrefix(c, "whole:")
}

func requires(v any, matcher bool) bool {
	switch x := v.(type) {
	case *object:
		if !matcher && whole(x) {
			return true
		}
		for _, k := range x.keys {
			if !matcher && (k == "required" || k == "dependentRequired") {
				return true
			}
			if requires(x.vals[k], matcher || k == "if" || k == "not") {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if requires(e, matcher) {
				return true
			}
		}
	}
	return false
}

func refersTo(v any, set map[string]bool) bool {
	switch x := v.(type) {
	case *object:
		for _, k := range x.keys {
			if s, ok := x.vals[k].(string); ok && k == "$ref" && set[strings.TrimPrefix(s, "#/$defs/")] {
				return true
			}
			if refersTo(x.vals[k], set) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if refersTo(e, set) {
				return true
			}
		}
	}
	return false
}

func strip(v any, needs map[string]bool, matcher bool) any {
	switch x := v.(type) {
	case *object:
		o := &object{vals: map[string]any{}}
		for _, k := range x.keys {
			e := x.vals[k]
			if !matcher && (k == "required" || k == "dependentRequired") {
				continue
			}
			if s, ok := e.(string); ok && k == "$ref" {
				if name := strings.TrimPrefix(s, "#/$defs/"); needs[name] {
					e = "#/$defs/" + partPrefix + name
				}
			}
			if l, ok := e.([]any); ok && k == "allOf" && !matcher {
				var kept []any
				for _, b := range l {
					if !whole(b) {
						kept = append(kept, b)
					}
				}
				if len(kept) == 0 {
					continue
				}
				e = kept
			}
			o.set(k, strip(e, needs, matcher || k == "if" || k == "not"))
		}
		return o
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = strip(e, needs, matcher)
		}
		return l
	}
	return v
}
