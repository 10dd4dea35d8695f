package view

import (
	"reflect"

	"github.com/tollgate-dev/tollgate/internal/textsafe"
	"github.com/tollgate-dev/tollgate/report"
)

// Clean makes text that came from a server (an error body, a model id,
// metadata) or a scenario safe for every output: each C0 and C1 control
// character but tab and newline, DEL, the line and paragraph separators,
// the bidirectional overrides and the XML-forbidden noncharacters is written
// as a visible Go-style escape (\x1b, \u2028), and each invalid UTF-8 byte
// as \xNN. What is left is valid UTF-8 that XML 1.0 accepts, that cannot
// drive a terminal, and that a reader still sees.
func Clean(s string) string { return textsafe.Clean(s) }

// Sanitized returns a copy of r in which every string, map keys and the
// strings inside untyped values (metadata, observations, samples) included,
// has been through Clean. Every renderer starts from it, so no output
// carries a raw control byte from the wire. r is not modified; a report
// with nothing to clean still costs one copy, which is small next to
// rendering it.
func Sanitized(r *report.Report) *report.Report {
	if r == nil {
		return nil
	}
	out := cleanValue(reflect.ValueOf(r))
	return out.Interface().(*report.Report)
}

// cleanValue returns a deep copy of v with every string cleaned. Values of
// struct types with unexported fields (time.Time) are copied as they are.
func cleanValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		c := reflect.New(v.Type()).Elem()
		c.SetString(Clean(v.String()))
		return c
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(cleanValue(v.Elem()))
		return p
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type()).Elem()
		c.Set(cleanValue(v.Elem()))
		return c
	case reflect.Slice:
		if v.IsNil() || v.Type().Elem().Kind() == reflect.Uint8 {
			return v // raw bytes are not text a writer shows
		}
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			s.Index(i).Set(cleanValue(v.Index(i)))
		}
		return s
	case reflect.Array:
		a := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			a.Index(i).Set(cleanValue(v.Index(i)))
		}
		return a
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			m.SetMapIndex(cleanValue(it.Key()), cleanValue(it.Value()))
		}
		return m
	case reflect.Struct:
		s := reflect.New(v.Type()).Elem()
		s.Set(v)
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			s.Field(i).Set(cleanValue(v.Field(i)))
		}
		return s
	}
	return v
}
