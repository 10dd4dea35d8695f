package view

import "github.com/tollgate-dev/tollgate/report"

// Reasoned reports whether a row's requests reasoned: some had reasoning
// tokens before the answer.
func Reasoned(m *report.ServingMetrics) bool {
	return m.ReasoningTokens.Max != nil && *m.ReasoningTokens.Max > 0
}

// TTFTCell is the "ttft p50/p95 ms" cell: TTFT, and for a row whose
// requests reasoned also TTFO (first answer token), since then the two
// differ by the whole reasoning channel.
func TTFTCell(m *report.ServingMetrics) string {
	cell := Pair(m.TTFTMS.P50, m.TTFTMS.P95, "%.2f")
	if Reasoned(m) {
		cell += " (ttfo " + Pair(m.TTFOMS.P50, m.TTFOMS.P95, "%.2f") + ")"
	}
	return cell
}
