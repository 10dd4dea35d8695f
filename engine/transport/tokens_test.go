package transport

import (
	"fmt"
	"strings"
	"testing"
)

func TestSyntheticPrompt(t *testing.T) {
	seen := map[string]string{}
	for _, seed := range []int64{1, 2, -7} {
		for index := range 50 {
			p := SyntheticPrompt(seed, index, 40, "")
			if p != SyntheticPrompt(seed, index, 40, "") {
				t.Fatal("not deterministic")
			}
			if n := len(strings.Fields(p)); n != 40 {
				t.Fatalf("seed %d index %d: %d words", seed, index, n)
			}
			key := fmt.Sprint(seed, index)
			if prev, dup := seen[p]; dup {
				t.Fatalf("(%s) and (%s) give the same prompt", prev, key)
			}
			seen[p] = key
		}
	}
	tag := promptTag(9, 4)
	tests := []struct {
		name   string
		words  int
		prefix string
		want   string
	}{
		{"zero words", 0, "SYS", "SYS"},
		{"one word is the tag", 1, "", tag},
		{"two words", 2, "", tag + ": Life."},
		{"prefix gets a separator", 2, "You are helpful.", "You are helpful. " + tag + ": Life."},
		{"prefix ending in newline", 2, "ctx\n", "ctx\n" + tag + ": Life."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SyntheticPrompt(9, 4, tt.words, tt.prefix); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	p := SyntheticPrompt(9, 4, 30, "shared ")
	if !strings.HasPrefix(p, "shared "+tag+": ") || !strings.HasSuffix(p, ".") {
		t.Fatalf("shape: %q", p)
	}
	// The unique tag leads: prompts of one seed differ from their first
	// character on (no shared "Ticket" word or seed digits).
	first := map[byte]int{}
	for i := range 64 {
		first[SyntheticPrompt(9, i, 10, "")[0]]++
	}
	if len(first) < 10 {
		t.Errorf("64 prompts start with only %d distinct characters", len(first))
	}
}
