package live

import (
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
	"github.com/tollgate-dev/tollgate/stats"
	"github.com/tollgate-dev/tollgate/workload"
)

// datasetMaxTokens is request i's max_tokens from its dataset prompt (the
// reply's length), or 0 when the phase fixes max_tokens or has no dataset.
func datasetMaxTokens(p *scenarios.Phase, i int) int {
	if p.Dataset == nil || len(p.FilePrompts) == 0 {
		return 0
	}
	return p.FilePrompts[i%len(p.FilePrompts)].MaxTokens
}

// datasetReport says where a phase's prompts came from, with the sizes of
// the prompts drawn by tollgate's estimate (the server's own count is the
// phase's prompt_tokens).
func datasetReport(p *scenarios.Phase) *report.Dataset {
	d := p.Dataset
	if d == nil {
		return nil
	}
	h := stats.New()
	prompts := p.FilePrompts
	if p.Kind == scenarios.PhaseRequests {
		prompts = p.Requests.List
	}
	for _, r := range prompts {
		n := workload.EstimateTokens(r.Prompt)
		for _, m := range r.Messages {
			n += workload.EstimateTokens(m.Content)
		}
		_ = h.Add(float64(n))
	}
	return &report.Dataset{File: d.File, Format: d.Format, Read: d.Read, Skipped: d.Skipped, Filtered: &d.Filtered, Eligible: d.Eligible, Used: d.Used,
		Replacement: d.Replacement, EstimatedPromptTokens: report.StatFrom(h)}
}
