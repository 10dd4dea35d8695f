package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// A scenario's identity is what it measures: the effective scenario
// (includes, profile, vars and --set applied, before matrix expansion)
// without what only judges, describes or addresses it. Two reports whose
// identities match measured the same thing, so one may serve as the
// other's baseline, and a saved report may be judged again by an edited
// scenario whose identity still matches.
//
// Left out:
//   - gates: thresholds change without making old reports incomparable;
//   - description, at the top and in every target and phase;
//   - vars: a var's value counts where it is used (a model name
//     interpolated into a target), not in the vars block, so a var read
//     only by gates changes nothing;
//   - where a target is and how to reach it: base_url (except an empty
//     one or "embedded", the embedded simulator), headers, secret_headers,
//     api_key_env and ca_file: the same server behind another address,
//     session header or key is the same measurement;
//   - $schema, an editor hint.

// identityTopLevel are the top-level keys left out of the identity.
var identityTopLevel = []string{"gates", "description", "vars", "$schema"}

// identityTargetKeys are the keys of every target left out of the identity.
var identityTargetKeys = []string{"description", "base_url", "headers", "secret_headers", "api_key_env", "ca_file"}

// maxIdentityList is the longest list whose elements get a field each;
// a longer one (a list of expected tokens, of prompts) is one field.
const maxIdentityList = 32

// identity returns the identity document of the effective scenario root
// (see above), its SHA-256 and the hash of each of its fields.
func identity(root *yaml.Node) (sum string, fields map[string]string, err error) {
	measured := cloneNode(root)
	for _, k := range identityTopLevel {
		removeKey(measured, k)
	}
	var doc any
	if err := measured.Decode(&doc); err != nil {
		return "", nil, fmt.Errorf("decoding the scenario's identity: %w", err)
	}
	doc = normalizeIdentity(doc)
	if m, ok := doc.(map[string]any); ok {
		for _, section := range []string{"targets", "phases"} {
			entries, _ := m[section].(map[string]any)
			for _, e := range entries {
				entry, ok := e.(map[string]any)
				if !ok {
					continue
				}
				delete(entry, "description")
				if section != "targets" {
					continue
				}
				for _, k := range identityTargetKeys {
					if b, ok := entry[k].(string); k == "base_url" && ok && (b == "" || b == "embedded") {
						continue // the embedded simulator: what is measured
					}
					delete(entry, k)
				}
			}
		}
	}
	// Phases run in the order written, which a map forgets: the order
	// is a field of its own.
	var order []any
	if ph := resolveAlias(mapValue(measured, "phases")); ph != nil && ph.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(ph.Content); i += 2 {
			order = append(order, ph.Content[i].Value)
		}
	}
	var b strings.Builder
	canonical(&b, doc)
	b.WriteString("\nphase order:")
	canonical(&b, order)
	h := sha256.Sum256([]byte(b.String()))
	fields = map[string]string{}
	flatten(fields, "", doc)
	if len(order) > 1 {
		fields[phaseOrderField] = leafHash(order)
	}
	return hex.EncodeToString(h[:]), fields, nil
}

// normalizeIdentity turns the maps YAML decodes with non-string keys into string
// maps (a key 1024 becomes "1024"), so every map of the document is one type.
func normalizeIdentity(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeIdentity(e)
		}
		return x
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalizeIdentity(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = normalizeIdentity(e)
		}
		return x
	}
	return v
}

// canonical writes v in one spelling: map keys sorted, every scalar with
// its type, so equal documents and only equal documents write the same.
// (JSON would do, but cannot carry YAML's .inf and .nan.)
func canonical(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			canonical(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			canonical(b, e)
		}
		b.WriteByte(']')
	case string:
		b.WriteString(strconv.Quote(x))
	case nil:
		b.WriteString("null")
	case float64:
		switch {
		case math.IsInf(x, 1):
			b.WriteString("float:+inf")
		case math.IsInf(x, -1):
			b.WriteString("float:-inf")
		case math.IsNaN(x):
			b.WriteString("float:nan")
		default:
			b.WriteString("float:" + strconv.FormatFloat(x, 'g', -1, 64))
		}
	case time.Time:
		b.WriteString("time:" + x.UTC().Format(time.RFC3339Nano))
	default:
		fmt.Fprintf(b, "%T:%v", x, x)
	}
}

// flatten records the hash of every leaf of v under its path, written as
// a gate would read it (phases.decode.max_tokens, phases.prefill.prompt_tokens[1],
// targets["my-server"].model). An empty map or list is a leaf, so a phase
// with no keys still has a field; a list longer than maxIdentityList is one.
func flatten(out map[string]string, path string, v any) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			for k, e := range x {
				flatten(out, joinIdentity(path, k), e)
			}
			return
		}
	case []any:
		if len(x) > 0 && len(x) <= maxIdentityList {
			for i, e := range x {
				flatten(out, path+"["+strconv.Itoa(i)+"]", e)
			}
			return
		}
	}
	if path == "" {
		path = "."
	}
	out[path] = leafHash(v)
}

// phaseOrderField is the field of the phases' order.
const phaseOrderField = "phases (order)"

// leafHash is the hash of one field: 16 hex digits of its SHA-256.
func leafHash(v any) string {
	var b strings.Builder
	canonical(&b, v)
	h := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(h[:8])
}

func joinIdentity(path, key string) string {
	if !isIdentKey(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func isIdentKey(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}
