package scenarios

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/internal/safefile"
)

// Meta records where a decoded mapping and each of its keys came from, so
// semantic checks after decoding still point at the right line and column.
type Meta struct {
	Pos    Pos            `json:"-" yaml:"-"`
	Keys   map[string]Pos `json:"-" yaml:"-"`
	Values map[string]Pos `json:"-" yaml:"-"`
	// Items are the positions of the items of each list value, so a check
	// of one item points at it (or at the --set that wrote it).
	Items map[string][]Pos `json:"-" yaml:"-"`
}

// ItemAt returns the position of item i of the list under key, or that of
// the key's value when the item is not known.
func (m *Meta) ItemAt(key string, i int) Pos {
	if ps := m.Items[key]; i >= 0 && i < len(ps) {
		return ps[i]
	}
	return m.At(key)
}

// Has reports whether the key was written in the scenario.
func (m *Meta) Has(key string) bool { _, ok := m.Keys[key]; return ok }

// At returns the position of the value of key, or of the mapping when absent.
func (m *Meta) At(key string) Pos {
	if p, ok := m.Values[key]; ok {
		return p
	}
	return m.Pos
}

var metaType = reflect.TypeOf(Meta{})

// nodeDecoder is implemented by types with a YAML form of their own
// (durations, sizes, costs that are a number or a per-phase mapping).
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string)
}

// decoder turns yaml.Node trees into typed structs strictly: unknown keys,
// duplicate keys and wrong types are all errors with positions, and decoding
// goes on after an error so that every problem is reported at once.
type decoder struct {
	file string
	// files are the included files; a node from files[i] carries i+1 in
	// the bits of Column above fileShift, which survives cloning.
	files []string
	sets  []string // --var and --set flags; nodes they produced carry Line = -(index+1)
	errs  *errs
	// roots are where the files the scenario names may resolve to
	// (fileRoots).
	roots []string
	// keysOnly keeps only unknown-key errors: for profiles that are not
	// selected, whose values are checked only once one is.
	keysOnly bool
	// nullBodies are the keyed mappings (targets, phases) an entry of
	// which was null and refused, so "no targets" is not said as well.
	nullBodies map[string]bool
	// header is the scenario file's header comment (takeHeader), which
	// heads the effective scenario.
	header string
}

const fileShift = 20

func (d *decoder) pos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: d.file}
	}
	if n.Line < 0 && -n.Line-1 < len(d.sets) {
		return Pos{Set: d.sets[-n.Line-1]}
	}
	file := d.file
	if i := n.Column >> fileShift; i > 0 && i <= len(d.files) {
		file = d.files[i-1]
	}
	return Pos{File: file, Line: n.Line, Col: n.Column & (1<<fileShift - 1)}
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	if d.keysOnly {
		return
	}
	d.errs.add(d.pos(n), format, args...)
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			// A long value is cut: it may be a whole file that was not
			// YAML (an include of a text file), which an error must not copy.
			if utf8.RuneCountInString(n.Value) > safefile.MaxExcerpt {
				return "string " + safefile.Excerpt(n.Value)
			}
			return fmt.Sprintf("string %q", n.Value)
		case "!!int":
			return "integer " + n.Value
		case "!!float":
			return "number " + n.Value
		case "!!bool":
			return "boolean " + n.Value
		}
		return n.Value
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	n = resolveAlias(n)
	if v.CanAddr() {
		if nd, ok := v.Addr().Interface().(nodeDecoder); ok {
			nd.decodeNode(d, n, path)
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if n.ShortTag() == "!!null" {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		d.decodeSlice(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.errorf(n, "%s: %v", path, err)
			return
		}
		v.Set(reflect.ValueOf(&x).Elem())
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" || n.ShortTag() == "!!bool" {
			d.errorf(n, "%s: expected a string, got %s", path, describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			d.errorf(n, "%s: expected true or false, got %s", path, describe(n))
			return
		}
		b, _ := strconv.ParseBool(n.Value)
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		i, ok := d.intValue(n, path)
		if ok {
			v.SetInt(i)
		}
	case reflect.Float64:
		f, ok := d.floatValue(n, path)
		if ok {
			v.SetFloat(f)
		}
	default:
		panic(fmt.Sprintf("scenarios: no decoder for %s", v.Type()))
	}
}

func (d *decoder) intValue(n *yaml.Node, path string) (int64, bool) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" {
		// JSON Schema, and so the editor, counts 1e3 and 2.0 as integers.
		var f float64
		if err := n.Decode(&f); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), true
		}
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.errorf(n, "%s: expected an integer, got %s%s", path, describe(n), numberHint(n))
		return 0, false
	}
	var i int64
	if err := n.Decode(&i); err != nil {
		d.errorf(n, "%s: %q is not a valid integer", path, n.Value)
		return 0, false
	}
	return i, true
}

func (d *decoder) floatValue(n *yaml.Node, path string) (float64, bool) {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		d.errorf(n, "%s: expected a number, got %s%s", path, describe(n), numberHint(n))
		return 0, false
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.errorf(n, "%s: %q is not a finite number", path, n.Value)
		return 0, false
	}
	return f, true
}

type fieldInfo struct {
	index []int
	keyed bool
}

// fields lists the YAML keys of a struct type, following ",inline" embeds.
func fields(t reflect.Type) (map[string]fieldInfo, []string, []int) {
	out := map[string]fieldInfo{}
	var order []string
	var meta []int
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			idx := append(append([]int{}, prefix...), i)
			if f.Type == metaType {
				if meta == nil {
					meta = idx
				}
				continue
			}
			tag := f.Tag.Get("yaml")
			if tag == "-" || !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if opts == "inline" {
				walk(f.Type, idx)
				continue
			}
			if name == "" {
				continue
			}
			out[name] = fieldInfo{index: idx, keyed: opts == "keyed"}
			order = append(order, name)
		}
	}
	walk(t, nil)
	return out, order, meta
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	known, order, metaIdx := fields(v.Type())
	var meta *Meta
	if metaIdx != nil {
		// Set even when the node is not a mapping, so a later check of the
		// struct's (zero) values points at the node, where sorted folds it
		// into the decoding error there.
		meta = v.FieldByIndex(metaIdx).Addr().Interface().(*Meta)
		meta.Pos = d.pos(n)
	}
	if n.Kind != yaml.MappingNode {
		if n.ShortTag() == "!!null" {
			return
		}
		d.errorf(n, "%s: expected a mapping, got %s", orRoot(path), describe(n))
		return
	}
	if meta != nil {
		meta.Keys = map[string]Pos{}
		meta.Values = map[string]Pos{}
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if prev, dup := seen[k.Value]; dup {
			d.errorf(k, "%s: duplicate key %q (first at line %d)", orRoot(path), k.Value, prev.Line)
			continue
		}
		seen[k.Value] = k
		fi, ok := known[k.Value]
		if !ok {
			d.errs.add(d.pos(k), "%s: unknown field %q%s", orRoot(path), k.Value, suggest(k.Value, order))
			continue
		}
		if meta != nil {
			meta.Keys[k.Value] = d.pos(k)
			body := resolveAlias(val)
			meta.Values[k.Value] = d.pos(body)
			if body.Kind == yaml.SequenceNode {
				ps := make([]Pos, len(body.Content))
				for i, c := range body.Content {
					ps[i] = d.pos(resolveAlias(c))
				}
				if meta.Items == nil {
					meta.Items = map[string][]Pos{}
				}
				meta.Items[k.Value] = ps
			}
		}
		fv := v.FieldByIndex(fi.index)
		if fi.keyed {
			d.decodeKeyed(val, fv, joinPath(path, k.Value))
			continue
		}
		d.decode(val, fv, joinPath(path, k.Value))
	}
}

func orRoot(path string) string {
	if path == "" {
		return "scenario"
	}
	return path
}

// decodeKeyed decodes a mapping of name → struct into a slice of *struct,
// keeping declaration order and setting each element's Name.
func (d *decoder) decodeKeyed(n *yaml.Node, v reflect.Value, path string) {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		if n.ShortTag() == "!!null" {
			return
		}
		d.errorf(n, "%s: expected a mapping of names, got %s", path, describe(n))
		return
	}
	elemT := v.Type().Elem() // *T
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			d.errorf(k, "%s: duplicate name %q", path, k.Value)
			continue
		}
		seen[k.Value] = true
		switch {
		case strings.TrimSpace(k.Value) == "":
			d.errorf(k, "%s: a name must not be empty", path)
		case path == "targets" && strings.Contains(k.Value, "/"):
			// Run names join the target name and matrix values with /.
			d.errorf(k, "%s: name %q must not contain / (run names join target and matrix values with /)", path, k.Value)
		}
		if body := resolveAlias(val); body.ShortTag() == "!!null" {
			// The schema wants a mapping. Said here, at the body (or the
			// --set that wrote it), and the entry left out: a null target
			// kept as a default one made the errors name the phases that
			// use it, and the schema's own check runs only when nothing
			// else is wrong.
			d.errorf(body, "%s: expected a mapping, got %s", joinPath(path, k.Value), describe(body))
			if d.nullBodies == nil {
				d.nullBodies = map[string]bool{}
			}
			d.nullBodies[path] = true
			continue
		}
		e := reflect.New(elemT.Elem())
		e.Elem().FieldByName("Name").SetString(k.Value)
		d.decode(val, e, joinPath(path, k.Value))
		if m, ok := e.Interface().(interface{ meta() *Meta }); ok && m.meta().Keys == nil {
			// A body that is not a mapping still needs a position for
			// later checks.
			m.meta().Pos = d.pos(k)
		}
		v.Set(reflect.Append(v, e))
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		if n.ShortTag() == "!!null" {
			return
		}
		d.errorf(n, "%s: expected a list, got %s", path, describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
	}
	v.Set(s)
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		if n.ShortTag() == "!!null" {
			return
		}
		d.errorf(n, "%s: expected a mapping, got %s", path, describe(n))
		return
	}
	m := reflect.MakeMap(v.Type())
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		ev := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, ev, joinPath(path, k.Value))
		m.SetMapIndex(reflect.ValueOf(k.Value), ev)
	}
	v.Set(m)
}
