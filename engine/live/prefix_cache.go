package live

import (
	"context"
	"sort"

	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/scenarios"
	"github.com/tollgate-dev/tollgate/workload"
)

// prefixCacheKind sends, per repetition, a cold prompt, the same prompt
// again, and the prompt with a short suffix: variants holds the three, with
// each reuse's speedup over fresh.
type prefixCacheKind struct{}

// MaxInFlight is 1: its requests go one after another.
func (prefixCacheKind) MaxInFlight(*scenarios.Phase) int { return 1 }

func (prefixCacheKind) Run(ctx context.Context, r *runner, p *scenarios.Phase, ph *report.Phase) error {
	plan := &fixedPlan{}
	size := p.PromptTokens[0]
	for i := 0; i < p.Repeat; i++ {
		// A new salt (index) per repetition: each fresh prompt is cold.
		prompt, err := r.synthetic(ctx, p, ph, size, 1_000_000+i, requestName(p.Name, report.VariantFresh, i))
		if err != nil {
			return err
		}
		suffix := suffixOf(r.seed(p), 2_000_000+i, p.SuffixTokens)
		plan.add(report.VariantFresh, i, sized(r.request(prompt, nil, p.MaxTokens), size, p))
		plan.add(report.VariantIdentical, i, sized(r.request(prompt, nil, p.MaxTokens), size, p))
		plan.add(report.VariantSmallSuffix, i, r.request(prompt+"\n\n"+suffix, nil, p.MaxTokens))
	}
	f, err := r.sequential(ctx, p, plan)
	r.measured(f, ph)
	if len(f.order) > 0 {
		ph.Variants = map[string]*report.Point{}
		for _, name := range f.order {
			ph.Variants[name] = f.point(name)
		}
		prefixCacheFindings(ph)
	}
	return err
}

// suffixOf is the small_suffix request's suffix: the longest synthetic
// text of at most tokens tokens by workload.EstimateTokens (the embedded
// simulator's count; about that many on another tokenizer), and never
// less than the text's unique tag (a few tokens). It is not calibrated
// through the server: the loader holds prompt + suffix + max_tokens
// against the simulator's context window with this count.
func suffixOf(seed int64, index, tokens int) string {
	lo, hi := 1, max(1, tokens) // words: the text of lo words fits, or lo is 1
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if workload.EstimateTokens(transport.SyntheticPrompt(seed, index, mid, "")) <= tokens {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return transport.SyntheticPrompt(seed, index, lo, "")
}

// prefixCacheFindings fills the speedups and warns when cached_tokens shows
// no reuse, so a cold or evicted cache is never mistaken for a slow one.
func prefixCacheFindings(ph *report.Phase) {
	fold.Speedups(ph.Variants)
	for _, name := range []string{report.VariantIdentical, report.VariantSmallSuffix} {
		v := ph.Variants[name]
		if v == nil {
			continue
		}
		var w string
		switch {
		case v.Succeeded == 0:
		case v.CachedTokens.Count == 0:
			w = "the server reports no cached_tokens (usage.prompt_tokens_details), so prefix reuse cannot be confirmed"
		case v.CachedTokens.Max != nil && *v.CachedTokens.Max == 0:
			w = "cached_tokens is 0 on every request: no prefix reuse (the cache was cold, evicted or disabled)"
		}
		if w != "" {
			v.Warnings = append(v.Warnings, w)
			ph.Warnings = append(ph.Warnings, name+": "+w)
		}
	}
	sort.Strings(ph.Warnings)
}
