// Package suggest finds the known word a misspelt one was probably meant to
// be, for "did you mean" in error messages.
package suggest

import "strings"

// Closest returns the known word nearest to word (case-insensitive edit
// distance, a prefix counting as a near miss), or "" when none is close
// enough to be a plausible typo; failing that, the known word that word
// qualifies (part).
func Closest(word string, known []string) string {
	lw := strings.ToLower(word)
	best, bestD := "", 1<<30
	for _, k := range known {
		lk := strings.ToLower(k)
		d := Distance(lw, lk)
		if len(word) >= 3 && strings.HasPrefix(lk, lw) {
			d = 1 // ttft → ttft_ms
		}
		if d < bestD {
			best, bestD = k, d
		}
	}
	limit := min(len(word)/3+1, 4)
	if best == "" || bestD > limit {
		return part(lw, known)
	}
	return best
}

// part is the longest known word of at least three letters that is the
// first or the last of word's words joined by _, or several of them
// (request_rate → rate, concurrency_max → concurrency), or "": a
// qualifier added to a key is too far from it for an edit distance.
func part(lw string, known []string) string {
	best := ""
	for _, k := range known {
		lk := strings.ToLower(k)
		if len(lk) < 3 || len(lk) <= len(best) || lk == lw {
			continue
		}
		if strings.HasSuffix(lw, "_"+lk) || strings.HasPrefix(lw, lk+"_") {
			best = k
		}
	}
	return best
}

// DidYouMean is Closest phrased for a message: ` (did you mean "x"?)` or "".
func DidYouMean(word string, known []string) string {
	if c := Closest(word, known); c != "" {
		return ` (did you mean "` + c + `"?)`
	}
	return ""
}

// Distance is the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
