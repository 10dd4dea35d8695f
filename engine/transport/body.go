package transport

import (
	"encoding/json"
	"slices"
	"strconv"
)

// MarshalBody is json.Marshal(body), byte for byte, for the request bodies
// the Wires build (MergeBody's maps): encoding/json walks a map by
// reflection, a reflect.Value and an allocation per entry, about 60 per
// chat request. Nested maps, strings, bools, ints and nil are written
// here; any other value (messages, tools, floats) by json.Marshal itself.
func MarshalBody(body map[string]any) ([]byte, error) {
	return appendJSON(make([]byte, 0, 1024), body)
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
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
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
