package sim

import "math"

// outWords are the simulator's output vocabulary: short ASCII words that are
// each exactly one token under the simulator's tokenizer and need no JSON
// escaping, so a chunk is prefix + word + suffix with no encoding work.
var outWords = [...]string{
	"the", "of", "and", "to", "in", "a", "is", "that", "for", "it",
	"as", "was", "with", "be", "by", "on", "not", "he", "this", "are",
	"or", "his", "from", "at", "whom", "but", "have", "an", "had", "they",
	"you", "were", "its", "one", "all", "we", "can", "her", "has", "more",
	"will", "if", "no", "when", "so", "what", "out", "up", "into", "who",
	"time", "some", "them", "here", "like", "than", "then", "only", "also", "new",
	"way", "two", "may", "work", "data", "fast", "slow", "load", "test", "node",
	"path", "gate", "run", "step", "byte", "line", "code", "plan", "cost", "rate",
	"sum", "mean", "peak", "tail", "head", "flow", "core", "disk", "file", "task",
	"each", "many", "most", "over", "such", "very", "well", "just", "good", "long",
}

// outPunct are occasional punctuation tokens, written without a leading space.
var outPunct = [...]string{".", ",", ".", ";"}

// outTok is one output token: its text (with leading space where it has
// one) and its id, precomputed so generation allocates nothing.
type outTok struct {
	text string
	id   int
}

// outTable holds every output token form, built once per Server.
type outTable struct {
	bare   []outTok // words as the first token of a response
	spaced []outTok // words after another token
	punct  []outTok
}

func newOutTable() *outTable {
	t := &outTable{}
	for _, w := range outWords {
		t.bare = append(t.bare, outTok{w, pieceID(w)})
		t.spaced = append(t.spaced, outTok{" " + w, pieceID(w)})
	}
	for _, p := range outPunct {
		t.punct = append(t.punct, outTok{p, pieceID(p)})
	}
	return t
}

// textGen yields a request's deterministic output tokens in order.
type textGen struct {
	table     *outTable
	state     uint64
	i         int
	prevPunct bool
}

func newTextGen(table *outTable, seed int64, promptHash uint64) textGen {
	return textGen{table: table, state: mix64(uint64(seed), promptHash)}
}

// next returns the next output token.
func (g *textGen) next() *outTok {
	r := mix64(g.state, uint64(g.i))
	first := g.i == 0
	g.i++
	if !first && !g.prevPunct && r%9 == 0 {
		g.prevPunct = true
		return &g.table.punct[(r>>8)%uint64(len(g.table.punct))]
	}
	g.prevPunct = false
	k := (r >> 8) % uint64(len(outWords))
	if first {
		return &g.table.bare[k]
	}
	return &g.table.spaced[k]
}

// eosAfter is the deterministic natural length of a response: exponential
// with the configured mean, at least minTokens and at least 1.
func eosAfter(seed int64, promptHash uint64, meanTokens, minTokens int) int {
	r := mix64(uint64(seed)^0x5851f42d4c957f2d, promptHash)
	u := (float64(r>>11) + 0.5) / (1 << 53) // in (0, 1)
	n := 1 + int(-math.Log(u)*float64(meanTokens))
	return max(n, minTokens, 1)
}
