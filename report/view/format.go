// Package view derives the tables every tollgate output shows from a report:
// the live table (a row per phase or breakdown of a live run), the seam
// table (a line per seam run), the load points, the notes (warnings and
// request-error examples), the deciding comparison of a gate, and the
// old-vs-new deltas, judged by report/compare's one noise engine. It also
// holds the one formatter of values and optional numbers.
//
// Writers (text, Markdown, HTML, JUnit, CSV, annotations) lay these out;
// none of them recomputes a figure, orders runs or phases, or formats a
// number its own way, so every output shows the same table.
package view

import (
	"fmt"
	"strconv"
	"strings"
)

// Absent is what a cell shows for a value the report does not have.
const Absent = "-"

// Num formats an optional number with a fmt verb, Absent when it is nil.
func Num(v *float64, format string) string {
	if v == nil {
		return Absent
	}
	return fmt.Sprintf(format, *v)
}

// Pair formats two optional numbers as a/b (p50/p95).
func Pair(a, b *float64, format string) string { return Num(a, format) + "/" + Num(b, format) }

// Number formats a measured value with six significant digits, the way
// gate observations and comparisons show values.
func Number(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

// Value formats a value a gate observed: numbers with six significant
// digits, strings quoted, short lists element by element, long lists and
// maps by size.
func Value(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case float64:
		return Number(x)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', 6, 32)
	case string:
		return strconv.Quote(x)
	case []any:
		if len(x) > 6 {
			return fmt.Sprintf("[%d items]", len(x))
		}
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Value(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		return Value(anys(x))
	case map[string]any:
		return fmt.Sprintf("{%d keys}", len(x))
	}
	return fmt.Sprintf("%v", v)
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Percent keeps small percentages visible: 0.5% rather than 0%.
func Percent(p float64) string {
	if p < 10 {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}

// Plural is "1 run", "2 runs".
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// OneLine collapses runs of whitespace, newlines included, to one space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Ratio formats a ratio such as a speedup or a compression ratio: 8.1x.
func Ratio(v *float64, format string) string {
	if v == nil {
		return Absent
	}
	return fmt.Sprintf(format, *v) + "x"
}
