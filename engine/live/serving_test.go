package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/sim"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

func parse(t *testing.T, src string, env map[string]string) *scenarios.Scenario {
	t.Helper()
	// The datasets and traces tests write are in t.TempDir(), outside
	// this package's directory, where "test.yaml" would be.
	sc, err := scenarios.Parse("test.yaml", []byte(src), scenarios.Options{AllowOutside: []string{os.TempDir()}, LookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func runFirst(t *testing.T, sc *scenarios.Scenario, env map[string]string) (*report.Run, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return Run(ctx, sc.Runs[0], Options{Protocol: openai.Protocol(), Samples: true, LookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}})
}

func TestQuickstartOnTheEmbeddedSimulator(t *testing.T) {
	t.Parallel() // its own simulator; it waits on the clock
	sc, err := scenarios.Load("../../examples/quickstart.yaml", scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Target.Model != "tollgate-sim" || r.Target.ModelSource != "first id from /v1/models" || r.Target.ReadyMS == nil {
		t.Errorf("target %+v", r.Target)
	}
	for _, path := range transport.MetadataPaths() {
		if _, ok := r.Target.Metadata[path]; !ok {
			t.Errorf("metadata %s missing", path)
		}
	}
	checkQuickstartPrefill(t, r.Phases["prefill"])
	// Fresh prompts really are fresh: nothing cached in prefill or decode.
	for _, name := range []string{"prefill", "decode"} {
		if m := r.Phases[name].CachedTokens.Max; m == nil || *m != 0 {
			t.Errorf("%s: cached_tokens max %v, want 0 (prompts must not share prefixes)", name, m)
		}
	}
	dec := r.Phases["decode"]
	if runtime.GOOS == "linux" && dec.ArrivalClock != "kernel" {
		t.Errorf("arrival clock %q, want kernel receive timestamps on Linux", dec.ArrivalClock)
	}
	if dec.CompletionTokens.P50 == nil || *dec.CompletionTokens.P50 != 64 || dec.DecodeTokensPerS.P50 == nil {
		t.Errorf("decode: %+v", dec.ServingMetrics)
	}
	checkQuickstartPrefixCache(t, r.Phases["prefix_cache"])
	if n := len(dec.Samples.([]report.RequestSample)); n != 2 {
		t.Errorf("%d decode samples", n)
	}
	if w := r.Phases["warmup"]; w.Requests != 2 || w.TTFTMS.Count != 0 {
		t.Errorf("warmup must be counted, not measured: %+v", w.ServingMetrics)
	}
}

// checkQuickstartPrefill: every prompt size answered and calibrated, with
// TTFT growing with the size.
func checkQuickstartPrefill(t *testing.T, pre *report.Phase) {
	t.Helper()
	for _, size := range []string{"256", "1024", "4096"} {
		pt := pre.ByPromptTokens[size]
		if pt == nil || pt.Succeeded != 2 || pt.TTFTMS.P50 == nil {
			t.Fatalf("prefill %s: %+v", size, pt)
		}
		if pt.TokenCountSource != "usage" {
			t.Errorf("token_count_source %q", pt.TokenCountSource)
		}
	}
	if *pre.ByPromptTokens["4096"].TTFTMS.P50 <= *pre.ByPromptTokens["256"].TTFTMS.P50 {
		t.Error("TTFT must grow with the uncached prompt size")
	}
	for _, c := range pre.Calibration {
		if d := c.Tokens - c.TargetTokens; d > transport.CalibrationTolerance(c.TargetTokens) || -d > transport.CalibrationTolerance(c.TargetTokens) {
			t.Errorf("%s calibrated to %d tokens for a target of %d", c.Request, c.Tokens, c.TargetTokens)
		}
		if c.Method != "count_tokens" {
			t.Errorf("method %q, want count_tokens (the simulator serves it)", c.Method)
		}
	}
	if len(pre.Calibration) != 6 {
		t.Errorf("%d calibrations, want 6", len(pre.Calibration))
	}
}

// checkQuickstartPrefixCache: an identical prefix is served from cache,
// and the server's own counters say so.
func checkQuickstartPrefixCache(t *testing.T, pc *report.Phase) {
	t.Helper()
	ident := pc.Variants["identical"]
	// The cache's proof is the tokens it served; its speed only has to
	// show: under -race beside other packages the client's own cost is in
	// both TTFTs and squeezes the ratio (1.6 seen with 4 test binaries at
	// once), and the example's own gate (identical ≤ 0.5 × fresh) is run
	// by cmd/tollgate's TestExamplesRun on the binary without the detector.
	if ident.Speedup == nil || ident.CachedTokens.P50 == nil || *ident.Speedup <= 1 || *ident.CachedTokens.P50 < 2000 {
		t.Errorf("identical: speedup %s cached %s, want above 1 and at least 2000", fmtPtr(ident.Speedup), fmtPtr(ident.CachedTokens.P50))
	}
	if len(pc.Warnings) != 0 {
		t.Errorf("warnings %v", pc.Warnings)
	}
	if d := pc.ServerMetricsDelta["vllm:prefix_cache_hits_total"]; d <= 0 {
		t.Errorf("server metrics delta of prefix cache hits %v, want > 0 (deltas %v)", d, pc.ServerMetricsDelta)
	}
}

// llamaWrites are what llamaLike wrote of one streamed chat request: the
// time just before and just after each event's write and flush (the role
// chunk's first, then each token's), so the kernel's receive time of each
// on loopback lies between its pair.
type llamaWrites struct{ before, after []time.Time }

// llamaLike imitates llama.cpp's llama-server: no count_tokens, /tokenize
// with {content}, a role chunk with content null, usage in the same chunk as
// finish_reason, and known injected delays. It keeps each streamed chat
// request's write times in rec (when not nil), in the order they came.
func llamaLike(t *testing.T, firstTokenDelay, gap time.Duration, tokens int, rec *struct {
	sync.Mutex
	reqs []llamaWrites
}) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"status":"ok"}`) })
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"llama-test","object":"model"}]}`)
	})
	mux.HandleFunc("/tokenize", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Content string `json:"content"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Content == "" {
			http.Error(w, `{"error":"content required"}`, 400)
			return
		}
		n := len(strings.Fields(body.Content))
		toks := make([]int, n)
		_ = json.NewEncoder(w).Encode(map[string]any{"tokens": toks})
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
			Stream   bool                       `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		prompt := 0
		for _, m := range body.Messages {
			prompt += len(strings.Fields(m.Content))
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		var wr llamaWrites
		write := func(format string, args ...any) {
			wr.before = append(wr.before, time.Now())
			fmt.Fprintf(w, format, args...)
			fl.Flush()
			wr.after = append(wr.after, time.Now())
		}
		write("%s", `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}`+"\n\n")
		time.Sleep(firstTokenDelay)
		for i := 0; i < tokens; i++ {
			if i > 0 {
				time.Sleep(gap)
			}
			if i == tokens-1 {
				write(`data: {"choices":[{"index":0,"delta":{"content":" w%d"},"finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", i, prompt, tokens, prompt+tokens)
			} else {
				write(`data: {"choices":[{"index":0,"delta":{"content":" w%d"},"finish_reason":null}]}`+"\n\n", i)
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		if rec != nil && body.Stream {
			rec.Lock()
			rec.reqs = append(rec.reqs, wr)
			rec.Unlock()
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestMetricsAgainstInjectedDelays(t *testing.T) {
	const firstToken, gap, tokens = 60 * time.Millisecond, 15 * time.Millisecond, 6
	var rec struct {
		sync.Mutex
		reqs []llamaWrites
	}
	srv := llamaLike(t, firstToken, gap, tokens, &rec)
	sc := parse(t, fmt.Sprintf(`
targets:
  llama: {kind: openai, base_url: %q, ready_timeout: 5s}
phases:
  decode: {prompt_tokens: 40, max_tokens: 6, repeat: 3}
`, srv.URL), nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Phases["decode"]
	// The truth is what the server wrote when, not what it meant to: a
	// loaded machine oversleeps the injected delays. Each figure is a
	// difference of two arrivals on the kernel clock (the first byte, the
	// role chunk; the first and last tokens), and each arrival lies
	// between the server's times around its write, so the figure lies in
	// a window the server's own clock gives, whatever the load; 1 ms
	// covers the two clocks' reading.
	samples, _ := d.Samples.([]report.RequestSample)
	rec.Lock()
	reqs := rec.reqs
	rec.Unlock()
	if len(samples) != 3 || len(reqs) != 3 {
		t.Fatalf("%d samples and %d streamed requests, want 3 of each", len(samples), len(reqs))
	}
	const slack = time.Millisecond
	ms := func(x time.Duration) float64 { return float64(x) / 1e6 }
	between := func(what string, got *float64, lo, hi time.Duration) {
		t.Helper()
		if got == nil {
			t.Errorf("%s absent, want in [%.3f, %.3f] ms", what, ms(lo), ms(hi))
		} else if *got < ms(lo-slack) || *got > ms(hi+slack) {
			t.Errorf("%s = %.3f ms, want in [%.3f, %.3f] ms, the server's writes (± %v)", what, *got, ms(lo), ms(hi), slack)
		}
	}
	for i, sm := range samples {
		w := reqs[i]
		if sm.TTFTMS == nil || sm.TTFBMS == nil {
			t.Fatalf("request %d: ttft %v ttfb %v", i, sm.TTFTMS, sm.TTFBMS)
		}
		// ttft − ttfb: role chunk → first token.
		gotFirst := *sm.TTFTMS - *sm.TTFBMS
		between(fmt.Sprintf("request %d ttft − ttfb", i), &gotFirst, w.before[1].Sub(w.after[0]), w.after[1].Sub(w.before[0]))
		if gotFirst < ms(firstToken-slack) {
			t.Errorf("request %d: ttft − ttfb %.3f ms undercuts the injected %v", i, gotFirst, firstToken)
		}
		// tpot: first token → last, per gap.
		n := time.Duration(tokens - 1)
		between(fmt.Sprintf("request %d tpot", i), sm.TPOTMS, w.before[tokens].Sub(w.after[1])/n, w.after[tokens].Sub(w.before[1])/n)
	}
	if d.TTFBMS.P50 == nil || *d.TTFBMS.P50 >= *d.TTFTMS.P50 {
		t.Errorf("the role-only chunk is the first byte but must not stop the TTFT clock: ttfb %v ttft %v", d.TTFBMS.P50, d.TTFTMS.P50)
	}
	if d.TokenCountSource != "usage" || *d.CompletionTokens.P50 != 6 {
		t.Errorf("usage in the finish_reason chunk: source %q completion %v", d.TokenCountSource, d.CompletionTokens.P50)
	}
	if len(d.Calibration) != 3 || d.Calibration[0].Method != "tokenize" {
		t.Fatalf("calibration %+v, want 3 via /tokenize", d.Calibration)
	}
	if c := d.Calibration[0]; c.Tokens < 36 || c.Tokens > 44 {
		t.Errorf("calibrated to %d tokens for 40", c.Tokens)
	}
	if r.Target.Model != "llama-test" {
		t.Errorf("model %q", r.Target.Model)
	}
	if r.Phases["decode"].ServerMetricsNote == "" {
		t.Error("a server without /metrics must be noted, not fatal")
	}
}

func TestServerDownIsARunError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	sc := parse(t, fmt.Sprintf(`
targets:
  gone: {kind: openai, base_url: %q, ready_timeout: 300ms}
phases:
  decode: {}
`, url), nil)
	start := time.Now()
	_, err := runFirst(t, sc, nil)
	if err == nil || !strings.Contains(err.Error(), "connection refused at "+url+" (retried for 300ms)") {
		t.Fatalf("err %v, want a refused connection naming the URL", err)
	}
	// A readiness that ignored its 300 ms would retry for the default 30 s;
	// the bound is far from both, so a busy machine cannot flip it.
	if d := time.Since(start); d < 300*time.Millisecond || d > 20*time.Second {
		t.Errorf("readiness took %v: it must retry for its deadline, 300ms, and then stop", d)
	}
}

// secretServer is the simulator with an API key, behind a handler that
// echoes the Authorization header in 401 bodies, as some servers do.
func secretServer(t *testing.T, key string) string {
	t.Helper()
	s, err := sim.New(sim.Config{APIKey: key, DecodeStep: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") && r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"bad key %s (session %s)"}}`, r.Header.Get("Authorization"), r.Header.Get("X-Tenant-Token"))
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); _ = s.Close() })
	return srv.URL
}

func TestSecretsNeverLeak(t *testing.T) {
	const key, wrong, tenant = "sk-right-0123456789", "sk-wrong-9876543210", "tenant-secret-42"
	url := secretServer(t, key)
	src := fmt.Sprintf(`
targets:
  s:
    kind: openai
    base_url: %q
    model: tollgate-sim
    api_key_env: TEST_KEY
    headers: {X-Tenant-Token: %s, X-Session: visible}
    secret_headers: [X-Tenant-Token]
    metrics: false
phases:
  decode: {prompt_tokens: 16, max_tokens: 4, prompt: {calibrate: false}}
`, url, tenant)
	for _, tc := range []struct {
		name    string
		key     string
		wantErr bool
	}{
		{name: "right key", key: key},
		{name: "wrong key", key: wrong, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"TEST_KEY": tc.key}
			sc := parse(t, src, env)
			r, err := runFirst(t, sc, env)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				d := r.Phases["decode"]
				if d.Errors.ByClass["http_status"] != 1 || d.Errors.Examples[0].Status != 401 {
					t.Errorf("errors %+v", d.Errors)
				}
				if !errors.Is(err, ErrPhase) {
					t.Errorf("a 401 exceeds max_error_rate 0 and stops the phase: %v", err)
				}
			}
			r.Target.Config = redacted(sc)
			b, _ := json.Marshal(r)
			all := string(b)
			if err != nil {
				all += err.Error()
			}
			for _, secret := range []string{key, wrong, tenant} {
				if strings.Contains(all, secret) {
					t.Errorf("secret %q leaked into the report or error:\n%s", secret, all)
				}
			}
			if !strings.Contains(all, "visible") && tc.wantErr {
				t.Log("note: non-secret header not echoed")
			}
		})
	}
}

// redacted mimics what engine does with the target config before reporting.
func redacted(sc *scenarios.Scenario) any {
	c := *sc.Runs[0].Target.OpenAI
	c.Headers = map[string]string{}
	for k, v := range sc.Runs[0].Target.OpenAI.Headers {
		if strings.EqualFold(k, "X-Tenant-Token") {
			v = "[REDACTED]"
		}
		c.Headers[k] = v
	}
	return c
}

func TestUnknownModelIsAClassifiedError(t *testing.T) {
	sc := parse(t, `
targets:
  e: {kind: embedded, model: no-such-model, sim: {decode_step: 1ms}}
phases:
  decode: {max_tokens: 4, prompt: {text: hello there}}
`, nil)
	r, err := runFirst(t, sc, nil)
	if err == nil {
		t.Fatal("an unknown model must fail the phase")
	}
	d := r.Phases["decode"]
	if d.Errors.ByClass["http_status"] != 1 || d.Errors.Examples[0].Status != 404 || !strings.Contains(d.Errors.Examples[0].Message, "no-such-model") {
		t.Errorf("errors %+v", d.Errors)
	}
}

func TestMaxErrorRate(t *testing.T) {
	var n atomic.Int64
	s, err := sim.New(sim.Config{DecodeStep: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" && n.Add(1)%2 == 0 {
			http.Error(w, `{"error":{"message":"overloaded"}}`, 500)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer s.Close()
	for _, tc := range []struct {
		name     string
		rate     string
		wantErr  bool
		requests int
	}{
		{name: "half tolerated", rate: "0.5", requests: 4},
		{name: "a quarter is not", rate: "0.25", wantErr: true, requests: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.Store(0)
			sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false}
phases:
  decode: {max_tokens: 2, repeat: 4, max_error_rate: %s, prompt: {text: hi}}
`, srv.URL, tc.rate), nil)
			r, err := runFirst(t, sc, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			d := r.Phases["decode"]
			if d.Errors.Count != 2 || d.Succeeded != 2 || d.Requests != tc.requests {
				t.Errorf("requests %d ok %d errors %d", d.Requests, d.Succeeded, d.Errors.Count)
			}
			if d.Errors.ByClass["http_status"] != 2 || d.Errors.Rate == nil || *d.Errors.Rate != 0.5 {
				t.Errorf("errors %+v", d.Errors)
			}
			if d.TTFTMS.Count != 2 {
				t.Errorf("failed requests must not enter latency: ttft count %d", d.TTFTMS.Count)
			}
		})
	}
}

func TestRequestsPhaseCompletionsAndNonStreamed(t *testing.T) {
	for _, tc := range []struct {
		name, endpoint string
		stream         bool
	}{
		{name: "chat streamed", endpoint: "chat", stream: true},
		{name: "completions streamed", endpoint: "completions", stream: true},
		{name: "chat not streamed", endpoint: "chat", stream: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parse(t, fmt.Sprintf(`
targets:
  e: {kind: embedded, endpoint: %s, stream: %v, sim: {decode_step: 1ms}}
phases:
  capture:
    kind: requests
    repeat: 2
    requests:
      - messages: [{role: user, content: "Route Session profiling prompt."}]
        max_tokens: 4
      - prompt: "Once upon a time"
`, tc.endpoint, tc.stream), nil)
			r, err := runFirst(t, sc, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := r.Phases["capture"]
			if p.Requests != 4 || p.Succeeded != 4 {
				t.Fatalf("requests %d ok %d: %+v", p.Requests, p.Succeeded, p.Errors)
			}
			samples := p.Samples.([]report.RequestSample)
			if got := *samples[0].CompletionTokens; got != 4 {
				t.Errorf("per-request max_tokens: %d tokens, want 4", got)
			}
			if got := *samples[1].CompletionTokens; got != 16 {
				t.Errorf("phase default max_tokens: %d tokens, want 16", got)
			}
			if tc.stream != (p.TTFTMS.Count == 4) {
				t.Errorf("ttft count %d for stream=%v (a non-streamed request has no TTFT)", p.TTFTMS.Count, tc.stream)
			}
		})
	}
}

func TestArrivalClockRead(t *testing.T) {
	sc := parse(t, `
targets:
  e: {kind: embedded, arrival_clock: read, sim: {decode_step: 1ms}}
phases:
  decode: {prompt: {text: hello}, max_tokens: 4, repeat: 2}
`, nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Phases["decode"].ArrivalClock; got != "read" {
		t.Errorf("arrival clock %q, want read", got)
	}
}
