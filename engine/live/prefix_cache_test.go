package live

import (
	"testing"

	"github.com/tollgate-dev/tollgate/scenarios"
	"github.com/tollgate-dev/tollgate/workload"
)

// The small_suffix request's suffix is suffix_tokens long by the
// simulator's count, and never longer than the loader holds it to against
// the context window (scenarios.SmallSuffixTokens).
func TestSuffixSize(t *testing.T) {
	for _, tokens := range []int{1, 2, 3, 4, 5, 8, 16, 32, 40, 100, 512} {
		for _, seed := range []int64{0, 7, -3} {
			for i := range 50 {
				got := workload.EstimateTokens("\n\n" + suffixOf(seed, 2_000_000+i, tokens))
				if got > scenarios.SmallSuffixTokens(tokens) {
					t.Fatalf("suffix_tokens %d (seed %d, index %d): %d tokens, over the loader's %d", tokens, seed, i, got, scenarios.SmallSuffixTokens(tokens))
				}
				// One word is at most 4 tokens: the text stops less than a word short.
				if tokens >= 8 && got < tokens-4 {
					t.Fatalf("suffix_tokens %d (seed %d, index %d): only %d tokens", tokens, seed, i, got)
				}
			}
		}
	}
}
