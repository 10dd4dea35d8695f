package view

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/report"
)

// LoadColumns are the columns of the load-point table after the phase name.
func LoadColumns() []string {
	return []string{"point", "ok/n", "req/s", "out tok/s", "in flight", "ttft p50/p99 ms", "tpot p50 ms", "queue p95 ms", "goodput"}
}

// LoadRow is one load point of a load phase: throughput, goodput and
// queueing, which the live table has no columns for.
type LoadRow struct {
	Phase string
	Label string // PointLabel
	Point *report.LoadPoint
	Cells []string // one per LoadColumns
}

// PointLabel names a load point: "concurrency 8" or "rate 4/s".
func PointLabel(lp *report.LoadPoint) string {
	if lp.Rate > 0 {
		return fmt.Sprintf("rate %g/s", lp.Rate)
	}
	return fmt.Sprintf("concurrency %d", lp.Concurrency)
}

func loadRows(pn string, p *report.Phase) []LoadRow {
	var rows []LoadRow
	for _, lp := range p.Points {
		if lp == nil || lp.ServingMetrics == nil {
			continue
		}
		point := PointLabel(lp)
		if lp.Rate > 0 && lp.AchievedRatePerS != nil {
			point += fmt.Sprintf(" (sent %.1f/s)", *lp.AchievedRatePerS)
		}
		good := Absent
		if g := lp.Goodput; g != nil && g.AttainedPct != nil {
			good = fmt.Sprintf("%.1f%%", *g.AttainedPct)
			if g.GoodRequestsPerS != nil {
				good += fmt.Sprintf(" (%.1f/s)", *g.GoodRequestsPerS)
			}
		}
		rows = append(rows, LoadRow{Phase: pn, Label: PointLabel(lp), Point: lp, Cells: []string{
			point, okN(lp.ServingMetrics), Num(lp.RequestThroughputPerS, "%.1f"), Num(lp.OutputTokensPerS, "%.0f"),
			Num(lp.AchievedConcurrency, "%.1f"), Pair(lp.TTFTMS.P50, lp.TTFTMS.P99, "%.1f"), Num(lp.TPOTMS.P50, "%.2f"),
			Num(lp.QueueMS.P95, "%.2f"), good,
		}})
	}
	return rows
}
