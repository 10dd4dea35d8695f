package scenarios

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/schema"
)

// setSchema is the scenario schema as the validator compiled it, walked
// along a --set path so that a flag can add what the schema allows (a
// header, a body field, a sim block) and nothing else. It only answers
// "may this key or index be here, and what schema applies below it"; the
// value itself is still checked by the normal decode and schema
// validation, against the same compiled schema.
type setSchema struct {
	root schemaRef
}

// schemaRef is a compiled schema, or one the walk puts together (the
// allOf or anyOf of what applies below a segment); nil allows anything.
// The compiled ones are shared by every load and never changed.
type schemaRef = *jsonschema.Schema

// maxSchemaDepth bounds $ref and combinator nesting at one instance
// location. The embedded schema has no cycles; this only keeps a broken one
// from recursing forever.
const maxSchemaDepth = 32

func loadSetSchema() (*setSchema, error) {
	s, err := schema.CompiledScenario()
	if err != nil {
		return nil, fmt.Errorf("scenario schema: %w", err)
	}
	return &setSchema{root: s}, nil
}

// step is what the schema says about one segment of a path.
type step struct {
	sub   schemaRef // the schema of the value at the segment
	ok    bool      // the schema allows the segment
	known []string  // keys the schema names at this level, for did-you-mean
}

// instance is the node at the schema being walked, converted for the
// validator on first use: if conditions are decided by what the file says
// (a target's kind).
type instance struct {
	node *yaml.Node
	val  any
	err  error
	done bool
}

func (in *instance) value() (any, error) {
	if !in.done {
		in.done = true
		in.val, in.err = nodeValue(in.node)
	}
	return in.val, in.err
}

// at resolves one segment below s: a key of a mapping (index < 0) or an
// item of a list. inst is the instance at s, when it exists, so if/then
// branches can be chosen by what the file says (a target's kind).
//
// The rules are JSON Schema's, restricted to what decides whether a key may
// exist: properties, patternProperties and additionalProperties (absent
// means any key), prefixItems and items, $ref, allOf (every branch must
// allow it), anyOf and oneOf (some branch must), and if/then/else.
func (w *setSchema) at(s schemaRef, key string, index int, inst *yaml.Node, depth int) step {
	return w.step(s, key, index, &instance{node: inst}, depth)
}

func (w *setSchema) step(s schemaRef, key string, index int, inst *instance, depth int) step {
	if s == nil || depth > maxSchemaDepth {
		return step{ok: true}
	}
	if s.Bool != nil {
		return step{ok: *s.Bool}
	}
	typ := "object"
	if index >= 0 {
		typ = "array"
	}
	if !admitsHere(s, typ) {
		return step{ok: false}
	}
	var parts []*jsonschema.Schema
	var known []string
	sub, ok, found := ownStep(s, key, index)
	if found {
		parts = append(parts, sub)
	}
	if index < 0 {
		known = sortedKeys(s.Properties)
	}
	all := func(st step) {
		known = append(known, st.known...)
		ok = ok && st.ok
		parts = append(parts, st.sub)
	}
	if s.Ref != nil {
		all(w.step(s.Ref, key, index, inst, depth+1))
	}
	for _, b := range s.AllOf {
		all(w.step(b, key, index, inst, depth+1))
	}
	for _, bs := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf} {
		if bs != nil {
			all(w.anyOf(bs, key, index, inst, depth+1))
		}
	}
	if s.If != nil {
		switch matches(s.If, inst) {
		case triYes:
			all(w.step(s.Then, key, index, inst, depth+1))
		case triNo:
			all(w.step(s.Else, key, index, inst, depth+1))
		default: // the file does not say yet: either branch may apply
			all(w.anyOf([]*jsonschema.Schema{s.Then, s.Else}, key, index, inst, depth+1))
		}
	}
	return step{sub: &jsonschema.Schema{AllOf: parts}, ok: ok, known: known}
}

// ownStep is what s's own keywords say of the key or index: the schema
// that applies (found false when none does) and whether it is allowed.
func ownStep(s schemaRef, key string, index int) (sub schemaRef, ok, found bool) {
	if index >= 0 {
		return ownItem(s, index)
	}
	if p, has := s.Properties[key]; has {
		return p, true, true
	}
	var matched []*jsonschema.Schema
	pats := make([]jsonschema.Regexp, 0, len(s.PatternProperties))
	for re := range s.PatternProperties {
		pats = append(pats, re)
	}
	sort.Slice(pats, func(i, j int) bool { return pats[i].String() < pats[j].String() })
	for _, re := range pats {
		if re.MatchString(key) {
			matched = append(matched, s.PatternProperties[re])
		}
	}
	if len(matched) > 0 {
		return &jsonschema.Schema{AllOf: matched}, true, true
	}
	return additional(s.AdditionalProperties)
}

// additional reads additionalProperties or additionalItems: nil (any),
// a bool, or a schema.
func additional(v any) (sub schemaRef, ok, found bool) {
	switch a := v.(type) {
	case bool:
		return nil, a, false
	case *jsonschema.Schema:
		return a, true, true
	}
	return nil, true, false
}

// ownItem is ownStep for an item of a list: prefixItems, then items
// (draft 2020-12), or the older items and additionalItems.
func ownItem(s schemaRef, index int) (sub schemaRef, ok, found bool) {
	if index < len(s.PrefixItems) {
		return s.PrefixItems[index], true, true
	}
	if s.Items2020 != nil {
		return s.Items2020, true, true
	}
	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		return it, true, true
	case []*jsonschema.Schema:
		if index < len(it) {
			return it[index], true, true
		}
		return additional(s.AdditionalItems)
	}
	return nil, true, false
}

func (w *setSchema) anyOf(branches []*jsonschema.Schema, key string, index int, inst *instance, depth int) step {
	var subs []*jsonschema.Schema
	var known []string
	for _, b := range branches {
		st := w.step(b, key, index, inst, depth)
		known = append(known, st.known...)
		if st.ok {
			subs = append(subs, st.sub)
		}
	}
	if len(subs) == 0 {
		return step{ok: false, known: known}
	}
	return step{sub: &jsonschema.Schema{AnyOf: subs}, ok: true, known: known}
}

// admits reports whether an instance of typ ("object" or "array") can meet
// s, as far as type, const and enum anywhere in it say: it decides what kind
// of node a missing segment creates.
func (w *setSchema) admits(s schemaRef, typ string, depth int) bool {
	if s == nil || depth > maxSchemaDepth {
		return true
	}
	if s.Bool != nil {
		return *s.Bool
	}
	if !admitsHere(s, typ) || (s.Ref != nil && !w.admits(s.Ref, typ, depth+1)) {
		return false
	}
	for _, b := range s.AllOf {
		if !w.admits(b, typ, depth+1) {
			return false
		}
	}
	for _, bs := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf} {
		some := bs == nil
		for _, b := range bs {
			some = some || w.admits(b, typ, depth+1)
		}
		if !some {
			return false
		}
	}
	return true
}

// admitsHere is admits for one schema's own type, const and enum.
func admitsHere(s schemaRef, typ string) bool {
	if s.Types != nil && !s.Types.IsEmpty() && !oneOf(typ, s.Types.ToStrings()) {
		return false
	}
	if s.Const != nil && jsonType(*s.Const) != typ {
		return false
	}
	if s.Enum != nil {
		found := false
		for _, x := range s.Enum.Values {
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
func (w *setSchema) required(s schemaRef, depth int) []string {
	if s == nil || depth > maxSchemaDepth {
		return nil
	}
	out := append([]string(nil), s.Required...)
	if s.Ref != nil {
		out = append(out, w.required(s.Ref, depth+1)...)
	}
	for _, b := range s.AllOf {
		out = append(out, w.required(b, depth+1)...)
	}
	for _, bs := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf} {
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

type tri int

const (
	triUnknown tri = iota
	triYes
	triNo
)

// matches decides an if schema against the instance written so far, with
// the validator itself. A missing instance is unknown, and so is a failure
// at a value still to be interpolated (kind: ${vars.kind}): the caller
// then allows either branch.
func matches(cond schemaRef, inst *instance) tri {
	if inst.node == nil {
		return triUnknown
	}
	v, err := inst.value()
	if err != nil {
		return triUnknown
	}
	err = cond.Validate(v)
	if err == nil {
		return triYes
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) || failsAtInterpolation(ve, inst.node) {
		return triUnknown
	}
	return triNo
}

// failsAtInterpolation reports whether any of the reasons for e lies at a
// string with ${...} in it, whose value is not known yet.
func failsAtInterpolation(e *jsonschema.ValidationError, n *yaml.Node) bool {
	if len(e.Causes) == 0 {
		at := resolveAlias(nodeAt(n, e.InstanceLocation))
		return at.Kind == yaml.ScalarNode && strings.Contains(at.Value, "${")
	}
	for _, c := range e.Causes {
		if failsAtInterpolation(c, n) {
			return true
		}
	}
	return false
}

// nodeValue converts a YAML node to the JSON shapes the validator takes,
// in one pass (yaml.v3 decodes a large mapping in quadratic time).
func nodeValue(n *yaml.Node) (any, error) {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := nodeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := nodeValue(c)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding a value: %w", err)
	}
	return normalize(v), nil
}
