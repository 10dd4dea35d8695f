package report

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// unknownFields adds a violation for every key of doc (a report decoded as
// generic JSON) that no field of the Go type t at that place reads: the
// fields json.Unmarshal would silently drop. The schema closes only some
// of its objects (additionalProperties false); the types close them all.
// Maps take any key, and a value the type leaves open (any, or one that
// decodes itself, such as a histogram) is not looked into.
func unknownFields(t reflect.Type, doc any, path []string, out *[]Violation) {
	if len(*out) >= maxUnknownFields {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := doc.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys) // violations in a stable order
		for _, k := range keys {
			p := append(slices.Clip(path), k)
			ft, known := fields[k]
			if !known {
				*out = append(*out, Violation{Path: pointer(p), Message: fmt.Sprintf("unknown field %q: no tollgate report (schema_version %d) has it", k, SchemaVersion)})
				continue
			}
			unknownFields(ft, m[k], p, out)
		}
	case reflect.Map:
		m, ok := doc.(map[string]any)
		if !ok {
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			unknownFields(t.Elem(), m[k], append(slices.Clip(path), k), out)
		}
	case reflect.Slice, reflect.Array:
		list, ok := doc.([]any)
		if !ok {
			return
		}
		for i, e := range list {
			unknownFields(t.Elem(), e, append(slices.Clip(path), fmt.Sprint(i)), out)
		}
	}
}

// maxUnknownFields bounds the unknown fields reported: a foreign JSON
// file would otherwise list every key it has.
const maxUnknownFields = 50

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// jsonFields are the keys json.Unmarshal reads into a struct of type t,
// with their types; embedded structs without a tag lend theirs.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, shadowed := out[k]; !shadowed {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
