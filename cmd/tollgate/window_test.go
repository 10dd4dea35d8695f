package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The loader's estimate of what a request asks of the embedded
// simulator's context window is the simulator's own: a scenario whose
// requests fit exactly runs without an error, and one token more is
// refused before anything is sent (exit 2, at its key). Every way a phase
// sizes a request is here: synthetic prompts, a prompt with its suffix,
// fixed text, and chat messages with their roles.
func TestContextWindowEdgeRuns(t *testing.T) {
	t.Parallel()
	const fits = `targets:
  sim: {kind: embedded, sim: {max_model_len: 300}}
phases:
  decode: {prompt_tokens: 200, max_tokens: 93}
  prefix_cache: {prompt_tokens: 150, suffix_tokens: 40, max_tokens: 103}
  text: {kind: decode, prompt: {text: "Quick brown fox, jumps!"}, max_tokens: 284}
  r:
    kind: requests
    requests:
      - {prompt: "hello world", max_tokens: 289}
      - {messages: [{role: system, content: "be brief"}, {role: user, content: "hi"}], max_tokens: 285}
`
	dir := t.TempDir()
	write := func(name, body string) string { return writeIn(t, dir, name, body) }
	out := filepath.Join(dir, "r.json")
	if r := tollgate(t, "run", write("fits.yaml", fits), "-q", "--json-out", out); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	phases := readJSONReport(t, out)["runs"].(map[string]any)["sim"].(map[string]any)["phases"].(map[string]any)
	for name, p := range phases {
		if n := p.(map[string]any)["errors"].(map[string]any)["count"].(float64); n != 0 {
			t.Errorf("phase %s: %v errors", name, n)
		}
	}
	for _, over := range []struct{ name, from, to, want string }{
		{name: "synthetic", from: "prompt_tokens: 200", to: "prompt_tokens: 201", want: "phases.decode.prompt_tokens"},
		{name: "suffix", from: "suffix_tokens: 40", to: "suffix_tokens: 41", want: "phases.prefix_cache.prompt_tokens"},
		{name: "text", from: "max_tokens: 284}", to: "max_tokens: 285}", want: "phases.text.prompt.text"},
		{name: "messages", from: "max_tokens: 285", to: "max_tokens: 286", want: "phases.r.requests[1]"},
	} {
		t.Run(over.name, func(t *testing.T) {
			src := strings.Replace(fits, over.from, over.to, 1)
			path := write(over.name+".yaml", src)
			r := tollgate(t, "validate", path)
			if r.code != ExitInvalid || !strings.Contains(r.stderr, path+":") || !strings.Contains(r.stderr, over.want+": a request of about") || !strings.Contains(r.stderr, "needs 301 tokens of context") {
				t.Fatalf("exit %d, want 2 naming %s\n%s", r.code, over.want, r.stderr)
			}
		})
	}
}

// writeIn writes body to dir/name and returns the path.
func writeIn(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
