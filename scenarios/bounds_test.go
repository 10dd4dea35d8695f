package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadWithin loads src from a file in a temporary folder, failing the test
// rather than hanging should loading stop being bounded.
func loadWithin(t *testing.T, src string) (path string, sc *Scenario, err error) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		sc  *Scenario
		err error
	}
	done := make(chan result, 1)
	go func() {
		sc, err := Load(path, Options{LookupEnv: noEnv})
		done <- result{sc, err}
	}()
	select {
	case r := <-done:
		return path, r.sc, r.err
	case <-ctx.Done():
		t.Fatalf("loading did not finish in 2 minutes")
		return path, nil, nil
	}
}

// chain is a vars mapping of n vars, var i given by value(i).
func chain(n int, first string, value func(i int) string) string {
	var b strings.Builder
	b.WriteString("vars:\n  v0: " + first + "\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  v%d: %s\n", i, value(i))
	}
	return b.String()
}

// Every count and every expansion the loader does is bounded, and a value
// past a bound is refused at its key with the bound and why.
func TestLoadBounds(t *testing.T) {
	const decode = "phases:\n  decode: {prompt_tokens: 16, max_tokens: 4, repeat: %s}\n"
	for _, tc := range []struct {
		name, src string
		want      string // "" loads; else the error names file:line:col (the path's) and this
	}{
		{name: "a million repetitions load", src: fmt.Sprintf(decode, "1000000")},
		{name: "the bound itself loads", src: fmt.Sprintf(decode, "1000000000")},
		{name: "repeat past the bound", src: fmt.Sprintf(decode, "1000000001"),
			want: ":2:54: phases.decode.repeat: 1000000001 repetitions is over the bound of 1000000000 requests"},
		{name: "repeat of the largest integer", src: fmt.Sprintf(decode, "9223372036854775807"),
			want: ":2:54: phases.decode.repeat: 9223372036854775807 repetitions"},
		{name: "repeat times sizes", src: "phases:\n  prefill: {prompt_tokens: [16, 32], repeat: 600000000}\n",
			want: ":2:46: phases.prefill.repeat: 600000000 repetitions × 2 requests each is over the bound"},
		{name: "a load phase's requests", src: "phases:\n  l: {kind: load, concurrency: 4, requests: 9223372036854775807}\n",
			want: ":2:45: phases.l.requests: 9223372036854775807 requests is over the bound"},
		{name: "a warmup's requests", src: "phases:\n  warmup: {requests: 5000000000}\n",
			want: ":2:22: phases.warmup.requests: 5000000000 requests"},
		{name: "sessions times turns", src: "phases:\n  chat: {kind: sessions, sessions: 200000000, turns: 10}\n",
			want: ":2:36: phases.chat.sessions: 200000000 sessions × 10 requests each"},
		{name: "a capacity probe that cannot start", src: "phases:\n  c:\n    kind: capacity\n    capacity: {min: 1, max: 64, objectives: [\"ttft_ms.p99 <= 500\"], probe: {min_requests: 1000000000}}\n",
			want: ":4:91: phases.c.capacity.probe.min_requests: 1000000000 requests at the first probe's rate (1/s)"},
		{name: "a probe longer than the budget", src: "phases:\n  c:\n    kind: capacity\n    capacity: {min: 60, max: 64, budget: 10s, objectives: [\"ttft_ms.p99 <= 500\"], probe: {duration: 20s}}\n",
			want: ":4:101: phases.c.capacity.probe: a probe (warm-up 1s + 2 × duration 20s = 41s) does not fit the budget (10s)"},
		{name: "max_history_bytes at its bound loads", src: "phases:\n  chat: {kind: sessions, max_history_bytes: 256MiB}\n"},
		{name: "max_history_bytes past its bound", src: "phases:\n  chat: {kind: sessions, max_history_bytes: 1GiB}\n",
			want: ":2:45: phases.chat.max_history_bytes: from 1 byte to 256 MiB (268435456 bytes), got 1073741824"},
		{name: "max_reply_bytes past its bound", src: "phases:\n  chat: {kind: sessions, max_reply_bytes: 5MiB}\n",
			want: ":2:43: phases.chat.max_reply_bytes: from 1 byte to 4 MiB (4194304 bytes), got 5242880"},
		{name: "tool_result_tokens past its bound", src: "phases:\n  a: {kind: agent, tools: [{name: t}], max_steps: 1, tool_result_tokens: 1000001}\n",
			want: ":2:74: phases.a.tool_result_tokens: from 1 to 1000000, got 1000001"},
		{name: "a prefill of one size loads", src: "phases:\n  prefill: {prompt_tokens: 256}\n"},
		{name: "a prefill of no sizes", src: "phases:\n  prefill: {prompt_tokens: []}\n",
			want: ":2:28: phases.prefill.prompt_tokens: give one size (256) or a non-empty list of sizes"},
		{name: "a reference in a target's name", src: "vars: {k: x}\ntargets:\n  ${vars.k}: {kind: openai, base_url: \"http://127.0.0.1:1\"}\nphases:\n  decode: {}\n",
			want: `:3:3: mapping key "${vars.k}": ${...} is not expanded in a key`},
		{name: "a reference in a header's name", src: "targets:\n  t:\n    kind: openai\n    base_url: \"http://127.0.0.1:1\"\n    headers:\n      X-${env.H}: v\nphases:\n  decode: {}\n",
			want: `:6:7: mapping key "X-${env.H}"`},
		{name: "a reference in a var's name", src: "vars:\n  ${env.X}: 1\nphases:\n  decode: {}\n",
			want: `:2:3: mapping key "${env.X}"`},
		{name: "vars chained 64 deep load", src: chain(64, "x", func(i int) string { return fmt.Sprintf("${vars.v%d}x", i-1) }) + "name: ${vars.v63}\nphases:\n  decode: {}\n"},
		{name: "20,000 chained vars", src: chain(20000, "x", func(i int) string { return fmt.Sprintf("${vars.v%d}x", i-1) }) + "name: ${vars.v19999}\nphases:\n  decode: {}\n",
			want: ":66:8: ${vars.v63}: vars nest more than 64 deep here"},
		{name: "20,000 nested lists", src: chain(20000, "x", func(i int) string { return fmt.Sprintf("[\"${vars.v%d}\"]", i-1) }) + "phases:\n  decode: {}\n",
			want: ":66:9: ${vars.v63}: vars nest more than 64 deep"},
		// 5,000 lines (200 KB): the search for the error's line parses
		// halves of the file a dozen times, where a line-by-line search
		// would parse it 5,000 times. 20,000 lines cost 10 s of CPU under
		// -race, the package's longest test, for the same check.
		{name: "a syntax error at the end of a large file", src: chain(5000, "x", func(int) string { return "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" }) + "phases:\n  decode: {max_tokens: [1, 2}}\n",
			want: ":5003:29: YAML syntax error: did not find expected ',' or ']'"},
		{name: "vars that double", src: chain(40, "xxxxxxxxxxxxxxxx", func(i int) string { return fmt.Sprintf("${vars.v%d}${vars.v%d}", i-1, i-1) }) + "phases:\n  decode: {}\n",
			want: "would take var expansion past 16 MiB in all"},
		{name: "lists that double", src: chain(40, "x", func(i int) string { return fmt.Sprintf("[\"${vars.v%d}\", \"${vars.v%d}\"]", i-1, i-1) }) + "phases:\n  decode: {}\n",
			want: "would take var expansion past 16 MiB in all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _, err := loadWithin(t, tc.src)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want := tc.want
			if strings.HasPrefix(want, ":") {
				want = path + want
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("errors:\n%v\nwant one containing %q", err, want)
			}
			// One bound, one message: a refused var does not refuse every var after it.
			if n := strings.Count(err.Error(), "\n"); n > 2 {
				t.Errorf("%d lines of errors; want the one that names the bound:\n%v", n+1, err)
			}
		})
	}
}

// A conversation's byte bounds default from its token counts: 64 bytes a
// token, max_reply_bytes at least 64 KiB, max_history_bytes at least
// 1 MiB, neither past its bound; one written is kept as written.
func TestConversationByteBoundDefaults(t *testing.T) {
	for _, tc := range []struct {
		name           string
		phase          string
		history, reply Size
	}{
		{name: "small sessions take the floors", phase: "{kind: sessions, turns: 4, prompt_tokens: 64, max_tokens: 8}", history: 1 << 20, reply: 64 << 10},
		// 100 × (1024 + 4) + 99 × (4096 + 4) + 4096 tokens × 64 bytes.
		{name: "long sessions scale", phase: "{kind: sessions, turns: 100, prompt_tokens: 1024, max_tokens: 4096}",
			history: Size((100*1028 + 99*4100 + 4096) * 64), reply: 4096 * 64},
		{name: "past the bounds they stop there", phase: "{kind: sessions, turns: 1000, prompt_tokens: 100000, max_tokens: 100000}", history: 256 << 20, reply: 4 << 20},
		// (64 + 4) + 7 × ((64 + 4) + 4000 + 4) + 64 tokens × 64 bytes.
		{name: "an agent counts its tool results", phase: "{kind: agent, tools: [{name: t}], max_steps: 8, prompt_tokens: 64, max_tokens: 64, tool_result_tokens: 4000}",
			history: Size((68 + 7*4072 + 64) * 64), reply: 64 << 10},
		{name: "written values are kept", phase: "{kind: sessions, max_history_bytes: 10KiB, max_reply_bytes: 1000}", history: 10 << 10, reply: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A live server's window is unknown at load: no context check.
			_, sc, err := loadWithin(t, "targets:\n  s: {kind: openai, base_url: \"http://127.0.0.1:1\"}\nphases:\n  p: "+tc.phase+"\n")
			if err != nil {
				t.Fatal(err)
			}
			p := sc.Runs[0].Phases[0]
			if p.MaxHistoryBytes != tc.history || p.MaxReplyBytes != tc.reply {
				t.Errorf("max_history_bytes %d, max_reply_bytes %d; want %d, %d", p.MaxHistoryBytes, p.MaxReplyBytes, tc.history, tc.reply)
			}
		})
	}
}
