// Package suggest finds the known word a misspelt one was probably meant to
// be, for "did you mean" in error messages.
package suggest

import "strings"

// Closest returns the known word nearest to word (case-insensitive edit
// distance, a prefix counting as a near miss), or "" when none is close
// enough to be a plausible typo.
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
		return ""
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
