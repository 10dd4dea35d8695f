package live

import (
	"context"
	"strconv"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// prefillKind measures time to first token by prompt size: by_prompt_tokens
// holds one point per size. Requests stop at max_tokens 1, so a prefill
// phase has no decode interval (no tpot_ms, itl_ms or decode_tokens_per_s).
type prefillKind struct{}

// MaxInFlight is 1: its requests go one after another.
func (prefillKind) MaxInFlight(*scenarios.Phase) int { return 1 }

func (prefillKind) Run(ctx context.Context, r *runner, p *scenarios.Phase, ph *report.Phase) error {
	plan := &fixedPlan{}
	for si, size := range p.PromptTokens {
		point := strconv.Itoa(size)
		for i := 0; i < p.Repeat; i++ {
			// Distinct per size and repetition, so no prompt reuses another's prefix.
			prompt, err := r.synthetic(ctx, p, ph, size, si*100_000+i, requestName(p.Name, point, i))
			if err != nil {
				return err
			}
			plan.add(point, i, sized(r.request(prompt, nil, p.MaxTokens), size, p))
		}
	}
	f, err := r.sequential(ctx, p, plan)
	r.measured(f, ph)
	if len(f.order) > 0 {
		ph.ByPromptTokens = map[string]*report.Point{}
		for _, name := range f.order {
			pt := f.point(name)
			pt.TargetPromptTokens, _ = strconv.Atoi(name)
			ph.ByPromptTokens[name] = pt
		}
	}
	return err
}
