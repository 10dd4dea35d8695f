package transport

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/engine/measure"
)

// MarshalBody is json.Marshal(body), byte for byte, for the request bodies
// the Wires build (MergeBody's maps): encoding/json walks a map by
// reflection, a reflect.Value and an allocation per entry, about 60 per
// chat request. Nested maps, strings, bools, ints and nil are written
// here, and chat messages without tool calls; any other value (tools, tool
// calls, floats) by json.Marshal itself.
func MarshalBody(body map[string]any) ([]byte, error) {
	size := 512
	for _, k := range [...]string{"messages", "prompt"} {
		size += sizeHint(body[k])
	}
	return appendJSON(make([]byte, 0, size), body)
}

// sizeHint is about the bytes a prompt value takes, which is most of a
// body: with room for it, the buffer is not grown (and copied) on the way.
func sizeHint(v any) int {
	switch v := v.(type) {
	case []measure.Message:
		n := 0
		for i := range v {
			n += len(v[i].Content) + len(v[i].Role) + 32
		}
		return n
	case string:
		return len(v)
	}
	return 0
}

// A BodyField is one top-level field of a request body.
type BodyField struct {
	Key   string
	Value any
}

// BuildBody is the JSON body of a Wire's request: its defaults, then the
// target's body fields (extra) and the request's (extraBody) merged in as
// MergeBody does, then the request's own fields set, which replace any of
// the same key. The bytes are MarshalBody's of that map; when there is
// nothing to merge (the usual case) no map is built, the fields being
// written in key order from the two lists.
func BuildBody(defaults []BodyField, extra, extraBody map[string]any, own []BodyField) ([]byte, error) {
	if len(extra) > 0 || len(extraBody) > 0 {
		b := make(map[string]any, len(defaults)+len(extra)+len(extraBody)+len(own))
		for _, f := range defaults {
			b[f.Key] = f.Value
		}
		MergeBody(b, extra)
		MergeBody(b, extraBody)
		for _, f := range own {
			b[f.Key] = f.Value
		}
		return MarshalBody(b)
	}
	var arr [16]BodyField
	fields := append(arr[:0], defaults...)
	// A chat body's fields besides its prompt are about 250 bytes.
	size := 320
	for _, f := range own {
		size += sizeHint(f.Value)
		if i := slices.IndexFunc(fields, func(d BodyField) bool { return d.Key == f.Key }); i >= 0 {
			fields[i] = f
			continue
		}
		fields = append(fields, f)
	}
	// encoding/json's order: the keys' bytes.
	slices.SortFunc(fields, func(a, b BodyField) int { return strings.Compare(a.Key, b.Key) })
	dst := append(make([]byte, 0, size), '{')
	for i, f := range fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, f.Key)
		dst = append(dst, ':')
		var err error
		if dst, err = appendJSON(dst, f.Value); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

func appendJSON(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		// encoding/json's order: the keys' bytes.
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendJSON(dst, v[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case string:
		return appendJSONString(dst, v), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case nil:
		return append(dst, "null"...), nil
	case []measure.Message:
		return appendMessages(dst, v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// appendMessages writes chat messages as encoding/json does (the struct's
// field order, omitempty); one with tool calls goes through json.Marshal.
func appendMessages(dst []byte, msgs []measure.Message) ([]byte, error) {
	if msgs == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i := range msgs {
		m := &msgs[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		if len(m.ToolCalls) > 0 {
			b, err := json.Marshal(m)
			if err != nil {
				return nil, err
			}
			dst = append(dst, b...)
			continue
		}
		dst = append(dst, `{"role":`...)
		dst = appendJSONString(dst, m.Role)
		dst = append(dst, `,"content":`...)
		dst = appendJSONString(dst, m.Content)
		if m.ToolCallID != "" {
			dst = append(dst, `,"tool_call_id":`...)
			dst = appendJSONString(dst, m.ToolCallID)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}

// appendJSONString writes printable ASCII that needs no escape as it is;
// anything else (quotes, backslashes, control bytes, the HTML characters
// encoding/json escapes, non-ASCII) goes through json.Marshal.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
