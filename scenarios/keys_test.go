package scenarios

import (
	"strings"
	"testing"
)

// An unknown phase key is suggested from the keys of the phase's kind: a
// qualified key (request_rate) from the key it qualifies, and never a key
// the kind does not take.
func TestPhaseKeySuggestions(t *testing.T) {
	for _, tc := range []struct {
		name, phase, want, never string
		key                      string // the phase's name; p when empty
	}{
		{name: "a qualified key", phase: "{kind: load, request_rate: 4, duration: 2s}", want: `phases.p: unknown field "request_rate" (did you mean "rate"?)`},
		{name: "a qualifier after the key", phase: "{kind: load, concurrency_max: 4, requests: 2}", want: `unknown field "concurrency_max" (did you mean "concurrency"?)`},
		{name: "a typo", phase: "{kind: decode, max_token: 4}", want: `unknown field "max_token" (did you mean "max_tokens"?)`},
		{name: "not a key of another kind", phase: "{kind: decode, concurency: 2}", want: `unknown field "concurency"`, never: "did you mean"},
		{name: "the kind from the name", key: "decode", phase: "{repat: 2}", want: `phases.decode: unknown field "repat" (did you mean "repeat"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.key
			if name == "" {
				name = "p"
			}
			_, err := Parse("s.yaml", []byte("phases:\n  "+name+": "+tc.phase+"\n"), Options{LookupEnv: noEnv})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("errors:\n%v\nwant one containing %q", err, tc.want)
			}
			if tc.never != "" && strings.Contains(err.Error(), tc.never) {
				t.Errorf("errors:\n%v\nsay %q", err, tc.never)
			}
		})
	}
}
