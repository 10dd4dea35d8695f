package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

// clientRequest is what the fault tests send: 8 tokens, ignore_eos (the
// client's default), so every stream has the same shape.
func clientRequest(stream bool) openai.Request {
	return openai.Request{
		Stream:    stream,
		Messages:  []openai.Message{{Role: "user", Content: "Explain fault injection briefly."}},
		MaxTokens: 8,
	}
}

// wantClass checks the error class (any of want; "" means success).
func wantClass(t *testing.T, res openai.Result, err error, want ...openai.ErrorClass) {
	t.Helper()
	var got openai.ErrorClass
	if err != nil {
		oe, ok := errors.AsType[*openai.Error](err)
		if !ok {
			t.Fatalf("error %v (%T) is not an *openai.Error", err, err)
		}
		got = oe.Class
	}
	for _, w := range want {
		if got == w {
			return
		}
	}
	t.Fatalf("class %q (err %v), want one of %q; result %+v", got, err, want, res)
}

// TestFaultsWithRealClient sends, for every fault kind, a request through
// tollgate's own client and checks the class the client reports, that the
// server serves a normal request afterwards, that the injection is counted
// on Stats, /v1/stats and /metrics, and that Close leaves no goroutine.
func TestFaultsWithRealClient(t *testing.T) {
	tests := []struct {
		name      string
		fault     Fault // EveryNth is set by the test: request 2 gets it
		client    openai.Config
		nonStream bool
		injected  int64 // expected count (0: the kind does not apply)
		// noFollowUp skips request 3: the retry of request 2 was the
		// server's 3rd, so its 4th (our 3rd) carries the fault again.
		noFollowUp bool
		check      func(t *testing.T, res openai.Result, err error)
	}{
		{name: "http_429", fault: Fault{Kind: FaultHTTP429, RetryAfter: 1500 * time.Millisecond}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassHTTPStatus)
				if res.Err.Status != 429 || !strings.Contains(res.Err.Message, "rate_limit_exceeded") {
					t.Errorf("error %+v, want status 429 with the OpenAI error body", res.Err)
				}
			}},
		{name: "http_503", fault: Fault{Kind: FaultHTTP503}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassHTTPStatus)
				if res.Err.Status != 503 {
					t.Errorf("status %d, want 503", res.Err.Status)
				}
			}},
		{name: "http_500", fault: Fault{Kind: FaultHTTP500}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassHTTPStatus)
				if res.Err.Status != 500 {
					t.Errorf("status %d, want 500", res.Err.Status)
				}
			}},
		// Request 2 goes out on request 1's kept-alive connection, so the
		// reset is indistinguishable from a stale connection: with the retry
		// off it is classified as one, with it on it is sent again, counted.
		{name: "reset_before_headers", fault: Fault{Kind: FaultResetBeforeHeaders}, injected: 1,
			client: openai.Config{NoStaleRetry: true},
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassStaleConnection, openai.ClassReset)
				if res.HTTPStatus != 0 {
					t.Errorf("HTTP status %d, want none", res.HTTPStatus)
				}
			}},
		{name: "reset_before_headers retried on a fresh connection", fault: Fault{Kind: FaultResetBeforeHeaders}, injected: 1, noFollowUp: true,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, "")
				if res.StaleConnectionRetries != 1 || res.HTTPStatus != 200 {
					t.Errorf("stale retries %d status %d, want 1 and 200", res.StaleConnectionRetries, res.HTTPStatus)
				}
			}},
		{name: "reset_mid_stream", fault: Fault{Kind: FaultResetMidStream, AfterTokens: 3}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassReset, openai.ClassProtocol)
				if res.HTTPStatus != 200 || res.DoneSeen {
					t.Errorf("status %d done %v, want a 200 stream cut before [DONE]", res.HTTPStatus, res.DoneSeen)
				}
			}},
		{name: "stall past the idle timeout", fault: Fault{Kind: FaultStall, Stall: time.Minute},
			client: openai.Config{IdleTimeout: 300 * time.Millisecond}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassTimeoutIdle)
				if res.SSETokenEvents < 1 {
					t.Errorf("%d token events, want the first before the stall", res.SSETokenEvents)
				}
			}},
		{name: "stall then continue", fault: Fault{Kind: FaultStall, Stall: 200 * time.Millisecond}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, "")
				if res.E2EMS < 200 || !res.DoneSeen || *res.CompletionTokens != 8 {
					t.Errorf("e2e %.0f ms done %v tokens %d, want ≥ 200 ms and a complete stream", res.E2EMS, res.DoneSeen, *res.CompletionTokens)
				}
				gap := 0.0
				for _, d := range res.ITLMS {
					gap = max(gap, d)
				}
				if gap < 200 {
					t.Errorf("largest inter-token gap %.0f ms, want the stall (≥ 200 ms)", gap)
				}
			}},
		{name: "slow_trickle", fault: Fault{Kind: FaultSlowTrickle, TrickleInterval: time.Millisecond}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, "")
				// ~1.5 kB in 16-byte writes, each followed by ≥ 1 ms.
				if res.E2EMS < 50 || !res.DoneSeen || !res.UsageSeen || *res.CompletionTokens != 8 {
					t.Errorf("e2e %.0f ms done %v usage %v, want a complete stream taking ≥ 50 ms", res.E2EMS, res.DoneSeen, res.UsageSeen)
				}
			}},
		{name: "malformed_json", fault: Fault{Kind: FaultMalformedJSON}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassProtocol)
			}},
		{name: "missing_data_prefix", fault: Fault{Kind: FaultMissingDataPrefix, AfterTokens: 2}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				// A line with an unknown field is legal SSE and ignored: the
				// event (and its token) is silently lost, usage still says 8.
				wantClass(t, res, err, "")
				if res.SSETokenEvents != 7 || *res.CompletionTokens != 8 || !res.DoneSeen {
					t.Errorf("token events %d, completion tokens %d, done %v; want 7, 8, true", res.SSETokenEvents, *res.CompletionTokens, res.DoneSeen)
				}
			}},
		{name: "invalid_utf8", fault: Fault{Kind: FaultInvalidUTF8}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				// Whatever the client makes of it: it must return (no hang,
				// no panic); the class is logged for the report.
				t.Logf("invalid_utf8: err %v, token events %d, text bytes %d, done %v", err, res.SSETokenEvents, res.OutputTextBytes, res.DoneSeen)
				wantClass(t, res, err, "", openai.ClassProtocol)
			}},
		{name: "huge_line", fault: Fault{Kind: FaultHugeLine}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassProtocol)
				if _, ok := errors.AsType[*sse.LimitError](err); !ok {
					t.Errorf("error %v does not wrap *sse.LimitError", err)
				}
			}},
		{name: "missing_usage", fault: Fault{Kind: FaultMissingUsage}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, "")
				if res.UsageSeen || !res.DoneSeen || res.TokenCountSource != openai.SourceSSEEvents || *res.CompletionTokens != 8 {
					t.Errorf("usage %v done %v source %q tokens %d; want false, true, sse_events, 8",
						res.UsageSeen, res.DoneSeen, res.TokenCountSource, *res.CompletionTokens)
				}
			}},
		{name: "missing_done", fault: Fault{Kind: FaultMissingDone}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, "")
				if res.DoneSeen || !res.UsageSeen || *res.CompletionTokens != 8 {
					t.Errorf("done %v usage %v tokens %d; want false, true, 8", res.DoneSeen, res.UsageSeen, *res.CompletionTokens)
				}
			}},
		{name: "wrong_content_type", fault: Fault{Kind: FaultWrongContentType}, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassProtocol)
				if res.HTTPStatus != 200 {
					t.Errorf("status %d, want 200", res.HTTPStatus)
				}
			}},
		{name: "non-stream http_429", fault: Fault{Kind: FaultHTTP429}, nonStream: true, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassHTTPStatus)
			}},
		{name: "non-stream reset_mid_stream", fault: Fault{Kind: FaultResetMidStream}, nonStream: true, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassReset)
			}},
		// The fault cuts a whole body inside its JSON: truncated.
		{name: "non-stream malformed_json", fault: Fault{Kind: FaultMalformedJSON}, nonStream: true, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, openai.ClassTruncated)
			}},
		{name: "non-stream slow_trickle", fault: Fault{Kind: FaultSlowTrickle, TrickleInterval: time.Millisecond}, nonStream: true, injected: 1,
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, "")
				if res.E2EMS < 10 || *res.CompletionTokens != 8 {
					t.Errorf("e2e %.0f ms tokens %v, want ≥ 10 ms and 8 tokens", res.E2EMS, res.CompletionTokens)
				}
			}},
		{name: "non-stream stall does not apply", fault: Fault{Kind: FaultStall, Stall: time.Minute}, nonStream: true, injected: 0,
			client: openai.Config{TotalTimeout: 20 * time.Second},
			check: func(t *testing.T, res openai.Result, err error) {
				wantClass(t, res, err, "")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			cfg := fastConfig()
			tt.fault.EveryNth = 2
			cfg.Faults = []Fault{tt.fault}
			s, err := New(cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			url, err := s.Start(t.Context(), "127.0.0.1:0")
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			ccfg := tt.client
			ccfg.BaseURL = url
			if ccfg.TotalTimeout == 0 {
				ccfg.TotalTimeout = 60 * time.Second // a hang guard, not a bound
			}
			c, err := openai.New(ccfg)
			if err != nil {
				t.Fatalf("openai.New: %v", err)
			}

			// Request 1 is clean, 2 carries the fault, 3 shows the server
			// is still healthy (on the same client and pool).
			if res, err := c.Stream(t.Context(), clientRequest(!tt.nonStream)); err != nil {
				t.Fatalf("request 1: %v (%+v)", err, res)
			}
			res, err := c.Stream(t.Context(), clientRequest(!tt.nonStream))
			if err != nil {
				t.Logf("%s: client reports %v", tt.name, err)
			}
			tt.check(t, res, err)
			if !tt.noFollowUp {
				if res, err := c.Stream(t.Context(), clientRequest(true)); err != nil || !res.DoneSeen || *res.CompletionTokens != 8 {
					t.Fatalf("request 3 after the fault: %v (%+v)", err, res)
				}
			}

			if got := s.Stats().FaultsInjected[tt.fault.Kind]; got != tt.injected {
				t.Errorf("Stats().FaultsInjected[%s] = %d, want %d", tt.fault.Kind, got, tt.injected)
			}
			checkFaultEndpoints(t, url, tt.fault.Kind, tt.injected)

			c.Close()
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			waitGoroutines(t, before)
		})
	}
}

// checkFaultEndpoints reads the injection count from /v1/stats and /metrics;
// neither endpoint is ever faulted.
func checkFaultEndpoints(t *testing.T, url, kind string, want int64) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) []byte {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d, %v", path, resp.StatusCode, err)
		}
		return b
	}
	var st Stats
	if err := json.Unmarshal(get("/v1/stats"), &st); err != nil {
		t.Fatalf("decode /v1/stats: %v", err)
	}
	if got := st.FaultsInjected[kind]; got != want {
		t.Errorf("/v1/stats faults_injected[%s] = %d, want %d", kind, got, want)
	}
	line := `tollgate_sim_faults_injected_total{kind="` + kind + `"} `
	metrics := string(get("/metrics"))
	if !strings.Contains(metrics, line+itoa(want)+"\n") {
		t.Errorf("/metrics lacks %q%d:\n%s", line, want, metrics)
	}
}

// TestFaultStatusResponses checks what the status faults send on the wire
// and that non-generation endpoints are never faulted.
func TestFaultStatusResponses(t *testing.T) {
	tests := []struct {
		name       string
		fault      Fault
		status     int
		retryAfter string
		errType    string
	}{
		{"429 rounds Retry-After up", Fault{Kind: FaultHTTP429, RetryAfter: 1500 * time.Millisecond}, 429, "2", "requests"},
		{"503 default Retry-After", Fault{Kind: FaultHTTP503}, 503, "1", "server_error"},
		{"500 has no Retry-After", Fault{Kind: FaultHTTP500}, 500, "", "server_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			tt.fault.Probability = 1
			cfg.Faults = []Fault{tt.fault}
			ts := startServer(t, cfg)
			for _, path := range []string{"/health", "/version", "/v1/models", "/v1/stats", "/metrics", "/v1/cache/status"} {
				if status, body := ts.do(t, http.MethodGet, path, nil); status != http.StatusOK {
					t.Errorf("GET %s: status %d (%s), want 200: only generation is faulted", path, status, body)
				}
			}
			if status, _ := ts.do(t, http.MethodPost, "/tokenize", map[string]any{"prompt": "hi"}); status != http.StatusOK {
				t.Errorf("POST /tokenize: status %d, want 200", status)
			}
			for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
				body := chatBody("hi", map[string]any{"prompt": "hi", "max_tokens": 2})
				enc, _ := json.Marshal(body)
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.url+path, strings.NewReader(string(enc)))
				resp, err := ts.client.Do(req)
				if err != nil {
					t.Fatalf("POST %s: %v", path, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.status || resp.Header.Get("Retry-After") != tt.retryAfter {
					t.Errorf("POST %s: status %d Retry-After %q, want %d %q", path, resp.StatusCode, resp.Header.Get("Retry-After"), tt.status, tt.retryAfter)
				}
				m := decodeMap(t, b)
				if got := str(t, m, "error.type"); got != tt.errType {
					t.Errorf("error.type = %q, want %q", got, tt.errType)
				}
				str(t, m, "error.message")
			}
		})
	}
}

// TestFaultEveryNth checks that EveryNth hits exactly requests N, 2N, ...
func TestFaultEveryNth(t *testing.T) {
	cfg := fastConfig()
	cfg.Faults = []Fault{{Kind: FaultHTTP503, EveryNth: 3}}
	ts := startServer(t, cfg)
	for i := 1; i <= 10; i++ {
		status, body := ts.do(t, http.MethodPost, "/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1})
		want := http.StatusOK
		if i%3 == 0 {
			want = http.StatusServiceUnavailable
		}
		if status != want {
			t.Errorf("request %d: status %d (%s), want %d", i, status, body, want)
		}
	}
	// Invalid requests are not numbered: they would shift the pattern.
	if status, _ := ts.do(t, http.MethodPost, "/v1/completions", map[string]any{"max_tokens": 1}); status != http.StatusBadRequest {
		t.Errorf("invalid request: status %d, want 400", status)
	}
	if status, _ := ts.do(t, http.MethodPost, "/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1}); status != http.StatusOK {
		t.Errorf("request 11: status %d, want 200", status)
	}
	if status, _ := ts.do(t, http.MethodPost, "/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1}); status != http.StatusServiceUnavailable {
		t.Errorf("request 12: status %d, want 503", status)
	}
	st := ts.Stats()
	if st.FaultsInjected[FaultHTTP503] != 4 || st.Requests != 12 || st.Succeeded != 8 || st.Aborted != 0 {
		t.Errorf("stats %+v, want 4 faults, 12 requests, 8 succeeded, 0 aborted", st)
	}
}

// TestFaultProbabilityDeterministic checks that a seed fixes which requests
// are faulted, end to end and in the planner.
func TestFaultProbabilityDeterministic(t *testing.T) {
	pattern := func(seed int64) string {
		cfg := fastConfig()
		cfg.Seed = seed
		cfg.Faults = []Fault{{Kind: FaultHTTP500, Probability: 0.3}}
		ts := startServer(t, cfg)
		var b strings.Builder
		for range 40 {
			status, _ := ts.do(t, http.MethodPost, "/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1})
			if status == http.StatusInternalServerError {
				b.WriteByte('X')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, again, other := pattern(7), pattern(7), pattern(8)
	if a != again {
		t.Errorf("same seed, different faults:\n%s\n%s", a, again)
	}
	if a == other {
		t.Errorf("seeds 7 and 8 gave the same faults %s", a)
	}
	if n := strings.Count(a, "X"); n == 0 || n == len(a) {
		t.Errorf("pattern %s: want some faulted and some clean requests", a)
	}

	// The planner alone: the rate is near the probability, and the draw of
	// a later fault does not depend on whether an earlier one matched.
	cfg := Config{Seed: 3, Faults: []Fault{{Kind: FaultHTTP429, EveryNth: 2}, {Kind: FaultHTTP500, Probability: 0.25}}}
	p := newFaultPlan(&cfg)
	alone := newFaultPlan(&Config{Seed: 3, Faults: []Fault{{Kind: FaultHTTP500, Probability: 0.25}}})
	hits := 0
	for n := int64(1); n <= 10_000; n++ {
		f, g := p.pick(n, true), alone.pick(n, true)
		if n%2 == 0 {
			if f == nil || f.kind != fkHTTP429 {
				t.Fatalf("request %d: %+v, want the EveryNth fault first", n, f)
			}
		} else if (f != nil) != (g != nil) {
			t.Fatalf("request %d: %+v vs alone %+v: the 500 draw moved", n, f, g)
		}
		if g != nil {
			hits++
		}
		if h := alone.pick(n, true); (h != nil) != (g != nil) {
			t.Fatalf("request %d: picked twice, different answers", n)
		}
	}
	if hits < 2000 || hits > 3000 {
		t.Errorf("%d of 10000 requests faulted at p=0.25", hits)
	}
}

func TestFaultValidation(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		want  []string // substrings of the error; nil means valid
	}{
		{"valid probability", Fault{Kind: FaultStall, Probability: 0.5}, nil},
		{"valid every nth", Fault{Kind: FaultHTTP429, EveryNth: 4, RetryAfter: time.Second}, nil},
		{"typo gets a suggestion", Fault{Kind: "http-492", EveryNth: 1}, []string{`unknown kind "http-492"`, `did you mean "http_429"`}},
		{"far name lists kinds", Fault{Kind: "explode", EveryNth: 1}, []string{`unknown kind "explode"`, "valid kinds: http_429"}},
		{"both selectors", Fault{Kind: FaultHTTP500, EveryNth: 2, Probability: 0.5}, []string{"not both"}},
		{"neither selector", Fault{Kind: FaultHTTP500}, []string{"exactly one of Probability and EveryNth"}},
		{"probability above 1", Fault{Kind: FaultHTTP500, Probability: 1.5}, []string{"Probability must be in (0, 1]"}},
		{"negative every nth", Fault{Kind: FaultHTTP500, EveryNth: -1}, []string{"EveryNth must be positive"}},
		{"negative durations", Fault{Kind: FaultStall, EveryNth: 1, Stall: -time.Second, AfterTokens: -1}, []string{"Stall must not be negative", "AfterTokens must not be negative"}},
		{"field of another kind", Fault{Kind: FaultHTTP500, EveryNth: 1, Stall: time.Second}, []string{"Stall applies only to stall"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.Faults = []Fault{tt.fault}
			s, err := New(cfg)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				_ = s.Close()
				return
			}
			if err == nil {
				_ = s.Close()
				t.Fatalf("New accepted %+v", tt.fault)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}

	t.Run("all problems at once", func(t *testing.T) {
		cfg := fastConfig()
		cfg.DecodeStep = -1
		cfg.Faults = []Fault{{Kind: "stal", EveryNth: 1}, {Kind: FaultHTTP429}, {Kind: FaultSlowTrickle, Probability: 2, TrickleInterval: -1}}
		_, err := New(cfg)
		if err == nil {
			t.Fatal("New accepted four invalid settings")
		}
		for _, w := range []string{"DecodeStep", `Faults[0] (stal): unknown kind "stal" (did you mean "stall"?)`, "Faults[1]", "Faults[2] (slow_trickle): Probability", "Faults[2] (slow_trickle): TrickleInterval"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error lacks %q:\n%v", w, err)
			}
		}
	})

	t.Run("defaults and no aliasing", func(t *testing.T) {
		in := []Fault{{Kind: FaultStall, EveryNth: 1}, {Kind: FaultHTTP429, EveryNth: 1}, {Kind: FaultSlowTrickle, EveryNth: 1}}
		s, err := New(Config{Faults: in})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		got := s.Config().Faults
		if got[0].Stall != DefaultFaultStall || got[0].AfterTokens != DefaultFaultAfterTokens ||
			got[1].RetryAfter != DefaultFaultRetryAfter || got[2].TrickleInterval != DefaultFaultTrickleInterval {
			t.Errorf("defaults not applied: %+v", got)
		}
		if in[0].Stall != 0 {
			t.Errorf("New wrote defaults into the caller's slice: %+v", in[0])
		}
		got[0].Kind = "changed"
		if s.Config().Faults[0].Kind != FaultStall {
			t.Error("Config() exposes the Server's fault slice")
		}
	})
}

// TestFaultStallHonoursClose checks that a stalled stream ends when the
// Server closes, long before the stall would.
func TestFaultStallHonoursClose(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := fastConfig()
	cfg.Faults = []Fault{{Kind: FaultStall, EveryNth: 1, Stall: time.Hour}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := openai.New(openai.Config{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res openai.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.Stream(t.Context(), clientRequest(true))
		done <- outcome{res, err}
	}()
	for s.Stats().FaultsInjected[FaultStall] == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case o := <-done:
		// Close cuts the stream; depending on whether the handler returns
		// before the connection is closed, the client sees a reset or a
		// clean end of a stream that lacks both finish_reason and [DONE]
		// (truncated). Either way it is not complete.
		wantClass(t, o.res, o.err, openai.ClassReset, openai.ClassTruncated)
		if o.res.DoneSeen {
			t.Errorf("stream cut by Close reports [DONE]: %+v", o.res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("client still waiting 30 s after Close")
	}
	c.Close()
	waitGoroutines(t, before)
}

// flushOnly hides http.Hijacker (as HTTP/2 or a logging middleware does), so
// resets must fall back to http.ErrAbortHandler.
type flushOnly struct{ w http.ResponseWriter }

func (f flushOnly) Header() http.Header         { return f.w.Header() }
func (f flushOnly) Write(b []byte) (int, error) { return f.w.Write(b) }
func (f flushOnly) WriteHeader(code int)        { f.w.WriteHeader(code) }
func (f flushOnly) Flush()                      { f.w.(http.Flusher).Flush() }

func TestFaultResetWithoutHijacker(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
	}{
		{"reset_before_headers", Fault{Kind: FaultResetBeforeHeaders, EveryNth: 1}},
		{"reset_mid_stream", Fault{Kind: FaultResetMidStream, EveryNth: 1, AfterTokens: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			cfg := fastConfig()
			cfg.Faults = []Fault{tt.fault}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			h := s.Handler()
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(flushOnly{w}, r)
			}))
			c, err := openai.New(openai.Config{BaseURL: hs.URL, TotalTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Stream(t.Context(), clientRequest(true))
			t.Logf("%s without Hijacker: client reports %v", tt.name, err)
			wantClass(t, res, err, openai.ClassReset)
			if got := s.Stats().FaultsInjected[tt.fault.Kind]; got != 1 {
				t.Errorf("FaultsInjected[%s] = %d, want 1", tt.fault.Kind, got)
			}
			c.Close()
			hs.Close()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			waitGoroutines(t, before)
		})
	}
}
