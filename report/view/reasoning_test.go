package view

import (
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

func TestTTFTCell(t *testing.T) {
	tests := []struct {
		name string
		m    report.ServingMetrics
		want string
	}{
		{name: "no reasoning", m: report.ServingMetrics{TTFTMS: report.NewStat([]float64{5, 6}), TTFOMS: report.NewStat([]float64{5, 6}),
			ReasoningTokens: report.NewStat([]float64{0, 0})}, want: "5.00/6.00"},
		{name: "reasoning", m: report.ServingMetrics{TTFTMS: report.NewStat([]float64{5, 6}), TTFOMS: report.NewStat([]float64{25, 30}),
			ReasoningTokens: report.NewStat([]float64{8, 8})}, want: "5.00/6.00 (ttfo 25.00/30.00)"},
		{name: "an old report without the keys", m: report.ServingMetrics{TTFTMS: report.NewStat([]float64{5})}, want: "5.00/5.00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := TTFTCell(&tc.m); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
