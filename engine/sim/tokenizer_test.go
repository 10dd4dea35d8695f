package sim

import (
	"slices"
	"testing"
)

func TestTokenizerCounts(t *testing.T) {
	tests := []struct {
		name string
		text string
		want int
	}{
		{"empty", "", 0},
		{"whitespace only", " \n\t ", 0},
		{"short words", "the cat sat", 3},
		{"long word in 4-byte pieces", "tokenization", 3}, // toke niza tion
		{"five letters", "hello", 2},                      // hell o
		{"punctuation is one token each", "a, b.", 4},
		{"digits are word runs", "2026 12345", 3},
		{"underscore joins words", "snake_case", 3}, // snak e_ca se
		{"accented letters never split mid-rune", "naïve", 2},
		{"CJK: one rune per piece", "日本語", 3},
		{"emoji is a symbol", "ok 👍", 2},
		{"mixed ASCII and accent", "façade!", 3}, // faç ade !
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(appendTokens(nil, tt.text)); got != tt.want {
				t.Errorf("tokens(%q) = %d, want %d", tt.text, got, tt.want)
			}
		})
	}
}

func TestTokenizerStable(t *testing.T) {
	text := "Deterministic: the same text gives the same ids, every time."
	a, b := appendTokens(nil, text), appendTokens(nil, text)
	if !slices.Equal(a, b) {
		t.Fatalf("ids differ: %v vs %v", a, b)
	}
	for _, id := range a {
		if id < 0 || id >= regularVocab {
			t.Errorf("id %d outside the regular vocabulary", id)
		}
	}
	if slices.Equal(appendTokens(nil, "alpha beta"), appendTokens(nil, "alpha gamma")) {
		t.Errorf("different words gave the same ids")
	}
}

func TestChatTemplate(t *testing.T) {
	msgs := []message{{Role: "user", Text: "hi"}}
	got := chatTemplate(nil, msgs, true)
	// <im_start> user <im_end>... : im_start, "user", "hi", im_end, im_start, "assi" "stan" "t"
	want := []int{tokIMStart, pieceID("user"), pieceID("hi"), tokIMEnd, tokIMStart, pieceID("assi"), pieceID("stan"), pieceID("t")}
	if !slices.Equal(got, want) {
		t.Errorf("template = %v, want %v", got, want)
	}
	if n := len(chatTemplate(nil, msgs, false)); n != 4 {
		t.Errorf("without generation prompt: %d tokens, want 4", n)
	}
}

// The output vocabulary must be one token per word, or usage and a client's
// own count of the streamed text would disagree.
func TestOutputWordsAreOneToken(t *testing.T) {
	table := newOutTable()
	for _, group := range [][]outTok{table.bare, table.spaced, table.punct} {
		for _, tok := range group {
			ids := appendTokens(nil, tok.text)
			if len(ids) != 1 || ids[0] != tok.id {
				t.Errorf("output token %q tokenizes to %v, want [%d]", tok.text, ids, tok.id)
			}
		}
	}
}

func BenchmarkTokenize(b *testing.B) {
	text := "Continuous batching keeps the GPU busy: new sequences join the running batch at every decode step, " +
		"and finished ones leave, so throughput scales with concurrency until memory runs out. "
	b.SetBytes(int64(len(text)))
	buf := make([]int, 0, 256)
	for b.Loop() {
		buf = appendTokens(buf[:0], text)
	}
}
