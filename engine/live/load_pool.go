package live

import "github.com/tollgate-dev/tollgate/scenarios"

// MaxInFlight is the most a load phase keeps in flight: its concurrency or
// largest swept concurrency, and for an open loop (rate or swept rates)
// its max_in_flight, maxPoolConns when unset and at most that.
//
// It sits apart from load.go only while that file's per-request
// bookkeeping is being rewritten; it belongs beside loadKind.
func (loadKind) MaxInFlight(p *scenarios.Phase) int {
	n := p.Concurrency
	for _, c := range p.Sweep.Concurrency {
		n = max(n, c)
	}
	if p.Rate > 0 || len(p.Sweep.Rate) > 0 {
		limit := p.MaxInFlight
		if limit == 0 {
			limit = maxPoolConns
		}
		n = max(n, min(limit, maxPoolConns))
	}
	return n
}
