package scenarios

import (
	"strings"
	"testing"
)

// kind: anthropic takes the openai target's keys, with the chat endpoint
// only; without base_url it is the embedded simulator.
func TestAnthropicTarget(t *testing.T) {
	tests := []struct {
		name, target string
		wantErr      string
		embedded     bool
	}{
		{name: "on the simulator", target: `{kind: anthropic, sim: {reasoning_tokens: 8}}`, embedded: true},
		{name: "a server", target: `{kind: anthropic, base_url: "https://api.example.com", api_key_env: ANTHROPIC_API_KEY}`},
		{name: "no completions endpoint", target: `{kind: anthropic, endpoint: completions}`,
			wantErr: `a.yaml:4:34: targets.c.endpoint: the Messages API (kind: anthropic) has the chat endpoint only, got "completions"`},
		{name: "sim beside a server", target: `{kind: anthropic, base_url: "http://h:1", sim: {seed: 1}}`, wantErr: `targets.c.sim: configures the embedded simulator`},
		{name: "misspelt kind", target: `{kind: antropic}`, wantErr: `(did you mean "anthropic"?)`},
		{name: "negative reasoning", target: `{kind: anthropic, sim: {reasoning_tokens: -1}}`, wantErr: `reasoning_tokens`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The target is on line 4.
			src := "name: a\ntargets:\n\n  c: " + tc.target + "\nphases:\n  decode: {prompt_tokens: 8, max_tokens: 2}\n"
			sc, err := Parse("a.yaml", []byte(src), Options{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tg := sc.Runs[0].Target
			if tg.Kind != KindAnthropic || tg.OpenAI.Endpoint != "chat" || tg.Embedded() != tc.embedded {
				t.Errorf("kind %s endpoint %s embedded %v", tg.Kind, tg.OpenAI.Endpoint, tg.Embedded())
			}
		})
	}
}
