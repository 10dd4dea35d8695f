package scenarios

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/schema"
)

// setSchema is the scenario schema as decoded JSON, walked along a --set
// path so that a flag can add what the schema allows (a header, a body
// field, a sim block) and nothing else. It only answers "may this key or
// index be here, and what schema applies below it"; the value itself is
// still checked by the normal decode and schema validation.
type setSchema struct {
	root any
}

// maxSchemaDepth bounds $ref and combinator nesting at one instance
// location. The embedded schema has no cycles; this only keeps a broken one
// from recursing forever.
const maxSchemaDepth = 32

func loadSetSchema() (*setSchema, error) {
	var v any
	if err := json.Unmarshal(schema.Scenario(), &v); err != nil {
		return nil, fmt.Errorf("scenario schema: %w", err)
	}
	return &setSchema{root: v}, nil
}

// step is what the schema says about one segment of a path.
type step struct {
	sub   any      // the schema of the value at the segment
	ok    bool     // the schema allows the segment
	known []string // keys the schema names at this level, for did-you-mean
}

// at resolves one segment below s: a key of a mapping (index < 0) or an
// item of a list. inst is the instance at s, when it exists, so if/then
// branches can be chosen by what the file says (a target's kind).
//
// The rules are JSON Schema's, restricted to what decides whether a key may
// exist: properties, patternProperties and additionalProperties (absent
// means any key), items and prefixItems, $ref, allOf (every branch must
// allow it), anyOf and oneOf (some branch must), and if/then/else.
func (w *setSchema) at(s any, key string, index int, inst *yaml.Node, depth int) step {
	m, isMap := s.(map[string]any)
	if !isMap {
		b, isBool := s.(bool)
		return step{sub: true, ok: !isBool || b}
	}
	if depth > maxSchemaDepth {
		return step{sub: true, ok: true}
	}
	typ := "object"
	if index >= 0 {
		typ = "array"
	}
	if !admitsHere(m, typ) {
		return step{ok: false}
	}
	var parts []any
	var known []string
	ok := true
	if index < 0 {
		props, _ := m["properties"].(map[string]any)
		known = append(known, sortedKeys(props)...)
		if p, found := props[key]; found {
			parts = append(parts, p)
		} else {
			matched := false
			pats, _ := m["patternProperties"].(map[string]any)
			for _, pat := range sortedKeys(pats) {
				if re, err := regexp.Compile(pat); err == nil && re.MatchString(key) {
					parts = append(parts, pats[pat])
					matched = true
				}
			}
			if ap, has := m["additionalProperties"]; has && !matched {
				if b, isBool := ap.(bool); isBool {
					ok = b
				} else {
					parts = append(parts, ap)
				}
			}
		}
	} else {
		prefix, _ := m["prefixItems"].([]any)
		if index < len(prefix) {
			parts = append(parts, prefix[index])
		} else if it, has := m["items"]; has {
			if b, isBool := it.(bool); isBool {
				ok = b
			} else {
				parts = append(parts, it)
			}
		}
	}
	all := func(st step) {
		known = append(known, st.known...)
		ok = ok && st.ok
		parts = append(parts, st.sub)
	}
	if r, has := m["$ref"].(string); has {
		all(w.at(w.ref(r), key, index, inst, depth+1))
	}
	if bs, has := m["allOf"].([]any); has {
		for _, b := range bs {
			all(w.at(b, key, index, inst, depth+1))
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if bs, has := m[k].([]any); has {
			all(w.anyOf(bs, key, index, inst, depth+1))
		}
	}
	if cond, has := m["if"]; has {
		then, hasThen := m["then"]
		els, hasElse := m["else"]
		if !hasThen {
			then = true
		}
		if !hasElse {
			els = true
		}
		switch w.matches(cond, inst, depth+1) {
		case triYes:
			all(w.at(then, key, index, inst, depth+1))
		case triNo:
			all(w.at(els, key, index, inst, depth+1))
		default: // the file does not say yet: either branch may apply
			all(w.anyOf([]any{then, els}, key, index, inst, depth+1))
		}
	}
	return step{sub: map[string]any{"allOf": parts}, ok: ok, known: known}
}

func (w *setSchema) anyOf(branches []any, key string, index int, inst *yaml.Node, depth int) step {
	var subs []any
	var known []string
	for _, b := range branches {
		st := w.at(b, key, index, inst, depth)
		known = append(known, st.known...)
		if st.ok {
			subs = append(subs, st.sub)
		}
	}
	if len(subs) == 0 {
		return step{ok: false, known: known}
	}
	return step{sub: map[string]any{"anyOf": subs}, ok: true, known: known}
}

// admits reports whether an instance of typ ("object" or "array") can meet
// s, as far as type, const and enum anywhere in it say: it decides what kind
// of node a missing segment creates.
func (w *setSchema) admits(s any, typ string, depth int) bool {
	m, isMap := s.(map[string]any)
	if !isMap {
		b, isBool := s.(bool)
		return !isBool || b
	}
	if depth > maxSchemaDepth {
		return true
	}
	if !admitsHere(m, typ) {
		return false
	}
	if r, has := m["$ref"].(string); has && !w.admits(w.ref(r), typ, depth+1) {
		return false
	}
	if bs, has := m["allOf"].([]any); has {
		for _, b := range bs {
			if !w.admits(b, typ, depth+1) {
				return false
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		bs, has := m[k].([]any)
		if !has {
			continue
		}
		some := false
		for _, b := range bs {
			some = some || w.admits(b, typ, depth+1)
		}
		if !some {
			return false
		}
	}
	return true
}

// admitsHere is admits for one schema object's own type, const and enum.
func admitsHere(m map[string]any, typ string) bool {
	switch t := m["type"].(type) {
	case string:
		if t != typ {
			return false
		}
	case []any:
		found := false
		for _, x := range t {
			found = found || x == typ
		}
		if !found {
			return false
		}
	}
	if c, has := m["const"]; has && jsonType(c) != typ {
		return false
	}
	if e, has := m["enum"].([]any); has {
		found := false
		for _, x := range e {
			found = found || jsonType(x) == typ
		}
		if !found {
			return false
		}
	}
	return true
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "scalar"
}

// required lists the keys an object meeting s must have: its own required,
// and those of $ref and allOf; of anyOf and oneOf, only the keys every
// branch that admits an object requires. if/then is left out: which branch
// applies depends on values not written yet.
func (w *setSchema) required(s any, depth int) []string {
	m, isMap := s.(map[string]any)
	if !isMap || depth > maxSchemaDepth {
		return nil
	}
	var out []string
	if rs, has := m["required"].([]any); has {
		for _, r := range rs {
			if name, isString := r.(string); isString {
				out = append(out, name)
			}
		}
	}
	if r, has := m["$ref"].(string); has {
		out = append(out, w.required(w.ref(r), depth+1)...)
	}
	if bs, has := m["allOf"].([]any); has {
		for _, b := range bs {
			out = append(out, w.required(b, depth+1)...)
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		bs, has := m[k].([]any)
		if !has {
			continue
		}
		var common map[string]bool
		for _, b := range bs {
			if !w.admits(b, "object", depth+1) {
				continue
			}
			these := map[string]bool{}
			for _, r := range w.required(b, depth+1) {
				these[r] = common == nil || common[r]
			}
			common = these
		}
		for _, r := range sortedKeys(common) {
			if common[r] {
				out = append(out, r)
			}
		}
	}
	return out
}

// ref resolves a local $ref ("#/$defs/target"). Any other reference is not
// followed and allows anything: validation still checks the result.
func (w *setSchema) ref(r string) any {
	ptr, local := strings.CutPrefix(r, "#")
	if !local {
		return true
	}
	cur := w.root
	if ptr == "" {
		return cur
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, isMap := cur.(map[string]any)
		if !isMap {
			return true
		}
		next, found := m[tok]
		if !found {
			return true
		}
		cur = next
	}
	return cur
}

type tri int

const (
	triUnknown tri = iota
	triYes
	triNo
)

// matches evaluates an if schema against the instance written so far. Only
// the keywords such conditions use are understood (properties, required,
// const, enum, type); anything else, a missing instance or a value still to
// be interpolated is unknown, and the caller then allows either branch.
func (w *setSchema) matches(s any, n *yaml.Node, depth int) tri {
	n = resolveAlias(n)
	if n == nil || depth > maxSchemaDepth {
		return triUnknown
	}
	m, isMap := s.(map[string]any)
	if !isMap {
		if b, isBool := s.(bool); isBool && !b {
			return triNo
		}
		return triYes
	}
	res := triYes
	and := func(t tri) {
		if t == triNo || res == triNo {
			res = triNo
		} else if t == triUnknown {
			res = triUnknown
		}
	}
	for _, k := range sortedKeys(m) {
		switch v := m[k]; k {
		case "description", "title", "examples", "default", "$comment":
		case "properties":
			props, _ := v.(map[string]any)
			for _, name := range sortedKeys(props) {
				if c := mapValue(n, name); c != nil {
					and(w.matches(props[name], c, depth+1))
				}
			}
		case "required":
			rs, _ := v.([]any)
			for _, r := range rs {
				if name, isString := r.(string); isString && n.Kind == yaml.MappingNode && mapValue(n, name) == nil {
					and(triNo)
				}
			}
		case "const":
			and(equalsNode(v, n))
		case "enum":
			vals, _ := v.([]any)
			t := triNo
			for _, x := range vals {
				if e := equalsNode(x, n); e != triNo {
					t = e
					if e == triYes {
						break
					}
				}
			}
			and(t)
		case "type":
			and(hasType(v, n))
		default:
			return triUnknown
		}
	}
	return res
}

// equalsNode compares a schema value with a YAML node by their JSON forms.
func equalsNode(v any, n *yaml.Node) tri {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		return triUnknown
	}
	var x any
	if err := n.Decode(&x); err != nil {
		return triUnknown
	}
	a, errA := json.Marshal(v)
	b, errB := json.Marshal(normalize(x))
	if errA != nil || errB != nil {
		return triUnknown
	}
	if string(a) == string(b) {
		return triYes
	}
	return triNo
}

// hasType is the type keyword for a YAML node, by its resolved tag.
func hasType(t any, n *yaml.Node) tri {
	var got []string
	switch n.Kind {
	case yaml.MappingNode:
		got = []string{"object"}
	case yaml.SequenceNode:
		got = []string{"array"}
	default:
		switch n.ShortTag() {
		case "!!str":
			got = []string{"string"}
		case "!!int":
			got = []string{"integer", "number"}
		case "!!float":
			got = []string{"number"}
		case "!!bool":
			got = []string{"boolean"}
		case "!!null":
			got = []string{"null"}
		default:
			return triUnknown
		}
	}
	var want []any
	switch x := t.(type) {
	case string:
		want = []any{x}
	case []any:
		want = x
	}
	for _, w := range want {
		for _, g := range got {
			if w == g {
				return triYes
			}
		}
	}
	return triNo
}
