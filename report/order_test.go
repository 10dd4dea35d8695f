package report

import (
	"slices"
	"testing"
)

func TestRunAndPhaseNames(t *testing.T) {
	r := &Report{RunOrder: []string{"b", "missing", "a", "b"}, Runs: map[string]*Run{"a": {}, "b": {}, "z": {}, "c": {}, "nil": nil}}
	if got, want := r.RunNames(), []string{"b", "a", "c", "z"}; !slices.Equal(got, want) {
		t.Errorf("RunNames = %v, want %v (order first, then the rest by name, no missing or nil runs)", got, want)
	}
	run := &Run{PhaseOrder: []string{"decode", "prefill"}, Phases: map[string]*Phase{"prefill": {}, "decode": {}, "extra": {}}}
	if got, want := run.PhaseNames(), []string{"decode", "prefill", "extra"}; !slices.Equal(got, want) {
		t.Errorf("PhaseNames = %v, want %v", got, want)
	}
	if (*Report)(nil).RunNames() != nil || (*Run)(nil).PhaseNames() != nil {
		t.Error("nil report or run has names")
	}
}

func TestPointKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    map[string]*Point
		want []string
	}{
		{name: "prompt sizes by size, not by text", m: map[string]*Point{"1024": {TargetPromptTokens: 1024}, "256": {TargetPromptTokens: 256}, "4096": {TargetPromptTokens: 4096}},
			want: []string{"256", "1024", "4096"}},
		{name: "sizes without targets read as numbers", m: map[string]*Point{"512": {}, "64": {}, "x": {}}, want: []string{"64", "512", "x"}},
		{name: "variants in run order, unknown ones after", m: map[string]*Point{VariantSmallSuffix: {}, "long_suffix": {}, VariantFresh: {}, VariantIdentical: {}},
			want: []string{VariantFresh, VariantIdentical, VariantSmallSuffix, "long_suffix"}},
		{name: "nil points left out", m: map[string]*Point{VariantFresh: {}, VariantIdentical: nil}, want: []string{VariantFresh}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PointKeys(tc.m); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
