// Package textsafe is the one rule for showing text that came from a server
// or a scenario: engine/transport applies it where server text enters a
// message (body excerpts, error events, the HTTP client's errors that quote
// a response line), report/view to every string of a report before a
// writer lays it out, and report/compare (which view imports, so cannot
// import view) to its comparison table.
package textsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Clean escapes, visibly, what would reach a reader raw: control
// characters but tab and newline, C1, DEL, U+2028/9, bidi overrides, XML
// noncharacters (\x1b, \u2028), and invalid UTF-8 bytes (\xff).
func Clean(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s // the common case: nothing to escape, no copy
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafeRune(r, n):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r, n):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether a decoded rune (n bytes long) must be escaped.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1: // an invalid byte
		return true
	case r == '\t' || r == '\n':
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f: // C0, DEL, C1
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional marks and overrides reorder what a reader sees
	case r == 0xfffe, r == 0xffff: // not characters in XML 1.0
		return true
	}
	return false
}
