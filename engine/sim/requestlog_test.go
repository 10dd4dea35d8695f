package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// readRecords reads a request log file, failing on any incomplete line.
func readRecords(t *testing.T, path string) []RequestRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("log does not end with a whole line: %q", b)
	}
	var recs []RequestRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r RequestRecord
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestRequestLog serves requests through the real HTTP server and checks
// that each one's line agrees with what the client saw.
func TestRequestLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg := fastConfig()
	cfg.TTFTBase = 3 * time.Millisecond
	cfg.RequestLog = f
	ts := startServer(t, cfg)

	before := time.Now()
	_, events := ts.streamEvents(t, t.Context(), "/v1/chat/completions", chatBody("log me", map[string]any{
		"stream": true, "max_tokens": 5, "ignore_eos": true, "request_id": "bench-7",
	}))
	streamedID := str(t, decodeMap(t, []byte(events[0].data)), "id")
	plain := ts.postOK(t, "/v1/completions", map[string]any{"prompt": "plain", "max_tokens": 3, "ignore_eos": true})
	if status, _ := ts.do(t, http.MethodPost, "/v1/chat/completions", map[string]any{"messages": []any{}}); status != http.StatusBadRequest {
		t.Fatalf("empty messages: status %d, want 400", status)
	}
	after := time.Now()
	if err := ts.Close(); err != nil { // flushes the log
		t.Fatal(err)
	}

	if streamedID != "chatcmpl-bench-7" {
		t.Errorf("streamed id = %q, want chatcmpl-bench-7 (from request_id)", streamedID)
	}
	recs := readRecords(t, path)
	if len(recs) != 2 {
		t.Fatalf("got %d records, want 2 (a rejected request is not admitted): %+v", len(recs), recs)
	}
	tests := []struct {
		name     string
		rec      RequestRecord
		id       string
		endpoint string
		stream   bool
		tokens   int
	}{
		{"streamed chat", recs[0], streamedID, "chat", true, 5},
		{"non-streamed completion", recs[1], str(t, plain, "id"), "completions", false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.rec
			if r.ID != tt.id || r.Endpoint != tt.endpoint || r.Stream != tt.stream || r.Tokens != tt.tokens || r.Outcome != "length" {
				t.Errorf("record %+v, want id %q endpoint %q stream %v tokens %d outcome length", r, tt.id, tt.endpoint, tt.stream, tt.tokens)
			}
			if r.PromptTokens < 1 || r.CachedTokens < 0 || r.CachedTokens > r.PromptTokens {
				t.Errorf("prompt %d cached %d", r.PromptTokens, r.CachedTokens)
			}
			if r.InjectedTTFTNs < int64(cfg.TTFTBase) {
				t.Errorf("injected TTFT %v, want at least TTFTBase %v", time.Duration(r.InjectedTTFTNs), cfg.TTFTBase)
			}
			// Order, not durations: the times are wall clock on a shared host.
			arr, first, last := r.ArrivalUnixNs, r.FirstTokenSendUnixNs, r.LastTokenSendUnixNs
			if arr < before.UnixNano() || first < arr+r.InjectedTTFTNs || last < first || last > after.UnixNano() {
				t.Errorf("times out of order: before %d arrival %d (+injected %d) first %d last %d after %d",
					before.UnixNano(), arr, r.InjectedTTFTNs, first, last, after.UnixNano())
			}
		})
	}
}

// TestRequestIDs checks where the id comes from and that it is echoed in
// the X-Request-Id header and every chunk.
func TestRequestIDs(t *testing.T) {
	ts := startServer(t, fastConfig())
	tests := []struct {
		name   string
		header string
		body   map[string]any
		status int
		want   string // "" with status 200: a generated id
	}{
		{name: "generated", body: map[string]any{}, status: 200},
		{name: "body request_id", body: map[string]any{"request_id": "r-1"}, status: 200, want: "chatcmpl-r-1"},
		{name: "header wins", header: "h.2", body: map[string]any{"request_id": "r-1"}, status: 200, want: "chatcmpl-h.2"},
		{name: "unsafe characters", body: map[string]any{"request_id": `a"b`}, status: 400},
		{name: "too long", body: map[string]any{"request_id": strings.Repeat("x", maxRequestIDBytes+1)}, status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := chatBody("ids", map[string]any{"max_tokens": 2, "ignore_eos": true})
			for k, v := range tt.body {
				body[k] = v
			}
			enc, _ := json.Marshal(body)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.url+"/v1/chat/completions", bytes.NewReader(enc))
			if err != nil {
				t.Fatal(err)
			}
			if tt.header != "" {
				req.Header.Set("X-Request-Id", tt.header)
			}
			resp, err := ts.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status != 200 {
				return
			}
			var v struct {
				ID string `json:"id"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
				t.Fatal(err)
			}
			if got := resp.Header.Get("X-Request-Id"); got != v.ID {
				t.Errorf("X-Request-Id %q, body id %q: want equal", got, v.ID)
			}
			if tt.want != "" && v.ID != tt.want {
				t.Errorf("id %q, want %q", v.ID, tt.want)
			}
			if tt.want == "" && !strings.HasPrefix(v.ID, "chatcmpl-sim") {
				t.Errorf("generated id %q, want chatcmpl-sim…", v.ID)
			}
		})
	}
}

// writeLog records every Write call, to check each ends on a line boundary.
type writeLog struct {
	mu     sync.Mutex
	writes [][]byte
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, append([]byte(nil), p...))
	return len(p), nil
}

// TestRequestLogWholeLines checks the property a killed server relies on:
// every write holds whole lines, and memory stays within the buffer.
func TestRequestLogWholeLines(t *testing.T) {
	w := &writeLog{}
	l := newRequestLog(w)
	const n = 5000 // several buffers' worth
	for i := range n {
		l.add(&RequestRecord{ID: "chatcmpl-sim" + strings.Repeat("9", i%50), Outcome: "length", Tokens: i})
		if cap(l.buf) != requestLogBufBytes {
			t.Fatalf("buffer grew to %d bytes", cap(l.buf))
		}
	}
	if err := l.flush(); err != nil {
		t.Fatal(err)
	}
	lines := 0
	for i, b := range w.writes {
		if len(b) == 0 || b[len(b)-1] != '\n' {
			t.Fatalf("write %d does not end with a newline", i)
		}
		if len(b) > requestLogBufBytes {
			t.Fatalf("write %d is %d bytes, over the buffer", i, len(b))
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines != n {
		t.Fatalf("%d lines written, want %d", lines, n)
	}
	if len(w.writes) < 2 {
		t.Fatalf("%d writes: the buffer never filled", len(w.writes))
	}
}
