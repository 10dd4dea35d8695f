package report

import (
	"slices"
	"strings"
	"testing"
)

func TestIdentityDiff(t *testing.T) {
	base := ScenarioInfo{SHA256: "aaaa", Identity: map[string]string{
		"name": "1", "phases.prefill.prompt_tokens[0]": "2", "phases.prefill.prompt_tokens[1]": "3",
		"phases.decode.max_tokens": "4", `targets["my.box"].model`: "5", "phases (order)": "6",
	}}
	with := func(sha string, edit func(m map[string]string)) ScenarioInfo {
		m := map[string]string{}
		for k, v := range base.Identity {
			m[k] = v
		}
		edit(m)
		return ScenarioInfo{SHA256: sha, Identity: m}
	}
	for _, tc := range []struct {
		name string
		new  ScenarioInfo
		want []string
	}{
		{name: "same hash", new: with("aaaa", func(map[string]string) {}), want: nil},
		{name: "a value", new: with("bbbb", func(m map[string]string) { m["phases.prefill.prompt_tokens[1]"] = "x" }),
			want: []string{"phases.prefill.prompt_tokens[1]"}},
		{name: "a quoted key", new: with("bbbb", func(m map[string]string) { m[`targets["my.box"].model`] = "x" }),
			want: []string{`targets["my.box"].model`}},
		{name: "a phase added is one entry", new: with("bbbb", func(m map[string]string) {
			m["phases.again.kind"], m["phases.again.max_tokens"], m["phases (order)"] = "7", "8", "9"
		}), want: []string{"phases (order)", "phases.again (only in new)"}},
		{name: "a phase removed", new: with("bbbb", func(m map[string]string) { delete(m, "phases.decode.max_tokens") }),
			want: []string{"phases.decode (only in old)"}},
		{name: "an empty phase given a key", new: with("bbbb", func(m map[string]string) {
			m["phases.warmup"] = "e"
		}), want: []string{"phases.warmup (only in new)"}},
		{name: "a key in an empty phase", new: with("bbbb", func(m map[string]string) {
			delete(m, "phases.decode.max_tokens")
			m["phases.decode"] = "e"
		}), want: []string{"phases.decode.max_tokens (only in old)"}},
		{name: "a list shortened", new: with("bbbb", func(m map[string]string) { delete(m, "phases.prefill.prompt_tokens[1]") }),
			want: []string{"phases.prefill.prompt_tokens[1] (only in old)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IdentityDiff(base, tc.new, "old", "new"); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("a report without identity", func(t *testing.T) {
		got := IdentityDiff(ScenarioInfo{SHA256: "cccc"}, base, "the baseline", "the run")
		if len(got) != 1 || !strings.Contains(got[0], "older tollgate") {
			t.Errorf("got %q", got)
		}
	})
}
