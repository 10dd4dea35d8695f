package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/engine/sim"
)

// The window the loader assumes of an embedded target without
// sim.max_model_len is the simulator's own default.
func TestSimWindowIsTheSimulatorDefault(t *testing.T) {
	if got := sim.DefaultConfig().MaxModelLen; got != simMaxModelLen {
		t.Errorf("engine/sim's MaxModelLen is %d, scenarios assumes %d", got, simMaxModelLen)
	}
}

// A request that does not fit the embedded simulator's context window is
// an error at load, at the key that sized it, for every way a phase sizes
// its requests; one that fits exactly loads (cmd/tollgate's
// TestContextWindowEdgeRuns sends it).
func TestContextWindow(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"p.jsonl": "{\"prompt\": \"short\"}\n\n{\"prompt\": \"" + strings.Repeat("word ", 300) + "\"}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const sim300 = "targets: {s: {kind: embedded, sim: {max_model_len: 300}}}\n"
	for _, tc := range []struct {
		name, src string
		want      string // "" loads; else the error holds s.yaml:LINE:COL: and this
	}{
		{name: "decode that fits exactly", src: sim300 + "phases:\n  decode: {prompt_tokens: 200, max_tokens: 93}\n"},
		{name: "decode one token over", src: sim300 + "phases:\n  decode: {prompt_tokens: 201, max_tokens: 93}\n",
			want: "3:27: phases.decode.prompt_tokens: a request of about 208 prompt tokens (with the chat template's, on that endpoint) and max_tokens 93 needs 301 tokens of context, over the window of 300"},
		{name: "completions has no chat template", src: "targets: {s: {kind: embedded, endpoint: completions, sim: {max_model_len: 300}}}\nphases:\n  decode: {prompt_tokens: 207, max_tokens: 93}\n"},
		{name: "max_tokens alone is blamed when prompt_tokens is the default", src: sim300 + "phases:\n  decode: {max_tokens: 290}\n",
			want: "3:24: phases.decode.max_tokens: a request of about 519 prompt tokens"},
		{name: "the largest prefill size", src: sim300 + "phases:\n  prefill: {prompt_tokens: [64, 400, 128]}\n",
			want: "3:33: phases.prefill.prompt_tokens[1]: a request of about 407 prompt tokens"},
		{name: "prefix cache with its suffix", src: sim300 + "phases:\n  prefix_cache: {prompt_tokens: 200, suffix_tokens: 100, max_tokens: 1}\n",
			want: "3:33: phases.prefix_cache.prompt_tokens: a request of about 307 prompt tokens"},
		{name: "a load distribution's largest", src: sim300 + "phases:\n  l: {kind: load, concurrency: 1, requests: 2, prompt_tokens: {distribution: uniform, min: 10, max: 250}, max_tokens: 60}\n",
			want: "3:63: phases.l.prompt_tokens: a request of about 257 prompt tokens (with the chat template's, on that endpoint) and max_tokens 60"},
		{name: "a warmup", src: sim300 + "phases:\n  warmup: {prompt_tokens: 290, max_tokens: 16}\n",
			want: "3:27: phases.warmup.prompt_tokens"},
		{name: "a fixed prompt text", src: sim300 + "phases:\n  decode: {prompt: {text: \"" + strings.Repeat("word ", 100) + "\"}, max_tokens: 250}\n",
			want: "3:27: phases.decode.prompt.text: a request of about 107 prompt tokens"},
		{name: "a request of a requests list", src: sim300 + "phases:\n  r:\n    kind: requests\n    requests:\n      - {prompt: \"hello world\", max_tokens: 289}\n      - {messages: [{role: system, content: be brief}, {role: user, content: hi}], max_tokens: 286}\n",
			want: "7:9: phases.r.requests[1]: a request of about 15 prompt tokens (with the chat template's, on that endpoint) and max_tokens 286 needs 301"},
		{name: "a line of a prompt file", src: sim300 + "phases:\n  decode: {prompt: {file: p.jsonl}, max_tokens: 16}\n",
			want: "3:27: phases.decode.prompt.file: " + filepath.Join(dir, "p.jsonl") + ":3: a request of about 307 prompt tokens"},
		{name: "a live server's window is its own to say", src: "targets: {s: {kind: openai, base_url: \"http://127.0.0.1:1\"}}\nphases:\n  decode: {prompt_tokens: 100000}\n"},
		{name: "the default window", src: "phases:\n  decode: {prompt_tokens: 32768}\n",
			want: "2:27: phases.decode.prompt_tokens: a request of about 32775 prompt tokens (with the chat template's, on that endpoint) and max_tokens 256 needs 33031 tokens of context, over the window of 32768 of target \"embedded\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, Options{LookupEnv: noEnv})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), path+":"+tc.want) {
				t.Fatalf("errors:\n%v\nwant one containing %s:%s", err, path, tc.want)
			}
		})
	}
}
