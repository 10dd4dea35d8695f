package sim

import (
	"net/http"
	"slices"
	"testing"
)

// TestDetokenizeEveryID checks that every regular id has a piece that
// tokenizes back to it.
func TestDetokenizeEveryID(t *testing.T) {
	var d detokTable
	d.build(newOutTable())
	for id := range regularVocab {
		text, _, ok := d.piece(id)
		if !ok {
			t.Fatalf("id %d has no piece", id)
		}
		if got := appendTokens(nil, text); len(got) != 1 || got[0] != id {
			t.Fatalf("id %d renders %q, which tokenizes to %v", id, text, got)
		}
	}
}

func TestDetokenizeEndpoint(t *testing.T) {
	ts := startServer(t, fastConfig())
	tests := []struct {
		name string
		text string
	}{
		{"words", "The quick brown fox jumps over the lazy dog"},
		{"punctuation and long words", "Prefix-caching, measured: 12345678 tokens/s; ok?"},
		{"non-ASCII", "naïve café — déjà vu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := ts.postOK(t, "/tokenize", map[string]any{"prompt": tt.text, "model": "tollgate-sim"})
			ids := ints(t, dig(t, tok, "tokens"))
			det := ts.postOK(t, "/detokenize", map[string]any{"tokens": ids, "model": "tollgate-sim"})
			again := ints(t, dig(t, ts.postOK(t, "/tokenize", map[string]any{"prompt": str(t, det, "prompt")}), "tokens"))
			if !slices.Equal(ids, again) {
				t.Errorf("tokenize(detokenize(%v)) = %v (text %q)", ids, again, str(t, det, "prompt"))
			}
		})
	}

	// The simulator's own output reads back as its text.
	out := ts.postOK(t, "/v1/completions", map[string]any{"prompt": "x", "max_tokens": 6, "ignore_eos": true})
	text := str(t, out, "choices.0.text")
	ids := ints(t, dig(t, ts.postOK(t, "/tokenize", map[string]any{"prompt": text}), "tokens"))
	if got := str(t, ts.postOK(t, "/detokenize", map[string]any{"tokens": ids}), "prompt"); got != text {
		t.Errorf("detokenized output %q, want the text %q", got, text)
	}

	errs := []struct {
		name   string
		body   map[string]any
		status int
	}{
		{"missing tokens", map[string]any{}, http.StatusBadRequest},
		{"out of vocabulary", map[string]any{"tokens": []int{vocabSize}}, http.StatusBadRequest},
		{"negative id", map[string]any{"tokens": []int{-1}}, http.StatusBadRequest},
		{"other model", map[string]any{"tokens": []int{1}, "model": "gpt-x"}, http.StatusNotFound},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			if status, body := ts.do(t, http.MethodPost, "/detokenize", tt.body); status != tt.status {
				t.Errorf("status %d (%s), want %d", status, body, tt.status)
			}
		})
	}
}

func ints(t *testing.T, v any) []int {
	t.Helper()
	a, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is not an array", v)
	}
	out := make([]int, len(a))
	for i, x := range a {
		out[i] = int(x.(float64))
	}
	return out
}
