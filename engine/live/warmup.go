package live

import (
	"context"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// warmupKind sends requests that are counted but never measured: only
// requests, successes, errors and warnings reach the report.
type warmupKind struct{}

// MaxInFlight is 1: its requests go one after another.
func (warmupKind) MaxInFlight(*scenarios.Phase) int { return 1 }

func (warmupKind) Run(ctx context.Context, r *runner, p *scenarios.Phase, ph *report.Phase) error {
	plan, err := r.promptPlan(ctx, p, ph, p.Requests.Count)
	if err != nil {
		return err
	}
	f, err := r.sequential(ctx, p, plan)
	m := f.rec.metrics()
	ph.ServingMetrics = &report.ServingMetrics{Requests: m.Requests, Succeeded: m.Succeeded, Errors: m.Errors, Warnings: append([]string{}, r.warnings...)}
	return err
}

// promptPlan is n requests of the phase's prompt: fixed text or file lines,
// else synthetic prompts of prompt_tokens[0], calibrated before any is sent.
func (r *runner) promptPlan(ctx context.Context, p *scenarios.Phase, ph *report.Phase, n int) (*fixedPlan, error) {
	plan := &fixedPlan{}
	for i := 0; i < n; i++ {
		if text, msgs, ok := r.fixedPrompt(p, i); ok {
			plan.add("", i, r.request(text, msgs, p.MaxTokens))
			continue
		}
		prompt, err := r.synthetic(ctx, p, ph, p.PromptTokens[0], i, requestName(p.Name, "", i))
		if err != nil {
			return nil, err
		}
		plan.add("", i, sized(r.request(prompt, nil, p.MaxTokens), p.PromptTokens[0], p))
	}
	return plan, nil
}
