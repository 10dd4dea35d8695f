package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fastConfig keeps tests quick while leaving every mechanism switched on.
func fastConfig() Config {
	return Config{
		TTFTBase:          time.Millisecond,
		PrefillTokensPerS: 1e7,
		DecodeStep:        time.Millisecond,
		DecodeStepPerSeq:  time.Microsecond,
	}
}

type testServer struct {
	*Server
	url    string
	client *http.Client
}

// startServer starts a Server on a loopback port with its own client; both
// are cleaned up when the test ends.
func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	url, err := s.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	ts := &testServer{Server: s, url: url, client: &http.Client{Transport: tr}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ts
}

// do sends a request and returns status and body.
func (ts *testServer) do(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, ts.url+path, rd)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp.StatusCode, out
}

// postOK posts body and decodes a 200 JSON response into a map.
func (ts *testServer) postOK(t testing.TB, path string, body any) map[string]any {
	t.Helper()
	status, out := ts.do(t, http.MethodPost, path, body)
	if status != http.StatusOK {
		t.Fatalf("POST %s: status %d, body %s", path, status, out)
	}
	return decodeMap(t, out)
}

func (ts *testServer) getOK(t testing.TB, path string) map[string]any {
	t.Helper()
	status, out := ts.do(t, http.MethodGet, path, nil)
	if status != http.StatusOK {
		t.Fatalf("GET %s: status %d, body %s", path, status, out)
	}
	return decodeMap(t, out)
}

func decodeMap(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return m
}

// sseEvent is one "data:" event with the time it arrived.
type sseEvent struct {
	data string
	at   time.Time
}

// streamEvents posts a streamed request and returns every data event in
// order; the last one is "[DONE]" for a complete stream.
func (ts *testServer) streamEvents(t testing.TB, ctx context.Context, path string, body any) (start time.Time, events []sseEvent) {
	t.Helper()
	start, events, err := ts.tryStream(ctx, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return start, events
}

// tryStream is streamEvents for goroutines other than the test's own.
func (ts *testServer) tryStream(ctx context.Context, path string, body any) (start time.Time, events []sseEvent, err error) {
	enc, err := json.Marshal(body)
	if err != nil {
		return start, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+path, bytes.NewReader(enc))
	if err != nil {
		return start, nil, err
	}
	start = time.Now()
	resp, err := ts.client.Do(req)
	if err != nil {
		return start, nil, fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return start, nil, fmt.Errorf("POST %s: status %d: %s", path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		return start, nil, fmt.Errorf("Content-Type = %q, want text/event-stream", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return start, events, fmt.Errorf("unexpected SSE line %q", line)
		}
		events = append(events, sseEvent{data: data, at: time.Now()})
	}
	if err := sc.Err(); err != nil {
		return start, events, fmt.Errorf("read stream: %w", err)
	}
	if len(events) == 0 || events[len(events)-1].data != "[DONE]" {
		return start, events, fmt.Errorf("stream did not end with [DONE]")
	}
	return start, events, nil
}

// tryPost posts body and decodes a 200 JSON response, for goroutines other
// than the test's own.
func (ts *testServer) tryPost(ctx context.Context, path string, body any) (map[string]any, error) {
	enc, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+path, bytes.NewReader(enc))
	if err != nil {
		return nil, err
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("POST %s: read body: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s: status %d: %s", path, resp.StatusCode, out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("POST %s: decode: %w", path, err)
	}
	return m, nil
}

// num reads a JSON number at a dotted path such as "usage.prompt_tokens".
func num(t testing.TB, m map[string]any, path string) int {
	t.Helper()
	v := dig(t, m, path)
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%s = %v (%T), want a number", path, v, v)
	}
	return int(f)
}

func str(t testing.TB, m map[string]any, path string) string {
	t.Helper()
	v := dig(t, m, path)
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%s = %v (%T), want a string", path, v, v)
	}
	return s
}

func dig(t testing.TB, m map[string]any, path string) any {
	t.Helper()
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[k]
			if !ok {
				t.Fatalf("%s: no key %q in %v", path, k, c)
			}
			cur = v
		case []any:
			var i int
			if err := json.Unmarshal([]byte(k), &i); err != nil || i >= len(c) {
				t.Fatalf("%s: bad index %q into %d elements", path, k, len(c))
			}
			cur = c[i]
		default:
			t.Fatalf("%s: cannot index %T with %q", path, cur, k)
		}
	}
	return cur
}

func chatBody(content string, extra map[string]any) map[string]any {
	b := map[string]any{
		"model":    "tollgate-sim",
		"messages": []map[string]any{{"role": "user", "content": content}},
	}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// tokenIDs returns n distinct-looking token ids starting from base.
func tokenIDs(base, n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = (base*7919 + i*104729) % regularVocab
	}
	return ids
}

func jsonEncode(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
