package scenarios

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

// Plain scalars mean what they mean in YAML 1.2, where yaml.v3 alone
// would read some of them as YAML 1.1 does.
func TestPlainScalarsResolveAsYAML12(t *testing.T) {
	tests := []struct {
		name, in, tag, value string
	}{
		{name: "digit separators are a string", in: "100_000_000", tag: "!!str", value: "100_000_000"},
		{name: "binary is a string", in: "0b101", tag: "!!str", value: "0b101"},
		{name: "a leading zero is decimal", in: "017", tag: "!!int", value: "17"},
		{name: "a signed leading zero", in: "-007", tag: "!!int", value: "-7"},
		{name: "zeros", in: "000", tag: "!!int", value: "0"},
		{name: "octal", in: "0o17", tag: "!!int", value: "0o17"},
		{name: "hex", in: "0x1F", tag: "!!int", value: "0x1F"},
		{name: "upper-case hex prefix is a string", in: "0X1F", tag: "!!str", value: "0X1F"},
		{name: "signed hex is a string", in: "-0x1F", tag: "!!str", value: "-0x1F"},
		{name: "a date is a string", in: "2024-01-02", tag: "!!str", value: "2024-01-02"},
		{name: "float", in: ".5", tag: "!!float", value: ".5"},
		{name: "exponent", in: "1e3", tag: "!!float", value: "1e3"},
		{name: "infinity", in: "+.inf", tag: "!!float", value: "+.inf"},
		{name: "yes is a string", in: "yes", tag: "!!str", value: "yes"},
		{name: "True is a boolean", in: "True", tag: "!!bool", value: "True"},
		{name: "tilde is null", in: "~", tag: "!!null", value: "~"},
		{name: "quoted stays a string", in: `"017"`, tag: "!!str", value: "017"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte("k: "+tc.in), &doc); err != nil {
				t.Fatal(err)
			}
			resolveTree(&doc)
			n := doc.Content[0].Content[1]
			if n.ShortTag() != tc.tag || n.Value != tc.value {
				t.Errorf("%s: tag %s value %q, want %s %q", tc.in, n.ShortTag(), n.Value, tc.tag, tc.value)
			}
		})
	}
}
