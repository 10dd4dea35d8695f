package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // substring; empty means valid
	}{
		{"zero value takes defaults", Config{}, ""},
		{"negative TTFTBase", Config{TTFTBase: -1}, "TTFTBase"},
		{"negative prefill rate", Config{PrefillTokensPerS: -5}, "PrefillTokensPerS"},
		{"negative decode step", Config{DecodeStep: -time.Millisecond}, "DecodeStep"},
		{"negative per-seq step", Config{DecodeStepPerSeq: -1}, "DecodeStepPerSeq"},
		{"negative slots", Config{MaxRunningSeqs: -1}, "MaxRunningSeqs"},
		{"cache smaller than a block", Config{CacheCapacityTokens: 8, BlockTokens: 16}, "CacheCapacityTokens"},
		{"disabled cache ignores capacity", Config{CacheCapacityTokens: 8, BlockTokens: 16, DisablePrefixCache: true}, ""},
		{"negative block", Config{BlockTokens: -16}, "BlockTokens"},
		{"negative default max tokens", Config{DefaultMaxTokens: -1}, "DefaultMaxTokens"},
		{"tiny context", Config{MaxModelLen: 1}, "MaxModelLen"},
		{"several at once", Config{TTFTBase: -1, MaxRunningSeqs: -1}, "MaxRunningSeqs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("New accepted an invalid config")
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not mention %s", err, tt.wantErr)
			}
			if s != nil {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
		})
	}
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Config(); !reflect.DeepEqual(got, DefaultConfig()) {
		t.Errorf("Config() = %+v, want the defaults %+v", got, DefaultConfig())
	}
}

func TestMaxRunningSeqsNeverExceeded(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxRunningSeqs = 4
	cfg.DecodeStep = 2 * time.Millisecond
	ts := startServer(t, cfg)

	const clients = 50
	var wg sync.WaitGroup
	sawWaiting := make(chan struct{}, 1)
	stopWatch := make(chan struct{})
	go func() { // observe the queue while clients run
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(time.Millisecond):
			}
			if st := ts.Stats(); st.Waiting > 0 {
				select {
				case sawWaiting <- struct{}{}:
				default:
				}
			}
		}
	}()
	for i := range clients {
		wg.Go(func() {
			stream := i%2 == 0
			body := chatBody(fmt.Sprintf("client %d", i), map[string]any{"max_tokens": 5, "ignore_eos": true, "stream": stream})
			var err error
			if stream {
				_, _, err = ts.tryStream(t.Context(), "/v1/chat/completions", body)
			} else {
				_, err = ts.tryPost(t.Context(), "/v1/chat/completions", body)
			}
			if err != nil {
				t.Errorf("client %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	close(stopWatch)

	st := ts.Stats()
	if st.PeakRunning > 4 {
		t.Errorf("peak running = %d, above MaxRunningSeqs 4", st.PeakRunning)
	}
	if st.PeakRunning < 1 {
		t.Errorf("peak running = %d", st.PeakRunning)
	}
	if st.Succeeded != clients || st.Requests != clients {
		t.Errorf("requests %d, succeeded %d; want %d each", st.Requests, st.Succeeded, clients)
	}
	if st.Running != 0 || st.Waiting != 0 {
		t.Errorf("after all clients: running %d, waiting %d", st.Running, st.Waiting)
	}
	if st.GenerationTokens != clients*5 {
		t.Errorf("generation tokens = %d, want %d", st.GenerationTokens, clients*5)
	}
	select {
	case <-sawWaiting:
	default:
		t.Errorf("50 clients on 4 slots never showed a waiting request")
	}
}

// ttft measures request start → first event with non-empty content.
func ttft(t *testing.T, ts *testServer, body map[string]any) time.Duration {
	t.Helper()
	start, events := ts.streamEvents(t, t.Context(), "/v1/completions", body)
	for _, e := range events {
		if strings.Contains(e.data, `"text":"`) && !strings.Contains(e.data, `"text":""`) {
			return e.at.Sub(start)
		}
	}
	t.Fatalf("no content event")
	return 0
}

// TTFT is at least TTFTBase plus the prefill of the prompt's uncached
// tokens, which the server reports in usage. Only that floor is asserted:
// sleeps never end early, but on a loaded machine any request may be late,
// so no upper bound and no order between requests is guaranteed.
func TestTTFTGrowsWithUncachedPrompt(t *testing.T) {
	cfg := fastConfig()
	cfg.PrefillTokensPerS = 20_000 // 4,000 tokens: 200 ms
	ts := startServer(t, cfg)
	type res struct {
		ttft             time.Duration
		prompt, uncached int
	}
	send := func(prompt []int) res {
		start, events := ts.streamEvents(t, t.Context(), "/v1/completions", map[string]any{
			"prompt": prompt, "max_tokens": 2, "ignore_eos": true, "stream": true,
			"stream_options": map[string]any{"include_usage": true},
		})
		var r res
		for _, e := range events {
			if r.ttft == 0 && strings.Contains(e.data, `"text":"`) && !strings.Contains(e.data, `"text":""`) {
				r.ttft = e.at.Sub(start)
			}
			var m map[string]any
			if json.Unmarshal([]byte(e.data), &m) == nil && m["usage"] != nil {
				r.prompt = num(t, m, "usage.prompt_tokens")
				r.uncached = r.prompt - num(t, m, "usage.prompt_tokens_details.cached_tokens")
			}
		}
		if r.ttft == 0 || r.prompt == 0 {
			t.Fatalf("no content or no usage in %v", events)
		}
		return r
	}
	floor := func(uncached int) time.Duration {
		return cfg.TTFTBase + time.Duration(float64(uncached)/cfg.PrefillTokensPerS*float64(time.Second))
	}
	long := tokenIDs(2, 4000)
	for _, tc := range []struct {
		name         string
		prompt       []int
		wantUncached func(int) bool
	}{
		{name: "small cold prompt", prompt: tokenIDs(1, 10), wantUncached: func(n int) bool { return n == 10 }},
		{name: "large cold prompt", prompt: long, wantUncached: func(n int) bool { return n == 4000 }},
		// The repeat is served from the cache, all but at most its last block.
		{name: "large repeat", prompt: long, wantUncached: func(n int) bool { return n >= 0 && n <= 16 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := send(tc.prompt)
			if r.prompt != len(tc.prompt) || !tc.wantUncached(r.uncached) {
				t.Errorf("usage: %d prompt tokens, %d uncached", r.prompt, r.uncached)
			}
			if f := floor(r.uncached); r.ttft < f {
				t.Errorf("TTFT %v is earlier than the model allows (%v for %d uncached tokens)", r.ttft, f, r.uncached)
			}
		})
	}
}

// Queueing is part of TTFT: with one slot, a second request waits for the first.
func TestTTFTIncludesQueueing(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxRunningSeqs = 1
	cfg.DecodeStep = 10 * time.Millisecond
	ts := startServer(t, cfg)
	body := func(i int) map[string]any {
		return map[string]any{"prompt": tokenIDs(i, 8), "max_tokens": 30, "ignore_eos": true, "stream": true}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, _, err := ts.tryStream(t.Context(), "/v1/completions", body(1)); err != nil {
			t.Errorf("first request: %v", err)
		}
	})
	// Wait until the first request holds the slot.
	for ts.Stats().Running == 0 {
		time.Sleep(time.Millisecond)
	}
	queued := ttft(t, ts, body(2))
	wg.Wait()
	// The first holds the slot for ~29 steps of 10 ms.
	if queued < 150*time.Millisecond {
		t.Errorf("queued request TTFT %v, want at least 150ms of queueing", queued)
	}
}

func TestClientCancelFreesSlotAndLeaksNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := fastConfig()
	cfg.MaxRunningSeqs = 1
	cfg.DecodeStep = 20 * time.Millisecond
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	ts := &testServer{Server: s, url: url, client: &http.Client{Transport: tr}}

	// A long stream takes the only slot; read until its first token, then hang up.
	ctx, cancel := context.WithCancel(t.Context())
	long := chatBody("long", map[string]any{"max_tokens": 10_000, "ignore_eos": true, "stream": true})
	firstToken := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(mustJSON(t, long)))
		resp, err := ts.client.Do(req)
		if err != nil {
			t.Errorf("long request: %v", err)
			close(firstToken)
			return
		}
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		var seen strings.Builder
		for {
			n, err := resp.Body.Read(buf)
			seen.Write(buf[:n])
			if strings.Count(seen.String(), "data: ") >= 2 { // role chunk, then the first token
				close(firstToken)
				break
			}
			if err != nil {
				t.Errorf("long stream ended before its first token: %v", err)
				close(firstToken)
				return
			}
		}
		<-ctx.Done()
	}()
	<-firstToken

	// A queued request is waiting behind it.
	queued := make(chan map[string]any, 1)
	go func() {
		m, err := ts.tryPost(t.Context(), "/v1/chat/completions", chatBody("short", map[string]any{"max_tokens": 2, "ignore_eos": true}))
		if err != nil {
			t.Errorf("queued request: %v", err)
		}
		queued <- m
	}()
	for ts.Stats().Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	select {
	case m := <-queued:
		if m == nil {
			break
		}
		if got := num(t, m, "usage.completion_tokens"); got != 2 {
			t.Errorf("queued request completion_tokens = %d", got)
		}
	case <-time.After(10 * time.Second): // far beyond 10,000 × 20 ms would be minutes
		t.Fatalf("queued request still waiting 10s after the slot holder hung up")
	}
	if st := s.Stats(); st.Aborted != 1 || st.Running != 0 {
		t.Errorf("after cancel: aborted %d, running %d; want 1, 0", st.Aborted, st.Running)
	}

	tr.CloseIdleConnections()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitGoroutines(t, before)
}

// Close must wake and end in-flight requests, not wait for them to finish.
func TestCloseEndsInFlightRequests(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := fastConfig()
	cfg.MaxRunningSeqs = 1
	cfg.DecodeStep = 20 * time.Millisecond
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	ts := &testServer{Server: s, url: url, client: &http.Client{Transport: tr}}
	var wg sync.WaitGroup
	for i := range 3 { // one decoding, two waiting
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(t.Context(), "POST", url+"/v1/chat/completions",
				strings.NewReader(mustJSON(t, chatBody(fmt.Sprint(i), map[string]any{"max_tokens": 10_000, "ignore_eos": true}))))
			if resp, err := ts.client.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	for st := s.Stats(); st.Running != 1 || st.Waiting != 2; st = s.Stats() {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with requests in flight")
	}
	wg.Wait()
	tr.CloseIdleConnections()
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	waitGoroutines(t, before)
}

func TestStartStopsWhenContextEnds(t *testing.T) {
	s, err := New(fastConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	url, err := s.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	get := func() error {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", url+"/health", nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	if err := get(); err != nil {
		t.Fatalf("before cancel: %v", err)
	}
	if _, err := s.Start(t.Context(), "127.0.0.1:0"); err == nil {
		t.Errorf("second Start succeeded")
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for get() == nil {
		if time.Now().After(deadline) {
			t.Fatal("server still answering 10s after its context ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := s.Start(t.Context(), "127.0.0.1:0"); !errors.Is(err, errClosed) {
		t.Errorf("Start after close: %v, want errClosed", err)
	}
}

// Decode steps slow down as the batch grows (continuous batching). The
// per-sequence cost is set large so the effect dwarfs timer noise.
func TestDecodeStepGrowsWithBatch(t *testing.T) {
	cfg := fastConfig()
	cfg.DecodeStep = 2 * time.Millisecond
	cfg.DecodeStepPerSeq = 2 * time.Millisecond
	ts := startServer(t, cfg)
	run := func(n int) time.Duration {
		var wg sync.WaitGroup
		start := time.Now()
		for i := range n {
			wg.Go(func() {
				if _, err := ts.tryPost(t.Context(), "/v1/completions", map[string]any{"prompt": tokenIDs(100+i, 4), "max_tokens": 21, "ignore_eos": true}); err != nil {
					t.Errorf("sequence %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	one := run(1)      // 20 steps × 2 ms ≈ 40 ms
	sixteen := run(16) // 20 steps × (2 + 15×2) ms ≈ 640 ms
	// Timed sleeps only run late, never early: 16 sequences take at least
	// their modelled ~640 ms whatever the machine does.
	if sixteen < 500*time.Millisecond || sixteen <= one {
		t.Errorf("1 sequence took %v, 16 took %v: want the batch markedly slower", one, sixteen)
	}
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", n, want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mustJSON(t *testing.T, v map[string]any) string {
	t.Helper()
	var b strings.Builder
	if err := jsonEncode(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
