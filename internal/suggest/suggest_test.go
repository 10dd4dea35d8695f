package suggest

import "testing"

func TestClosest(t *testing.T) {
	known := []string{"transport", "cache", "ttft_ms", "decode", "direct/cached", "rate"}
	for _, tc := range []struct{ name, word, want string }{
		{name: "one letter swapped", word: "transprt", want: "transport"},
		{name: "case does not matter", word: "CAHCE", want: "cache"},
		{name: "a prefix is a near miss", word: "ttft", want: "ttft_ms"},
		{name: "run names", word: "direct/cahced", want: "direct/cached"},
		{name: "nothing close", word: "zebra", want: ""},
		{name: "short words need close matches", word: "ab", want: ""},
		{name: "a qualified key", word: "request_rate", want: "rate"},
		{name: "a key with a qualifier after it", word: "cache_mode", want: "cache"},
		{name: "the longest known part", word: "phase_decode_ttft_ms", want: "ttft_ms"},
		{name: "a known word inside another is not a part", word: "mycachedata", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Closest(tc.word, known); got != tc.want {
				t.Errorf("Closest(%q) = %q, want %q", tc.word, got, tc.want)
			}
		})
	}
}
