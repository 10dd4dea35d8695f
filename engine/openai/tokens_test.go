package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/engine/transport"
)

// templateOverhead mimics a chat template's extra tokens.
const templateOverhead = 5

// wsCount is the test servers' tokenizer: whitespace-separated words.
func wsCount(messages []Message) int {
	n := 0
	for _, m := range messages {
		n += len(strings.Fields(m.Content))
	}
	return n + templateOverhead
}

// tokenServer answers only the counting method it is told to support.
func tokenServer(t *testing.T, method, tokenizeForm string, requests *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		var body struct {
			Model    string    `json:"model"`
			Messages []Message `json:"messages"`
			Prompt   *string   `json:"prompt"`
			Content  *string   `json:"content"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case method == transport.MethodCountTokens && r.URL.Path == "/v1/messages/count_tokens":
			fmt.Fprintf(w, `{"input_tokens":%d}`, wsCount(body.Messages))
		case method == transport.MethodTokenize && r.URL.Path == "/tokenize":
			switch {
			case tokenizeForm == "messages" && body.Messages != nil:
				fmt.Fprintf(w, `{"count":%d,"max_model_len":32768,"tokens":[]}`, wsCount(body.Messages))
			case tokenizeForm == "content" && body.Content != nil: // llama.cpp
				n := len(strings.Fields(*body.Content))
				toks := make([]int, n)
				b, _ := json.Marshal(map[string]any{"tokens": toks})
				w.Write(b)
			default:
				http.Error(w, `{"error":"unsupported form"}`, http.StatusBadRequest)
			}
		case method == transport.MethodProbe && r.URL.Path == "/v1/chat/completions":
			fmt.Fprintf(w, `{"choices":[{"message":{"content":"x"},"finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":1}}`,
				wsCount(body.Messages))
		default:
			http.NotFound(w, r)
		}
	}))
}

func TestCountTokensAndCalibrate(t *testing.T) {
	tests := []struct {
		name, method, form string
		overhead           int
	}{
		{"count_tokens endpoint", transport.MethodCountTokens, "", templateOverhead},
		{"vLLM /tokenize with messages", transport.MethodTokenize, "messages", templateOverhead},
		{"llama.cpp /tokenize with content", transport.MethodTokenize, "content", 0},
		{"probe completion", transport.MethodProbe, "", templateOverhead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			srv := tokenServer(t, tt.method, tt.form, &requests)
			defer srv.Close()
			c := newClient(t, srv.URL, nil)
			msgs := []Message{{Role: "user", Content: "one two three"}}
			n, method, err := c.CountTokens(context.Background(), "m", msgs)
			if err != nil || method != tt.method || n != 3+tt.overhead {
				t.Fatalf("count = %d %q %v", n, method, err)
			}
			for _, target := range []int{40, 1000, 3000} {
				requests.Store(0)
				cal, err := c.Calibrate(context.Background(), target, 42, CalibrateOptions{Model: "m", Index: 3})
				if err != nil {
					t.Fatalf("target %d: %v", target, err)
				}
				if d := cal.Tokens - target; d < -transport.CalibrationTolerance(target) || d > transport.CalibrationTolerance(target) {
					t.Fatalf("target %d: got %d tokens", target, cal.Tokens)
				}
				// The remembered method is tried first: one request per count.
				if cal.Method != tt.method || int(requests.Load()) != cal.Iterations {
					t.Fatalf("method %q, %d requests for %d iterations", cal.Method, requests.Load(), cal.Iterations)
				}
				if cal.Iterations > 6 {
					t.Errorf("target %d took %d iterations", target, cal.Iterations)
				}
				if got := len(strings.Fields(cal.Prompt)) + tt.overhead; got != cal.Tokens {
					t.Fatalf("prompt has %d tokens, reported %d", got, cal.Tokens)
				}
			}
		})
	}
}

func TestCalibrateImpossibleTarget(t *testing.T) {
	var requests atomic.Int32
	srv := tokenServer(t, transport.MethodCountTokens, "", &requests)
	defer srv.Close()
	// Below the template overhead plus one word, no prompt can get within
	// the 4-token tolerance.
	cal, err := newClient(t, srv.URL, nil).Calibrate(context.Background(), 1, 1, CalibrateOptions{MaxIterations: 5})
	if err == nil || cal.Tokens != 6 {
		t.Fatalf("want error with closest prompt, got %+v %v", cal, err)
	}
}

func TestCountTokensAllFail(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, _, err := newClient(t, srv.URL, nil).CountTokens(context.Background(), "m", []Message{{Role: "user", Content: "x"}})
	if err == nil || !strings.Contains(err.Error(), "count_tokens") || !strings.Contains(err.Error(), "probe") {
		t.Fatalf("want joined error naming each method, got %v", err)
	}
}

// TestCalibrateDropsATokenizerThatIgnoresTheText: a /tokenize that answers 1
// token whatever it is sent (seen on a real server) must not make the prompt
// grow without bound; the method is dropped, the next one used, and the
// calibration says so.
func TestCalibrateDropsATokenizerThatIgnoresTheText(t *testing.T) {
	var tokenizeCalls, maxBody atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		if n := int64(len(data)); n > maxBody.Load() {
			maxBody.Store(n)
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/tokenize":
			tokenizeCalls.Add(1)
			fmt.Fprint(w, `{"count":1}`)
		case "/v1/chat/completions":
			var body struct {
				Messages []Message `json:"messages"`
			}
			_ = json.Unmarshal(data, &body)
			fmt.Fprintf(w, `{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":%d,"completion_tokens":1}}`, wsCount(body.Messages))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	cal, err := c.Calibrate(t.Context(), 512, 1, CalibrateOptions{Model: "m"})
	if err != nil {
		t.Fatalf("calibrate: %v (%+v)", err, cal)
	}
	if cal.Method != transport.MethodProbe || !strings.Contains(cal.Note, "tokenize ignored") {
		t.Errorf("method %q note %q, want probe after dropping tokenize", cal.Method, cal.Note)
	}
	if d := cal.Tokens - 512; d > transport.CalibrationTolerance(512) || -d > transport.CalibrationTolerance(512) {
		t.Errorf("calibrated to %d tokens", cal.Tokens)
	}
	if tokenizeCalls.Load() > 6 || maxBody.Load() > 64<<10 {
		t.Errorf("%d tokenize calls, largest body %d bytes: the search did not stop", tokenizeCalls.Load(), maxBody.Load())
	}
	// The method stays dropped for the rest of the run.
	before := tokenizeCalls.Load()
	if _, err := c.Calibrate(t.Context(), 128, 2, CalibrateOptions{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if tokenizeCalls.Load() != before {
		t.Error("tokenize was tried again")
	}
}
