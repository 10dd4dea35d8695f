package scenarios

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// applySet applies one --set PATH=VALUE. The path is resolved against the
// file and the scenario schema together: keys that exist are followed, and
// missing ones are created where the schema allows them (a header, a body
// field, a sim block), as a mapping, or as a list where the schema says
// array. A numeric segment indexes a list; one equal to its length appends.
// The value then meets the same strict checks as the file, with errors
// naming the flag. Three things are refused on purpose:
//   - a new var (vars.X, --var X): vars are declared in the file, and a
//     misspelt one would be set, never used, and the run would go on;
//   - a new entry built field by field when its schema requires more than
//     the one field given (targets.rout.cache where route was meant): a
//     typo is likelier than a new target, and the whole entry can be set;
//   - include, replace_gates and profiles, which are resolved before --set applies.
//
// targets.embedded.X on a scenario without targets addresses the implicit
// embedded target, which is then written out.
//
// The tree changes only when the whole path resolves, so a rejected flag
// leaves nothing half-built behind to cause errors of its own.
func applySet(d *decoder, sch *setSchema, root *yaml.Node, idx int, flag string) {
	pos := Pos{Set: d.sets[idx]}
	fail := func(format string, args ...any) { d.errs.add(pos, format, args...) }
	segs, val, ok := parseSet(flag, idx, fail)
	if !ok || sch == nil {
		return // with no schema, Parse has reported why it did not load
	}
	w := &setWalk{sch: sch, segs: segs, val: val, mark: -(idx + 1), fail: fail}
	if w.walk(root) {
		for _, c := range w.commit {
			c()
		}
	}
}

// parseSet splits a --set flag into its path segments and its value, a
// YAML node with the flag's position, or reports why it cannot.
func parseSet(flag string, idx int, fail func(string, ...any)) ([]string, *yaml.Node, bool) {
	if !utf8.ValidString(flag) {
		fail("not valid UTF-8")
		return nil, nil, false
	}
	path, value, ok := strings.Cut(flag, "=")
	if !ok || path == "" {
		fail("expected PATH=VALUE, e.g. --set targets.route.activation_bytes=8192")
		return nil, nil, false
	}
	var val yaml.Node
	if err := yaml.Unmarshal([]byte(value), &val); err != nil {
		fail("value is not valid YAML: %v", err)
		return nil, nil, false
	}
	resolveTree(&val)
	newNode := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ""}
	if len(val.Content) > 0 {
		newNode = val.Content[0]
	}
	markSet(newNode, idx)

	segs := strings.Split(path, ".")
	for _, seg := range segs {
		if seg == "" {
			fail("unknown path: %q has an empty key; keys are separated by single dots", path)
			return nil, nil, false
		}
	}
	switch segs[0] {
	case "include", "replace_gates", "profiles":
		fail("%s is resolved before --set applies; set the values it would change instead", segs[0])
		return nil, nil, false
	}
	return segs, newNode, true
}

// setWalk follows one --set path down the tree and the schema together,
// collecting the changes to make once the whole path has resolved.
type setWalk struct {
	sch    *setSchema
	segs   []string
	val    *yaml.Node // the flag's value
	mark   int        // the line markSet gives the flag's nodes
	fail   func(format string, args ...any)
	commit []func()
}

// cursor is where the walk stands: the node, the schema that applies to
// it, and the segment it is about to resolve.
type cursor struct {
	node *yaml.Node
	sch  schemaRef
	i    int
}

func (w *setWalk) last(c cursor) bool { return c.i == len(w.segs)-1 }

func (w *setWalk) nextSeg(c cursor) string {
	if w.last(c) {
		return ""
	}
	return w.segs[c.i+1]
}

// at names the node the segment is resolved in, for messages.
func (w *setWalk) at(c cursor) string {
	if c.i == 0 {
		return "the scenario"
	}
	return strings.Join(w.segs[:c.i], ".")
}

func (w *setWalk) here(c cursor) string { return strings.Join(w.segs[:c.i+1], ".") }

func (w *setWalk) node(kind yaml.Kind, tag, value string) *yaml.Node {
	return &yaml.Node{Kind: kind, Tag: tag, Value: value, Line: w.mark}
}

// walk resolves every segment; false when the flag was refused.
func (w *setWalk) walk(root *yaml.Node) bool {
	c := cursor{node: root, sch: w.sch.root}
	for ; c.i < len(w.segs); c.i++ {
		var next cursor
		var ok bool
		switch c.node.Kind {
		case yaml.MappingNode:
			next, ok = w.key(c)
		case yaml.SequenceNode:
			next, ok = w.item(c)
		default:
			w.fail("unknown path: %s is %s, not a mapping or list", w.at(c), describe(c.node))
			return false
		}
		if !ok {
			return false
		}
		if w.last(c) {
			return true
		}
		c.node, c.sch = next.node, next.sch
	}
	return true
}

// key resolves a segment in a mapping: an existing key is followed (or,
// last, replaced); a missing one is created where the schema allows it.
func (w *setWalk) key(c cursor) (cursor, bool) {
	seg, parent := w.segs[c.i], c.node
	st := w.sch.at(c.sch, seg, -1, parent, 0)
	j := -1
	var keys []string
	for k := 0; k+1 < len(parent.Content); k += 2 {
		keys = append(keys, parent.Content[k].Value)
		if parent.Content[k].Value == seg {
			j = k + 1
		}
	}
	if j >= 0 {
		if w.last(c) {
			w.commit = append(w.commit, func() { parent.Content[j] = w.val })
			return cursor{}, true
		}
		if !st.ok {
			st.sub = nil // in the file already: validating the file reports it
		}
		return cursor{node: resolveAlias(parent.Content[j]), sch: st.sub}, true
	}
	return w.newKey(c, st, keys)
}

// newKey adds a missing key to a mapping, as a container for the rest of
// the path or, last, with the flag's value; keys are the mapping's own.
func (w *setWalk) newKey(c cursor, st step, keys []string) (cursor, bool) {
	seg, parent := w.segs[c.i], c.node
	if w.segs[0] == "vars" && c.i <= 1 && len(w.segs) > 1 {
		name := w.segs[1]
		if c.i == 0 {
			keys = nil
		}
		w.fail("the scenario has no var %q%s; vars are declared in the file (vars: {%s: ...})", name, suggest(name, keys), name)
		return cursor{}, false
	}
	if c.i == 1 && w.segs[0] == "targets" && len(parent.Content) == 0 {
		keys = []string{KindEmbedded} // the target a scenario without targets runs
	}
	known := append(keys, st.known...)
	if !st.ok {
		w.fail("unknown path: %s has no key %q%s", w.at(c), seg, suggest(seg, known))
		return cursor{}, false
	}
	key := w.node(yaml.ScalarNode, "!!str", seg)
	if w.last(c) {
		w.commit = append(w.commit, func() { parent.Content = append(parent.Content, key, w.val) })
		return cursor{}, true
	}
	if missing := w.needs(st.sub, w.nextSeg(c)); len(missing) > 0 {
		w.fail("unknown path: %s has no key %q%s; a new one needs %s, so set it whole (--set %s={%s: ...})",
			w.at(c), seg, suggest(seg, known), strings.Join(missing, ", "), w.here(c), missing[0])
		return cursor{}, false
	}
	next, ok := w.container(st.sub, c)
	if !ok {
		return cursor{}, false
	}
	if c.i == 0 && seg == "targets" && w.nextSeg(c) == KindEmbedded {
		// The implicit target, written out so it can be changed.
		next.Content = append(next.Content, w.node(yaml.ScalarNode, "!!str", KindEmbedded),
			&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: w.mark, Content: []*yaml.Node{
				w.node(yaml.ScalarNode, "!!str", "kind"), w.node(yaml.ScalarNode, "!!str", KindEmbedded),
			}})
	}
	w.commit = append(w.commit, func() { parent.Content = append(parent.Content, key, next) })
	return cursor{node: next, sch: st.sub}, true
}

// item resolves a segment in a list: an index of an item (followed, or,
// last, replaced) or the list's length, which appends an item.
func (w *setWalk) item(c cursor) (cursor, bool) {
	seg, parent := w.segs[c.i], c.node
	n := len(parent.Content)
	k, isIndex := listIndex(seg)
	if !isIndex || k > n {
		w.fail("unknown path: %s is a list of %d; %q is not an index in it (%s)", w.at(c), n, seg, indexHint(n))
		return cursor{}, false
	}
	st := w.sch.at(c.sch, "", k, parent, 0)
	if k < n {
		if w.last(c) {
			w.commit = append(w.commit, func() { parent.Content[k] = w.val })
			return cursor{}, true
		}
		if !st.ok {
			st.sub = nil
		}
		return cursor{node: resolveAlias(parent.Content[k]), sch: st.sub}, true
	}
	if !st.ok {
		w.fail("unknown path: %s takes no items", w.at(c))
		return cursor{}, false
	}
	if w.last(c) {
		w.commit = append(w.commit, func() { parent.Content = append(parent.Content, w.val) })
		return cursor{}, true
	}
	if missing := w.needs(st.sub, w.nextSeg(c)); len(missing) > 0 {
		w.fail("unknown path: %s is a list of %d; a new item needs %s, so set it whole (--set %s={%s: ...})",
			w.at(c), n, strings.Join(missing, ", "), w.here(c), missing[0])
		return cursor{}, false
	}
	next, ok := w.container(st.sub, c)
	if !ok {
		return cursor{}, false
	}
	w.commit = append(w.commit, func() { parent.Content = append(parent.Content, next) })
	return cursor{node: next, sch: st.sub}, true
}

// container makes the node for a missing segment from its schema. Where
// the schema allows both, a mapping: it is the common case (free maps
// like body), and a list can be set whole.
func (w *setWalk) container(sub schemaRef, c cursor) (*yaml.Node, bool) {
	_, numeric := listIndex(w.nextSeg(c))
	obj, arr := w.sch.admits(sub, "object", 0), w.sch.admits(sub, "array", 0)
	here := w.here(c)
	switch {
	case arr && numeric && !obj:
		return w.node(yaml.SequenceNode, "!!seq", ""), true
	case obj:
		return w.node(yaml.MappingNode, "!!map", ""), true
	case arr:
		w.fail("unknown path: %s is a list; index it with a number", here)
	default:
		w.fail("unknown path: %s takes a single value, not keys; set it whole (--set %s=VALUE)", here, here)
	}
	return nil, false
}

// needs refuses a new entry whose schema requires keys the rest of the
// path cannot give it, so typos get a did-you-mean instead.
func (w *setWalk) needs(sub schemaRef, nextSeg string) []string {
	var out []string
	seen := map[string]bool{nextSeg: true}
	for _, r := range w.sch.required(sub, 0) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// listIndex parses a list index: digits only, so "+1" and "-0" are keys.
func listIndex(seg string) (int, bool) {
	if seg == "" || strings.TrimLeft(seg, "0123456789") != "" {
		return 0, false
	}
	k, err := strconv.Atoi(seg)
	return k, err == nil
}

func indexHint(n int) string {
	if n == 0 {
		return "0 adds an item"
	}
	return "0 to " + strconv.Itoa(n-1) + ", or " + strconv.Itoa(n) + " to add one"
}

// markSet gives n and everything under it the position of --set number idx.
func markSet(n *yaml.Node, idx int) {
	n.Line, n.Column = -(idx + 1), 0
	for _, c := range n.Content {
		markSet(c, idx)
	}
}
