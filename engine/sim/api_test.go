package sim

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSimpleEndpoints(t *testing.T) {
	ts := startServer(t, fastConfig())
	tests := []struct {
		name  string
		path  string
		check func(t *testing.T, m map[string]any)
	}{
		{"health", "/health", func(t *testing.T, m map[string]any) {
			if got := str(t, m, "status"); got != "ok" {
				t.Errorf("status = %q, want ok", got)
			}
		}},
		{"version", "/version", func(t *testing.T, m map[string]any) {
			if got := str(t, m, "version"); got != Version {
				t.Errorf("version = %q, want %q", got, Version)
			}
		}},
		{"models", "/v1/models", func(t *testing.T, m map[string]any) {
			if got := str(t, m, "object"); got != "list" {
				t.Errorf("object = %q, want list", got)
			}
			if got := str(t, m, "data.0.id"); got != "tollgate-sim" {
				t.Errorf("data[0].id = %q, want tollgate-sim", got)
			}
			if got := str(t, m, "data.0.object"); got != "model" {
				t.Errorf("data[0].object = %q, want model", got)
			}
			if got := len(dig(t, m, "data").([]any)); got != 1 {
				t.Errorf("%d models, want 1", got)
			}
		}},
		{"cache status", "/v1/cache/status", func(t *testing.T, m map[string]any) {
			if got := num(t, m, "capacity_tokens"); got != 262_144 {
				t.Errorf("capacity_tokens = %d, want the default 262144", got)
			}
			for _, k := range []string{"used_tokens", "blocks", "block_tokens", "hit_tokens_total", "miss_tokens_total", "query_tokens_total"} {
				num(t, m, k)
			}
		}},
		{"stats", "/v1/stats", func(t *testing.T, m map[string]any) {
			for _, k := range []string{"requests_total", "requests_running", "requests_waiting", "prompt_tokens_total", "generation_tokens_total"} {
				num(t, m, k)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, ts.getOK(t, tt.path))
		})
	}
}

func TestChatStreamShape(t *testing.T) {
	ts := startServer(t, fastConfig())
	_, events := ts.streamEvents(t, t.Context(), "/v1/chat/completions", chatBody("Tell me about prefix caching.", map[string]any{
		"stream": true, "max_tokens": 7, "ignore_eos": true,
		"stream_options": map[string]any{"include_usage": true},
	}))
	// role, 7 tokens, finish, usage, [DONE]
	if len(events) != 11 {
		t.Fatalf("got %d events, want 11: %v", len(events), events)
	}
	if events[len(events)-1].data != "[DONE]" {
		t.Fatalf("last event = %q, want [DONE]", events[len(events)-1].data)
	}
	chunks := make([]map[string]any, len(events)-1)
	for i, e := range events[:len(events)-1] {
		chunks[i] = decodeMap(t, []byte(e.data))
		if got := str(t, chunks[i], "object"); got != "chat.completion.chunk" {
			t.Errorf("chunk %d object = %q", i, got)
		}
		if got := str(t, chunks[i], "model"); got != "tollgate-sim" {
			t.Errorf("chunk %d model = %q", i, got)
		}
		if got, want := str(t, chunks[i], "id"), str(t, chunks[0], "id"); got != want {
			t.Errorf("chunk %d id = %q, want %q", i, got, want)
		}
	}

	role := chunks[0]
	if got := str(t, role, "choices.0.delta.role"); got != "assistant" {
		t.Errorf("first chunk role = %q, want assistant", got)
	}
	if got := str(t, role, "choices.0.delta.content"); got != "" {
		t.Errorf("first chunk content = %q, want empty", got)
	}
	var text strings.Builder
	for i, c := range chunks[1:8] {
		content := str(t, c, "choices.0.delta.content")
		if content == "" {
			t.Errorf("token chunk %d has empty content", i)
		}
		if fr := dig(t, c, "choices.0.finish_reason"); fr != nil {
			t.Errorf("token chunk %d finish_reason = %v, want null", i, fr)
		}
		text.WriteString(content)
	}
	if got := str(t, chunks[8], "choices.0.finish_reason"); got != "length" {
		t.Errorf("finish_reason = %q, want length", got)
	}
	usage := chunks[9]
	if got := dig(t, usage, "choices").([]any); len(got) != 0 {
		t.Errorf("usage chunk choices = %v, want []", got)
	}
	if got := num(t, usage, "usage.completion_tokens"); got != 7 {
		t.Errorf("completion_tokens = %d, want 7", got)
	}
	p := num(t, usage, "usage.prompt_tokens")
	if got := num(t, usage, "usage.total_tokens"); got != p+7 {
		t.Errorf("total_tokens = %d, want %d", got, p+7)
	}
	num(t, usage, "usage.prompt_tokens_details.cached_tokens")

	// The generated text re-tokenizes to exactly completion_tokens, so a
	// client that counts tokens itself agrees with usage.
	tok := ts.postOK(t, "/tokenize", map[string]any{"content": text.String()})
	if got := num(t, tok, "count"); got != 7 {
		t.Errorf("output %q tokenizes to %d tokens, want 7", text.String(), got)
	}
}

func TestStreamWithoutUsage(t *testing.T) {
	ts := startServer(t, fastConfig())
	_, events := ts.streamEvents(t, t.Context(), "/v1/chat/completions", chatBody("hi", map[string]any{
		"stream": true, "max_tokens": 3, "ignore_eos": true,
	}))
	if len(events) != 6 { // role, 3 tokens, finish, [DONE]
		t.Fatalf("got %d events, want 6", len(events))
	}
	for _, e := range events[:len(events)-1] {
		if strings.Contains(e.data, `"usage"`) {
			t.Errorf("usage sent without include_usage: %s", e.data)
		}
	}
}

func TestCompletionStreamShape(t *testing.T) {
	ts := startServer(t, fastConfig())
	_, events := ts.streamEvents(t, t.Context(), "/v1/completions", map[string]any{
		"model": "tollgate-sim", "prompt": "Once upon a time", "stream": true, "max_tokens": 5, "ignore_eos": true,
		"stream_options": map[string]any{"include_usage": true},
	})
	if len(events) != 8 { // 5 tokens, finish, usage, [DONE]
		t.Fatalf("got %d events, want 8", len(events))
	}
	for i := range 5 {
		c := decodeMap(t, []byte(events[i].data))
		if got := str(t, c, "object"); got != "text_completion" {
			t.Errorf("object = %q", got)
		}
		if str(t, c, "choices.0.text") == "" {
			t.Errorf("token chunk %d has empty text", i)
		}
	}
	fin := decodeMap(t, []byte(events[5].data))
	if got := str(t, fin, "choices.0.finish_reason"); got != "length" {
		t.Errorf("finish_reason = %q", got)
	}
	u := decodeMap(t, []byte(events[6].data))
	if got := num(t, u, "usage.prompt_tokens"); got != 4 {
		t.Errorf("prompt_tokens = %d, want 4 (Once upon a time)", got)
	}
	if got := num(t, u, "usage.completion_tokens"); got != 5 {
		t.Errorf("completion_tokens = %d, want 5", got)
	}
}

func TestNonStreamed(t *testing.T) {
	ts := startServer(t, fastConfig())
	tests := []struct {
		name, path, object, textPath string
		body                         map[string]any
	}{
		{"chat", "/v1/chat/completions", "chat.completion", "choices.0.message.content",
			chatBody("hello there", map[string]any{"max_tokens": 9, "ignore_eos": true})},
		{"chat max_completion_tokens", "/v1/chat/completions", "chat.completion", "choices.0.message.content",
			chatBody("hello there", map[string]any{"max_completion_tokens": 9, "ignore_eos": true})},
		{"completion", "/v1/completions", "text_completion", "choices.0.text",
			map[string]any{"model": "tollgate-sim", "prompt": "hello there", "max_tokens": 9, "ignore_eos": true}},
		{"completion token ids", "/v1/completions", "text_completion", "choices.0.text",
			map[string]any{"prompt": []int{1, 2, 3}, "max_tokens": 9, "ignore_eos": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := ts.postOK(t, tt.path, tt.body)
			if got := str(t, m, "object"); got != tt.object {
				t.Errorf("object = %q, want %q", got, tt.object)
			}
			if str(t, m, tt.textPath) == "" {
				t.Errorf("%s is empty", tt.textPath)
			}
			if got := str(t, m, "choices.0.finish_reason"); got != "length" {
				t.Errorf("finish_reason = %q, want length", got)
			}
			if got := num(t, m, "usage.completion_tokens"); got != 9 {
				t.Errorf("completion_tokens = %d, want 9", got)
			}
			if p, tot := num(t, m, "usage.prompt_tokens"), num(t, m, "usage.total_tokens"); tot != p+9 || p < 1 {
				t.Errorf("prompt_tokens %d, total_tokens %d", p, tot)
			}
			num(t, m, "usage.prompt_tokens_details.cached_tokens")
		})
	}
}

func TestDeterministicOutput(t *testing.T) {
	body := chatBody("same question", map[string]any{"max_tokens": 20, "ignore_eos": true})
	a := startServer(t, Config{Seed: 1, DecodeStep: fastConfig().DecodeStep})
	b := startServer(t, Config{Seed: 1, DecodeStep: fastConfig().DecodeStep})
	c := startServer(t, Config{Seed: 2, DecodeStep: fastConfig().DecodeStep})
	first := str(t, a.postOK(t, "/v1/chat/completions", body), "choices.0.message.content")
	if again := str(t, a.postOK(t, "/v1/chat/completions", body), "choices.0.message.content"); again != first {
		t.Errorf("same server, same request: %q then %q", first, again)
	}
	if other := str(t, b.postOK(t, "/v1/chat/completions", body), "choices.0.message.content"); other != first {
		t.Errorf("same seed, other server: %q vs %q", first, other)
	}
	if other := str(t, c.postOK(t, "/v1/chat/completions", body), "choices.0.message.content"); other == first {
		t.Errorf("different seeds gave the same text %q", first)
	}
	if other := str(t, a.postOK(t, "/v1/chat/completions", chatBody("another question", map[string]any{"max_tokens": 20, "ignore_eos": true})), "choices.0.message.content"); other == first {
		t.Errorf("different prompts gave the same text %q", first)
	}
}

func TestEOS(t *testing.T) {
	cfg := fastConfig()
	cfg.MeanEOSTokens = 5
	ts := startServer(t, cfg)
	stops := 0
	for i := range 10 {
		body := chatBody(strings.Repeat("x ", i+1), map[string]any{"max_tokens": 500})
		m := ts.postOK(t, "/v1/chat/completions", body)
		n := num(t, m, "usage.completion_tokens")
		fr := str(t, m, "choices.0.finish_reason")
		if fr == "stop" {
			stops++
		}
		if fr == "stop" && n >= 500 || fr == "length" && n != 500 {
			t.Errorf("prompt %d: finish_reason %q with %d tokens", i, fr, n)
		}
		again := ts.postOK(t, "/v1/chat/completions", body)
		if got := num(t, again, "usage.completion_tokens"); got != n {
			t.Errorf("prompt %d: EOS not deterministic: %d then %d tokens", i, n, got)
		}
		// ignore_eos always runs to max_tokens.
		body["ignore_eos"] = true
		body["max_tokens"] = 40
		if got := num(t, ts.postOK(t, "/v1/chat/completions", body), "usage.completion_tokens"); got != 40 {
			t.Errorf("prompt %d with ignore_eos: %d tokens, want 40", i, got)
		}
	}
	if stops == 0 {
		t.Errorf("no request stopped at EOS with mean 5 and max_tokens 500")
	}
}

func TestTokenCountsAgree(t *testing.T) {
	ts := startServer(t, fastConfig())
	tests := []struct {
		name     string
		messages []map[string]any
	}{
		{"one user message", []map[string]any{{"role": "user", "content": "How fast is this server?"}}},
		{"system and user", []map[string]any{
			{"role": "system", "content": "You are terse."},
			{"role": "user", "content": "Explain continuous batching, with examples: vLLM, SGLang & TGI."},
		}},
		{"content parts", []map[string]any{{"role": "user", "content": []map[string]any{
			{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"},
		}}}},
		{"multi turn", []map[string]any{
			{"role": "user", "content": "hi"},
			{"role": "assistant", "content": "hello, how can I help?"},
			{"role": "user", "content": "naïve façade — 日本語 too"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := num(t, ts.postOK(t, "/tokenize", map[string]any{"messages": tt.messages}), "count")
			ct := num(t, ts.postOK(t, "/v1/messages/count_tokens", map[string]any{"model": "tollgate-sim", "messages": tt.messages}), "input_tokens")
			usage := num(t, ts.postOK(t, "/v1/chat/completions", map[string]any{"messages": tt.messages, "max_tokens": 1}), "usage.prompt_tokens")
			if tok != ct || tok != usage {
				t.Errorf("/tokenize %d, count_tokens %d, usage.prompt_tokens %d: want equal", tok, ct, usage)
			}
		})
	}

	t.Run("anthropic system field", func(t *testing.T) {
		withSystem := num(t, ts.postOK(t, "/v1/messages/count_tokens", map[string]any{
			"system": "You are terse.", "messages": []map[string]any{{"role": "user", "content": "hi"}},
		}), "input_tokens")
		asMessage := num(t, ts.postOK(t, "/tokenize", map[string]any{"messages": []map[string]any{
			{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"},
		}}), "count")
		if withSystem != asMessage {
			t.Errorf("count_tokens with system = %d, tokenize with a system message = %d", withSystem, asMessage)
		}
	})

	t.Run("completion prompt", func(t *testing.T) {
		prompt := "The quick brown fox jumps over the lazy dog; tokenization!"
		m := ts.postOK(t, "/tokenize", map[string]any{"prompt": prompt})
		byPrompt := num(t, m, "count")
		if got := len(dig(t, m, "tokens").([]any)); got != byPrompt {
			t.Errorf("count %d but %d tokens listed", byPrompt, got)
		}
		if got := num(t, m, "max_model_len"); got != 32768 {
			t.Errorf("max_model_len = %d", got)
		}
		byContent := num(t, ts.postOK(t, "/tokenize", map[string]any{"content": prompt}), "count")
		usage := num(t, ts.postOK(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 1}), "usage.prompt_tokens")
		if byPrompt != byContent || byPrompt != usage {
			t.Errorf("prompt %d, content %d, usage %d: want equal", byPrompt, byContent, usage)
		}
	})
}

func TestErrors(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxModelLen = 100
	ts := startServer(t, cfg)
	tests := []struct {
		name, method, path string
		body               any
		status             int
		errType            string
	}{
		{"chat bad JSON", "POST", "/v1/chat/completions", `{"messages": [`, 400, "invalid_request_error"},
		{"completion bad JSON", "POST", "/v1/completions", `not json`, 400, "invalid_request_error"},
		{"tokenize bad JSON", "POST", "/tokenize", `{`, 400, "invalid_request_error"},
		{"count_tokens bad JSON", "POST", "/v1/messages/count_tokens", `[]`, 400, "invalid_request_error"},
		{"chat unknown model", "POST", "/v1/chat/completions", chatBody("hi", map[string]any{"model": "gpt-9"}), 404, "invalid_request_error"},
		{"completion unknown model", "POST", "/v1/completions", map[string]any{"model": "gpt-9", "prompt": "hi"}, 404, "invalid_request_error"},
		{"count_tokens unknown model", "POST", "/v1/messages/count_tokens", map[string]any{"model": "claude-0", "messages": []map[string]any{{"role": "user", "content": "hi"}}}, 404, "invalid_request_error"},
		{"chat no messages", "POST", "/v1/chat/completions", map[string]any{"messages": []any{}}, 400, "invalid_request_error"},
		{"chat bad content", "POST", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": 42}}}, 400, "invalid_request_error"},
		{"completion no prompt", "POST", "/v1/completions", map[string]any{"max_tokens": 3}, 400, "invalid_request_error"},
		{"completion two prompts", "POST", "/v1/completions", map[string]any{"prompt": []string{"a", "b"}}, 400, "invalid_request_error"},
		{"completion token out of vocabulary", "POST", "/v1/completions", map[string]any{"prompt": []int{-1}}, 400, "invalid_request_error"},
		{"max_tokens zero", "POST", "/v1/chat/completions", chatBody("hi", map[string]any{"max_tokens": 0}), 400, "invalid_request_error"},
		{"over context", "POST", "/v1/chat/completions", chatBody("hi", map[string]any{"max_tokens": 100}), 400, "invalid_request_error"},
		{"prompt over context", "POST", "/v1/completions", map[string]any{"prompt": tokenIDs(1, 100)}, 400, "invalid_request_error"},
		{"n=2", "POST", "/v1/chat/completions", chatBody("hi", map[string]any{"n": 2}), 400, "invalid_request_error"},
		{"tokenize nothing", "POST", "/tokenize", map[string]any{}, 400, "invalid_request_error"},
		{"unknown path", "GET", "/v2/nothing", nil, 404, "not_found_error"},
		{"wrong method", "GET", "/v1/chat/completions", nil, 405, "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := ts.do(t, tt.method, tt.path, tt.body)
			if status != tt.status {
				t.Fatalf("status = %d, want %d (body %s)", status, tt.status, body)
			}
			m := decodeMap(t, body)
			if got := str(t, m, "error.type"); got != tt.errType {
				t.Errorf("error.type = %q, want %q", got, tt.errType)
			}
			if str(t, m, "error.message") == "" {
				t.Errorf("error.message is empty")
			}
		})
	}
	if got := ts.Stats().Requests; got != 0 {
		t.Errorf("Stats().Requests = %d after only invalid requests, want 0", got)
	}
}

func TestModelNotFoundShape(t *testing.T) {
	ts := startServer(t, fastConfig())
	status, body := ts.do(t, "POST", "/v1/chat/completions", chatBody("hi", map[string]any{"model": "nope"}))
	if status != http.StatusNotFound {
		t.Fatalf("status %d", status)
	}
	var e struct {
		Error struct {
			Message, Type string
			Param, Code   *string
		}
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Code == nil || *e.Error.Code != "model_not_found" || e.Error.Param == nil || *e.Error.Param != "model" {
		t.Errorf("error = %s, want code model_not_found and param model", body)
	}
}

func TestAPIKey(t *testing.T) {
	cfg := fastConfig()
	cfg.APIKey = "sk-test"
	ts := startServer(t, cfg)
	if status, _ := ts.do(t, "GET", "/v1/models", nil); status != http.StatusUnauthorized {
		t.Errorf("no key: status %d, want 401", status)
	}
	if status, _ := ts.do(t, "GET", "/health", nil); status != http.StatusOK {
		t.Errorf("/health needs no key: status %d", status)
	}
	req, err := http.NewRequestWithContext(t.Context(), "GET", ts.url+"/v1/models", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("with key: status %d", resp.StatusCode)
	}
}

func TestMetrics(t *testing.T) {
	ts := startServer(t, fastConfig())
	ts.postOK(t, "/v1/chat/completions", chatBody("count me", map[string]any{"max_tokens": 4, "ignore_eos": true}))
	status, body := ts.do(t, "GET", "/metrics", nil)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	text := string(body)
	st := ts.Stats()
	for _, want := range []string{
		`vllm:num_requests_running{model_name="tollgate-sim"} 0`,
		`vllm:num_requests_waiting{model_name="tollgate-sim"} 0`,
		`vllm:generation_tokens_total{model_name="tollgate-sim"} 4`,
		`vllm:prompt_tokens_total{model_name="tollgate-sim"} ` + itoa(st.PromptTokens),
		`vllm:prefix_cache_queries_total{model_name="tollgate-sim"} ` + itoa(st.CacheQueryTokens),
		`vllm:prefix_cache_hits_total{model_name="tollgate-sim"} 0`,
		`vllm:request_success_total{finished_reason="length",model_name="tollgate-sim"} 1`,
		`vllm:time_to_first_token_seconds_count{model_name="tollgate-sim"} 1`,
		`vllm:time_to_first_token_seconds_bucket{model_name="tollgate-sim",le="+Inf"} 1`,
		"# TYPE vllm:time_to_first_token_seconds histogram",
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Handler works mounted on another server; after Close it answers 503.
func TestHandlerMounted(t *testing.T) {
	s, err := New(fastConfig())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	ts := &testServer{Server: s, url: hs.URL, client: hs.Client()}
	m := ts.postOK(t, "/v1/chat/completions", chatBody("mounted", map[string]any{"max_tokens": 3, "ignore_eos": true}))
	if got := num(t, m, "usage.completion_tokens"); got != 3 {
		t.Errorf("completion_tokens = %d", got)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if status, _ := ts.do(t, "GET", "/health", nil); status != http.StatusServiceUnavailable {
		t.Errorf("after Close: status %d, want 503", status)
	}
}
