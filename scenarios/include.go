package scenarios

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// tree parses a scenario file and resolves its include: list. Included
// files are merged first, in order, then the including file over them: maps
// merge deeply, lists and scalars are replaced, the later file wins. chain
// is the include path so far, for cycle messages. It returns nil on errors.
func (d *decoder) tree(file string, data []byte, fileIdx int, chain []string) *yaml.Node {
	e := d.errs
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		e.list = append(e.list, syntaxError(file, data, err))
		return nil
	}
	// A second document would be dropped without a word; one scenario is
	// one document.
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		e.list = append(e.list, syntaxError(file, data, err))
		return nil
	case len(next.Content) > 0:
		c := next.Content[0]
		e.add(Pos{File: file, Line: c.Line, Col: c.Column}, "a second YAML document (after ---): a scenario file holds one document; remove the --- line or split the file")
		return nil
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		e.add(Pos{File: file, Line: 1, Col: 1}, "the scenario is empty")
		return nil
	}
	resolveTree(&doc)
	root := doc.Content[0]
	if fileIdx > 0 {
		markFile(root, fileIdx)
	}
	if root.Kind != yaml.MappingNode {
		d.errorf(root, "a scenario is a mapping with name, targets, phases and gates; got %s", describe(root))
		return nil
	}
	if h := takeHeader(&doc, data); fileIdx == 0 {
		// The scenario's own header heads the effective scenario; an
		// included file's describes that file, and would head it instead
		// when its keys come first.
		d.header = h
	}
	replace := d.replaceGates(root)
	inc := removeKey(root, "include")
	if inc == nil {
		if replace != nil {
			d.errorf(replace, "replace_gates: this file includes nothing whose gates it could replace (it applies to a file with include:, or to a profile)")
		}
		return root
	}
	var paths []*yaml.Node
	switch inc.Kind {
	case yaml.ScalarNode:
		paths = []*yaml.Node{inc}
	case yaml.SequenceNode:
		paths = inc.Content
	default:
		d.errorf(inc, "include: expected a file name or a list of them, got %s", describe(inc))
		return nil
	}
	var merged *yaml.Node
	for _, pn := range paths {
		if pn.Kind != yaml.ScalarNode || pn.Value == "" {
			d.errorf(pn, "include: expected a file name, got %s", describe(pn))
			continue
		}
		path := pn.Value
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(file), path)
		}
		path = filepath.Clean(path)
		for i, c := range chain {
			if sameFile(c, path) {
				d.errorf(pn, "include cycle: %s → %s", strings.Join(chain[i:], " → "), path)
				return nil
			}
		}
		b, err := d.readInclude(d.pos(pn), path)
		if err != nil {
			d.errorf(pn, "include %q: cannot read %s: %v (paths are relative to the including file)", pn.Value, path, err)
			continue
		}
		d.files = append(d.files, path)
		sub := d.tree(path, b, len(d.files), append(append([]string{}, chain...), path))
		if sub == nil {
			continue
		}
		if merged == nil {
			merged = sub
		} else {
			mergeGates(merged, sub, false)
		}
	}
	if merged == nil {
		return root
	}
	mergeGates(merged, root, replace != nil && replace.Value == "true")
	return merged
}

// takeHeader removes a file's header comment from its tree and returns
// it: the comment block it starts with, which yaml.v3 keeps on the
// document when a blank line follows it and on the first key otherwise.
func takeHeader(doc *yaml.Node, data []byte) string {
	if h := doc.HeadComment; h != "" {
		doc.HeadComment = ""
		return h
	}
	if !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("#")) {
		return ""
	}
	root := doc.Content[0]
	if len(root.Content) == 0 {
		return ""
	}
	h := root.Content[0].HeadComment
	root.Content[0].HeadComment = ""
	return h
}

// replaceGates removes replace_gates from a file's (or a profile's)
// mapping and returns its value, or nil when it is absent or invalid.
func (d *decoder) replaceGates(m *yaml.Node) *yaml.Node {
	v := removeKey(m, "replace_gates")
	if v == nil {
		return nil
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
		d.errorf(v, "replace_gates: expected true or false, got %s", describe(v))
		return nil
	}
	return v
}

// mergeGates merges src over dst like merge, except for gates: src's
// gates are added to dst's, a gate named like one of dst's taking its
// place, so a scenario that includes a shared one keeps the shared gates
// without repeating them. With replace, src's gates replace dst's whole.
func mergeGates(dst, src *yaml.Node, replace bool) {
	dg, sg := resolveAlias(mapValue(dst, "gates")), resolveAlias(mapValue(src, "gates"))
	if replace || dg == nil || sg == nil || dg.Kind != yaml.SequenceNode || sg.Kind != yaml.SequenceNode {
		merge(dst, src)
		return
	}
	combined := &yaml.Node{Kind: yaml.SequenceNode, Tag: sg.Tag, Style: sg.Style, Line: sg.Line, Column: sg.Column}
	combined.Content = append(combined.Content, dg.Content...)
	at := map[string]int{}
	for i, g := range dg.Content {
		if name := gateName(g); name != "" {
			if _, dup := at[name]; !dup {
				at[name] = i
			}
		}
	}
	replaced := map[string]bool{}
	for _, g := range sg.Content {
		name := gateName(g)
		if i, ok := at[name]; ok && !replaced[name] {
			combined.Content[i] = g
			replaced[name] = true
			continue
		}
		// A name given twice in src stays twice: the duplicate is then
		// reported, never silently dropped.
		combined.Content = append(combined.Content, g)
	}
	rest := *src
	rest.Content = nil
	for i := 0; i+1 < len(src.Content); i += 2 {
		if src.Content[i].Value != "gates" {
			rest.Content = append(rest.Content, src.Content[i], src.Content[i+1])
		}
	}
	merge(dst, &rest)
	for i := 0; i+1 < len(dst.Content); i += 2 {
		if dst.Content[i].Value == "gates" {
			dst.Content[i+1] = combined
		}
	}
}

func gateName(g *yaml.Node) string {
	n := resolveAlias(mapValue(resolveAlias(g), "name"))
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// readInclude reads an included file by the rules of every file a
// scenario names (openNamed), capped as a scenario file.
func (d *decoder) readInclude(at Pos, path string) ([]byte, error) {
	f, err := d.openNamed(at, path, "scenario include", MaxFileBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

func markFile(n *yaml.Node, idx int) {
	n.Column |= idx << fileShift
	for _, c := range n.Content {
		markFile(c, idx)
	}
}

// removeKey deletes key from a mapping and returns its value.
func removeKey(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return resolveAlias(v)
		}
	}
	return nil
}

// merge merges src over dst in place: mappings merge key by key (deeply),
// anything else in src replaces what dst had.
func merge(dst, src *yaml.Node) {
	if dst.Kind != yaml.MappingNode || src.Kind != yaml.MappingNode {
		*dst = *src
		return
	}
	for i := 0; i+1 < len(src.Content); i += 2 {
		k, v := src.Content[i], src.Content[i+1]
		found := false
		for j := 0; j+1 < len(dst.Content); j += 2 {
			if dst.Content[j].Value == k.Value {
				found = true
				dv := dst.Content[j+1]
				if dv.Kind == yaml.MappingNode && resolveAlias(v).Kind == yaml.MappingNode {
					merge(dv, resolveAlias(v))
				} else {
					dst.Content[j+1] = v
				}
				break
			}
		}
		if !found {
			dst.Content = append(dst.Content, k, v)
		}
	}
}

// applyProfile merges profiles[name] over the scenario; the profiles key
// itself never reaches the effective scenario.
func applyProfile(d *decoder, root *yaml.Node, name string) {
	profiles := removeKey(root, "profiles")
	checkProfileKeys(d, profiles, name)
	if name == "" {
		return
	}
	// A profile that is not there is a mistake in the flag, wherever the
	// profiles are declared (an included file): the error is the flag's.
	flag := Pos{Set: "--profile " + name}
	if profiles == nil || profiles.Kind != yaml.MappingNode {
		d.errs.add(flag, "the scenario has no profiles (add profiles: {%s: {...}} to %s)", name, d.file)
		return
	}
	var names []string
	for i := 0; i+1 < len(profiles.Content); i += 2 {
		k, v := profiles.Content[i], resolveAlias(profiles.Content[i+1])
		names = append(names, k.Value)
		if k.Value != name {
			continue
		}
		if v.Kind != yaml.MappingNode {
			notAProfile(d, name, v)
			return
		}
		replace := d.replaceGates(v)
		mergeGates(root, v, replace != nil && replace.Value == "true")
		return
	}
	d.errs.add(flag, "no such profile%s (profiles: %s, at %s)", suggest(name, names), strings.Join(names, ", "), d.pos(profiles))
}

// notAProfile reports profile name's body v, which is not a mapping.
func notAProfile(d *decoder, name string, v *yaml.Node) {
	d.errorf(v, "profiles.%s: expected a mapping of scenario keys, got %s", name, describe(v))
}

// checkProfileKeys reports unknown keys in the profiles that are not
// selected, so a typo there fails now, not on the day the profile is used.
// Only key names are checked: values may still hold references, and the
// selected profile is checked in full after merging.
//
// A profiles value that is not a mapping, or a profile that is not one,
// could never be selected: that fails now as well.
func checkProfileKeys(d *decoder, profiles *yaml.Node, selected string) {
	if profiles == nil || profiles.ShortTag() == "!!null" {
		return
	}
	if profiles.Kind != yaml.MappingNode {
		d.errorf(profiles, "profiles: expected a mapping of profile names to scenario keys, e.g. profiles: {ci: {vars: {n: 8}}}, got %s", describe(profiles))
		return
	}
	kd := &decoder{file: d.file, files: d.files, sets: d.sets, errs: d.errs, keysOnly: true}
	for i := 0; i+1 < len(profiles.Content); i += 2 {
		k, v := profiles.Content[i], resolveAlias(profiles.Content[i+1])
		if k.Value == selected {
			continue // checked in full once merged (applyProfile)
		}
		if v.Kind != yaml.MappingNode {
			notAProfile(d, k.Value, v)
			continue
		}
		var doc document
		kd.decode(v, reflectValue(&doc), "profiles."+k.Value)
	}
}
