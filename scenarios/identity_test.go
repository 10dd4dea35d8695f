package scenarios

import (
	"maps"
	"slices"
	"testing"
)

// changedFields lists the paths whose hashes differ, or that only one side has.
func changedFields(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// A baseline is comparable when the scenario measures the same thing: what
// only judges (gates), describes (descriptions), parameterises (the vars
// block) or addresses the server (base_url, headers, api_key_env) does not
// change the identity; what changes a measurement does, and is named.
func TestIdentityIgnoresWhatIsNotMeasured(t *testing.T) {
	const file = "../examples/serving.yaml"
	// The reference points at a live server, with a key and a session
	// header, as a nightly job would.
	ref := []string{"--set", "vars.base_url=http://gpu-a:8000", "--set", "vars.api_key_env=OPENAI_API_KEY"}
	load := func(t *testing.T, args []string) *Scenario {
		t.Helper()
		var o Options
		for i := 0; i+1 < len(args); i += 2 {
			switch args[i] {
			case "--set":
				o.Sets = append(o.Sets, args[i+1])
			case "--var":
				o.Vars = append(o.Vars, args[i+1])
			case "--profile":
				o.Profile = args[i+1]
			}
		}
		sc, err := Load(file, o)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	base := load(t, ref)
	if len(base.SHA256) != 64 || len(base.Identity) == 0 {
		t.Fatalf("identity: sha256 %q, %d fields", base.SHA256, len(base.Identity))
	}
	for _, tc := range []struct {
		name string
		args []string
		// changed are the fields that differ; none: the same identity.
		changed []string
	}{
		{name: "the same file", args: ref},
		{name: "a gate's threshold", args: append(slices.Clone(ref), "--set", "gates.1.expr=runs.server.phases.decode.decode_tokens_per_s.p50 >= 1")},
		{name: "a gate removed", args: append(slices.Clone(ref), "--set", "gates=[]")},
		{name: "the description", args: append(slices.Clone(ref), "--set", "description=another description")},
		{name: "a target's description", args: append(slices.Clone(ref), "--set", "targets.server.description=the big box")},
		{name: "a phase's description", args: append(slices.Clone(ref), "--set", "phases.decode.description=256 tokens")},
		{name: "a var read only by gates (--set)", args: append(slices.Clone(ref), "--set", "vars.min_decode_tokens_per_s=1")},
		{name: "a var read only by gates (--var)", args: append(slices.Clone(ref), "--var", "max_identical_ttft_ratio=0.9")},
		{name: "another base_url", args: []string{"--set", "vars.base_url=http://gpu-b.internal:9000/", "--set", "vars.api_key_env=OPENAI_API_KEY"}},
		{name: "another api_key_env", args: []string{"--set", "vars.base_url=http://gpu-a:8000", "--set", "vars.api_key_env=NIGHTLY_KEY"}},
		{name: "another header value", args: append(slices.Clone(ref), "--set", "vars.session=nightly")},
		{name: "a header added", args: append(slices.Clone(ref), "--set", "targets.server.headers.X-Trace=on")},
		{name: "a phase's size", args: append(slices.Clone(ref), "--set", "phases.decode.max_tokens=128"), changed: []string{"phases.decode.max_tokens"}},
		{name: "one prompt size of a phase", args: append(slices.Clone(ref), "--set", "phases.prefill.prompt_tokens=[512, 1024, 2048, 8192]"),
			changed: []string{"phases.prefill.prompt_tokens[3]"}},
		{name: "a var used by phases", args: append(slices.Clone(ref), "--set", "vars.repetitions=5"),
			changed: []string{"phases.decode.repeat", "phases.prefill.repeat", "phases.prefix_cache.repeat"}},
		{name: "the model", args: append(slices.Clone(ref), "--set", "vars.model=Qwen/Qwen3-8B"), changed: []string{"targets.server.model"}},
		{name: "a live server instead of the simulator", args: []string{"--set", "vars.api_key_env=OPENAI_API_KEY"}, changed: []string{"targets.server.base_url"}},
		{name: "a phase added", args: append(slices.Clone(ref), "--set", "phases.again={kind: decode, prompt_tokens: 512, max_tokens: 8}"),
			changed: []string{"phases (order)", "phases.again.kind", "phases.again.max_tokens", "phases.again.prompt_tokens"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := load(t, tc.args)
			got := changedFields(base.Identity, sc.Identity)
			if !slices.Equal(got, tc.changed) {
				t.Errorf("changed fields %q, want %q", got, tc.changed)
			}
			if same := sc.SHA256 == base.SHA256; same != (len(tc.changed) == 0) {
				t.Errorf("sha256 equal %v, but fields changed %q", same, got)
			}
		})
	}
}

// Phases run in the order written: the same phases in another order are
// another measurement (a cache warmed by one phase serves the next).
func TestIdentityKeepsPhaseOrder(t *testing.T) {
	doc := func(phases string) *Scenario {
		t.Helper()
		sc, err := Parse("order.yaml", []byte("name: order\ntargets:\n  route: {kind: seam, transport: direct, cache: cached, output_tokens: [a, b]}\nphases:\n"+phases), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	a, b := doc("  prefill: {}\n  decode: {}\n"), doc("  decode: {}\n  prefill: {}\n")
	if a.SHA256 == b.SHA256 {
		t.Error("phases in another order have the same identity")
	}
	if got := changedFields(a.Identity, b.Identity); !slices.Equal(got, []string{"phases (order)"}) {
		t.Errorf("changed %q, want the order only (fields %v)", got, slices.Sorted(maps.Keys(a.Identity)))
	}
}
