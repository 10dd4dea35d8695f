package scenarios

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yaml.v3 reports a syntax error at the line of the block or flow
// collection that holds it (the line before it, in fact), or at no line at
// all when that collection starts on the first line, and never at a
// column: "did not find expected key" for a stray "}" on line 12 of a
// file says "line 1". The position it knew is not exported, so it is
// found again from the text: the first line, then the first column on it,
// at which the file cut there already fails with the same message. Each
// cut is one parse, so this takes log(lines) + log(columns) parses of at
// most the file, on the error path only.

// syntaxMessage is the message of the first syntax error in data, without
// its "yaml: line N: " prefix, or "" when data parses (a cut that ends
// cleanly). Every document is read, as tree reads them.
func syntaxMessage(data []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			return yamlMessage(err)
		}
	}
}

// yamlMessage is a yaml.v3 error's first line without "yaml: line N: ".
func yamlMessage(err error) string {
	msg := strings.TrimPrefix(strings.SplitN(err.Error(), "\n", 2)[0], "yaml: ")
	if m := yamlLineRE.FindStringSubmatch("yaml: " + msg); m != nil {
		msg = m[2]
	}
	return msg
}

// firstFailing is the smallest k in [1, n] for which fails(k), found by
// bisection; fails(n) is taken to hold (it is the whole text).
func firstFailing(n int, fails func(k int) bool) int {
	lo, hi := 1, n
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// locateSyntaxError is the line and column (1-based, in characters, as
// yaml.v3 counts them) where the syntax error msg of data is: where a cut
// first fails with msg. An unterminated quote or collection is found at
// its start, a stray token at the token. ok is false when no cut gives the
// message (the error is not in the text).
func locateSyntaxError(data []byte, msg string) (line, col int, ok bool) {
	if msg == "" || syntaxMessage(data) != msg {
		return 0, 0, false
	}
	lines := strings.SplitAfter(string(data), "\n")
	if n := len(lines); n > 1 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	// Byte offsets of each line's start, so that a cut is one slice.
	starts := make([]int, len(lines)+1)
	for i, l := range lines {
		starts[i+1] = starts[i] + len(l)
	}
	line = firstFailing(len(lines), func(k int) bool { return syntaxMessage(data[:starts[k]]) == msg })
	text := []rune(strings.TrimRight(lines[line-1], "\r\n"))
	if len(text) == 0 {
		return line, 1, true
	}
	before := data[:starts[line-1]]
	cut := func(k int) []byte { return append(append([]byte{}, before...), string(text[:k])...) }
	col = firstFailing(len(text), func(k int) bool { return syntaxMessage(cut(k)) == msg })
	// Cut inside a flow collection, the file fails as a wrong closer does:
	// the cut is at the collection's first entry. The closer of the other
	// kind after it is the token at fault; with none, the collection is
	// not closed, and its opening bracket is.
	for _, c := range []struct {
		msg         string
		open, wrong rune
	}{{"did not find expected ',' or ']'", '[', '}'}, {"did not find expected ',' or '}'", '{', ']'}} {
		if msg != c.msg {
			continue
		}
		for i := col - 1; i < len(text); i++ {
			if text[i] == c.wrong {
				return line, i + 1, true
			}
		}
		for i := min(col, len(text)) - 1; i >= 0; i-- {
			if text[i] == c.open {
				return line, i + 1, true
			}
		}
	}
	return line, col, true
}
