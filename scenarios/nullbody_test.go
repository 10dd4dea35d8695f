package scenarios

import (
	"errors"
	"testing"
)

// A null where a target or phase body belongs, and a bad item of a list,
// are reported at that body or item (or at the --set that wrote it), and
// alone: a null target was kept as a default openai one, so the error named
// the phases that used it, and the schema's own check (which runs only when
// nothing else is wrong) never said why.
func TestNullBodiesAndItemsAreNamedWhereWritten(t *testing.T) {
	const agent = "name: s\nphases:\n  a:\n    kind: agent\n    tools: "
	const seam = "name: s\ntargets:\n  route:\n    kind: seam\n    route: [head, tail]\n    transport: relay\n    cache: stateless\n    output_tokens: [a]\nphases:\n  steady: {kind: decode, tokens: 1}\n"
	for _, tc := range []struct {
		name, file string
		sets       []string
		want       string // the one error's position and message
	}{
		{name: "null target", file: "name: t\ntargets:\n  x:\nphases:\n  decode: {max_tokens: 1, prompt_tokens: 1, tokens: 1}\n",
			want: "s.yaml:3:5: targets.x: expected a mapping, got null"},
		{name: "null phase", file: "name: t\nphases:\n  decode:\n",
			want: "s.yaml:3:10: phases.decode: expected a mapping, got null"},
		{name: "null target from --set", file: seam, sets: []string{"targets.x=~"},
			want: "--set targets.x=~: targets.x: expected a mapping, got null"},
		{name: "no phases from --set", file: seam, sets: []string{"phases={}"},
			want: "--set phases={}: no phases: add a phases mapping, e.g. phases: {prefill: {}, decode: {}}"},
		{name: "a route item", file: "name: s\ntargets:\n  route:\n    kind: seam\n    route: [head, head]\n    transport: relay\n    cache: stateless\nphases:\n  prefill: {}\n",
			want: `s.yaml:5:19: targets.route.route: node names must be non-empty and unique, got "head" twice or empty`},
		{name: "a route item from --set", file: seam, sets: []string{"targets.route.route.0="},
			want: `--set targets.route.route.0=: targets.route.route: node names must be non-empty and unique, got "" twice or empty`},
		// A list item that is not a mapping decodes to a zero struct whose
		// checks (a tool's empty name) then failed with no position at all.
		{name: "a tool that is a string", file: agent + `[""]` + "\n",
			want: `s.yaml:5:13: phases.a.tools[0]: expected a mapping, got string ""`},
		{name: "a tool that is a list", file: agent + "[[]]\n",
			want: `s.yaml:5:13: phases.a.tools[0]: expected a mapping, got a list`},
		{name: "a tool that is a number", file: agent + "[1]\n",
			want: `s.yaml:5:13: phases.a.tools[0]: expected a mapping, got integer 1`},
		{name: "a tool that is null", file: agent + "[~]\n",
			want: `s.yaml:5:13: phases.a.tools[0]: expected a mapping {name, parameters}`},
		{name: "a tool that is a string from --set", file: agent + "[{name: search}]\n", sets: []string{"phases.a.tools.0=x"},
			want: `--set phases.a.tools.0=x: phases.a.tools[0]: expected a mapping, got string "x"`},
		{name: "a gate that is a string", file: "name: t\nphases:\n  decode: {}\ngates: [x]\n",
			want: `s.yaml:4:9: gates[0]: expected a mapping, got string "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.file), Options{Sets: tc.sets, LookupEnv: func(string) (string, bool) { return "", false }})
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error %v, want an ErrorList", err)
			}
			if len(list) != 1 || list[0].Error() != tc.want {
				t.Errorf("got:\n%v\nwant the one error:\n%s", err, tc.want)
			}
		})
	}
}
