package scenarios

import (
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Editors read scenario files as YAML 1.2 (the core schema): that is how
// the yaml-language-server checks a file against the published JSON
// Schema. yaml.v3 resolves plain scalars with some YAML 1.1 habits on
// top: 100_000 and 0b101 are integers, 017 is octal 15, 2024-01-02 is a
// timestamp. The loader re-resolves every plain scalar by the core schema
// before anything reads it, so a value means the same to the editor, to
// the published schema and to the run.
var (
	coreInt   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	coreOct   = regexp.MustCompile(`^0o[0-7]+$`)
	coreHex   = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
	coreFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	coreInf   = regexp.MustCompile(`^[-+]?\.(inf|Inf|INF)$`)
	coreNaN   = regexp.MustCompile(`^\.(nan|NaN|NAN)$`)
	// underscored looks like a number written with digit separators,
	// which YAML 1.2 reads as a string.
	underscored = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?$`)
)

// coreTag is the tag YAML 1.2's core schema gives a plain scalar.
func coreTag(v string) string {
	switch v {
	case "", "~", "null", "Null", "NULL":
		return "!!null"
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return "!!bool"
	}
	switch {
	case coreInt.MatchString(v), coreOct.MatchString(v), coreHex.MatchString(v):
		return "!!int"
	case coreFloat.MatchString(v), coreInf.MatchString(v), coreNaN.MatchString(v):
		return "!!float"
	}
	return "!!str"
}

// plain reports whether n is a scalar written without quotes, block
// indicators or an explicit tag: the scalars whose type YAML resolves.
func plain(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

// resolveCore sets the tag of one plain scalar by the core schema, and
// rewrites a decimal with leading zeros (017, which yaml.v3 would read as
// octal 15) to the number YAML 1.2 means (17).
func resolveCore(n *yaml.Node) {
	if !plain(n) {
		return
	}
	n.Tag = coreTag(n.Value)
	if n.Tag == "!!int" && coreInt.MatchString(n.Value) {
		sign, digits := "", n.Value
		if digits[0] == '+' || digits[0] == '-' {
			sign, digits = digits[:1], digits[1:]
		}
		if trimmed := strings.TrimLeft(digits, "0"); len(trimmed) < len(digits) {
			if trimmed == "" {
				trimmed = "0"
			}
			if sign == "+" {
				sign = ""
			}
			n.Value = sign + trimmed
		}
	}
}

// resolveTree applies resolveCore to every scalar under n.
func resolveTree(n *yaml.Node) {
	if n == nil {
		return
	}
	resolveCore(n)
	for _, c := range n.Content {
		resolveTree(c)
	}
}

// numberHint explains a string that looks like a number to a YAML 1.1
// reader: digit separators are not digits in YAML 1.2.
func numberHint(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && strings.Contains(n.Value, "_") && underscored.MatchString(n.Value) {
		return " (YAML 1.2, which editors and the schema follow, has no digit separators: write " + strings.ReplaceAll(n.Value, "_", "") + ")"
	}
	return ""
}
