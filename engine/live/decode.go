package live

import (
	"context"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// decodeKind measures generation: repeat requests of one prompt size with
// max_tokens long enough for decode rates; no breakdown.
type decodeKind struct{}

// MaxInFlight is 1: its requests go one after another.
func (decodeKind) MaxInFlight(*scenarios.Phase) int { return 1 }

func (decodeKind) Run(ctx context.Context, r *runner, p *scenarios.Phase, ph *report.Phase) error {
	plan, err := r.promptPlan(ctx, p, ph, p.Repeat)
	if err != nil {
		return err
	}
	f, err := r.sequential(ctx, p, plan)
	r.measured(f, ph)
	return err
}
