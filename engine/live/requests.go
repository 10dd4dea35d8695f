package live

import (
	"context"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// requestsKind sends the scenario's own requests, repeat times, as written.
type requestsKind struct{}

// MaxInFlight is 1: its requests go one after another.
func (requestsKind) MaxInFlight(*scenarios.Phase) int { return 1 }

func (requestsKind) Run(ctx context.Context, r *runner, p *scenarios.Phase, ph *report.Phase) error {
	plan := &fixedPlan{}
	for rep := 0; rep < p.Repeat; rep++ {
		for i, spec := range p.Requests.List {
			mt := p.MaxTokens
			if spec.MaxTokens > 0 {
				mt = spec.MaxTokens
			}
			req := r.request(spec.Prompt, toMessages(spec.Messages), mt)
			req.ExtraBody = spec.Body
			plan.add("", rep*len(p.Requests.List)+i, req)
		}
	}
	f, err := r.sequential(ctx, p, plan)
	r.measured(f, ph)
	return err
}
