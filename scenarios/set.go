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
	if !utf8.ValidString(flag) {
		fail("not valid UTF-8")
		return
	}
	path, value, ok := strings.Cut(flag, "=")
	if !ok || path == "" {
		fail("expected PATH=VALUE, e.g. --set targets.route.activation_bytes=8192")
		return
	}
	var val yaml.Node
	if err := yaml.Unmarshal([]byte(value), &val); err != nil {
		fail("value is not valid YAML: %v", err)
		return
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
			return
		}
	}
	switch segs[0] {
	case "include", "replace_gates", "profiles":
		fail("%s is resolved before --set applies; set the values it would change instead", segs[0])
		return
	}
	if sch == nil {
		return // the schema did not load; Parse has reported it
	}
	mark := -(idx + 1) // the position markSet gives the flag's nodes
	node := func(kind yaml.Kind, tag, value string) *yaml.Node {
		return &yaml.Node{Kind: kind, Tag: tag, Value: value, Line: mark}
	}
	// container makes the node for a missing segment from its schema. Where
	// the schema allows both, a mapping: it is the common case (free maps
	// like body), and a list can be set whole.
	container := func(sub any, here, nextSeg string) (*yaml.Node, bool) {
		_, numeric := listIndex(nextSeg)
		obj, arr := sch.admits(sub, "object", 0), sch.admits(sub, "array", 0)
		switch {
		case arr && numeric && !obj:
			return node(yaml.SequenceNode, "!!seq", ""), true
		case obj:
			return node(yaml.MappingNode, "!!map", ""), true
		case arr:
			fail("unknown path: %s is a list; index it with a number", here)
		default:
			fail("unknown path: %s takes a single value, not keys; set it whole (--set %s=VALUE)", here, here)
		}
		return nil, false
	}
	// needs refuses a new entry whose schema requires keys the rest of the
	// path cannot give it, so typos get a did-you-mean instead.
	needs := func(sub any, nextSeg string) []string {
		var out []string
		seen := map[string]bool{nextSeg: true}
		for _, r := range sch.required(sub, 0) {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
		return out
	}

	var commit []func()
	cur, s := root, sch.root
	for i, seg := range segs {
		last := i == len(segs)-1
		nextSeg := ""
		if !last {
			nextSeg = segs[i+1]
		}
		at := strings.Join(segs[:i], ".")
		if at == "" {
			at = "the scenario"
		}
		here := strings.Join(segs[:i+1], ".")
		parent := cur
		switch cur.Kind {
		case yaml.MappingNode:
			st := sch.at(s, seg, -1, cur, 0)
			j := -1
			var keys []string
			for k := 0; k+1 < len(cur.Content); k += 2 {
				keys = append(keys, cur.Content[k].Value)
				if cur.Content[k].Value == seg {
					j = k + 1
				}
			}
			if j >= 0 {
				if last {
					commit = append(commit, func() { parent.Content[j] = newNode })
					break
				}
				if !st.ok {
					st.sub = true // in the file already: validating the file reports it
				}
				cur, s = resolveAlias(cur.Content[j]), st.sub
				continue
			}
			if segs[0] == "vars" && i <= 1 && len(segs) > 1 {
				name := segs[1]
				if i == 0 {
					keys = nil
				}
				fail("the scenario has no var %q%s; vars are declared in the file (vars: {%s: ...})", name, suggest(name, keys), name)
				return
			}
			implicit := i == 0 && seg == "targets" && !last
			if i == 1 && segs[0] == "targets" && len(cur.Content) == 0 {
				keys = []string{KindEmbedded} // the target a scenario without targets runs
			}
			if !st.ok {
				fail("unknown path: %s has no key %q%s", at, seg, suggest(seg, append(keys, st.known...)))
				return
			}
			key := node(yaml.ScalarNode, "!!str", seg)
			if last {
				commit = append(commit, func() { parent.Content = append(parent.Content, key, newNode) })
				break
			}
			if missing := needs(st.sub, nextSeg); len(missing) > 0 {
				fail("unknown path: %s has no key %q%s; a new one needs %s, so set it whole (--set %s={%s: ...})",
					at, seg, suggest(seg, append(keys, st.known...)), strings.Join(missing, ", "), here, missing[0])
				return
			}
			next, ok := container(st.sub, here, nextSeg)
			if !ok {
				return
			}
			if implicit && nextSeg == KindEmbedded {
				// The implicit target, written out so it can be changed.
				next.Content = append(next.Content, node(yaml.ScalarNode, "!!str", KindEmbedded),
					&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: mark, Content: []*yaml.Node{
						node(yaml.ScalarNode, "!!str", "kind"), node(yaml.ScalarNode, "!!str", KindEmbedded),
					}})
			}
			commit = append(commit, func() { parent.Content = append(parent.Content, key, next) })
			cur, s = next, st.sub
		case yaml.SequenceNode:
			k, isIndex := listIndex(seg)
			if !isIndex || k > len(cur.Content) {
				fail("unknown path: %s is a list of %d; %q is not an index in it (%s)", at, len(cur.Content), seg, indexHint(len(cur.Content)))
				return
			}
			st := sch.at(s, "", k, cur, 0)
			if k < len(cur.Content) {
				if last {
					commit = append(commit, func() { parent.Content[k] = newNode })
					break
				}
				if !st.ok {
					st.sub = true
				}
				cur, s = resolveAlias(cur.Content[k]), st.sub
				continue
			}
			if !st.ok {
				fail("unknown path: %s takes no items", at)
				return
			}
			if last {
				commit = append(commit, func() { parent.Content = append(parent.Content, newNode) })
				break
			}
			if missing := needs(st.sub, nextSeg); len(missing) > 0 {
				fail("unknown path: %s is a list of %d; a new item needs %s, so set it whole (--set %s={%s: ...})",
					at, len(cur.Content), strings.Join(missing, ", "), here, missing[0])
				return
			}
			next, ok := container(st.sub, here, nextSeg)
			if !ok {
				return
			}
			commit = append(commit, func() { parent.Content = append(parent.Content, next) })
			cur, s = next, st.sub
		default:
			fail("unknown path: %s is %s, not a mapping or list", at, describe(cur))
			return
		}
	}
	for _, c := range commit {
		c()
	}
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
