package live

import (
	"cmp"
	"testing"

	"github.com/tollgate-dev/tollgate/scenarios"
)

// switchPoolSize is poolSize as it was, a switch over the phase kinds,
// kept to show that each kind's MaxInFlight sizes the pool as it did.
func switchPoolSize(phases []*scenarios.Phase) int {
	n := 4
	for _, p := range phases {
		if p.Kind == scenarios.PhaseCapacity {
			n = max(n, min(int(p.Capacity.Max), 4096))
		}
		if p.Kind == scenarios.PhaseTrace {
			n = max(n, min(cmp.Or(p.MaxInFlight, 4096), 4096))
			continue
		}
		if p.Kind == scenarios.PhaseSessions || p.Kind == scenarios.PhaseAgent {
			n = max(n, conversationConns(p))
		}
		if p.Kind != scenarios.PhaseLoad {
			continue
		}
		n = max(n, p.Concurrency)
		for _, c := range p.Sweep.Concurrency {
			n = max(n, c)
		}
		if p.Rate > 0 || len(p.Sweep.Rate) > 0 {
			limit := p.MaxInFlight
			if limit == 0 {
				limit = 4096
			}
			n = max(n, min(limit, 4096))
		}
	}
	return n
}

func TestPoolSizeByKind(t *testing.T) {
	conv := func(kind string, concurrency int, rate float64, sessions int) *scenarios.Phase {
		p := &scenarios.Phase{Kind: kind, Concurrency: concurrency, Rate: rate}
		p.Conversation.Sessions = sessions
		return p
	}
	capacity := func(max float64) *scenarios.Phase {
		p := &scenarios.Phase{Kind: scenarios.PhaseCapacity}
		p.Capacity.Max = max
		return p
	}
	for _, c := range []struct {
		name   string
		phases []*scenarios.Phase
		want   int
	}{
		// One after another: the pool's minimum, whatever else is set.
		{"warmup", []*scenarios.Phase{{Kind: scenarios.PhaseWarmup}}, 4},
		{"prefill ignores concurrency", []*scenarios.Phase{{Kind: scenarios.PhasePrefill, Concurrency: 64}}, 4},
		{"decode", []*scenarios.Phase{{Kind: scenarios.PhaseDecode}}, 4},
		{"prefix_cache", []*scenarios.Phase{{Kind: scenarios.PhasePrefixCache, MaxInFlight: 99}}, 4},
		{"requests", []*scenarios.Phase{{Kind: scenarios.PhaseRequests}}, 4},

		{"load concurrency", []*scenarios.Phase{{Kind: scenarios.PhaseLoad, Concurrency: 32}}, 32},
		{"load concurrency below the minimum", []*scenarios.Phase{{Kind: scenarios.PhaseLoad, Concurrency: 2}}, 4},
		{"load swept concurrency: the largest", []*scenarios.Phase{{Kind: scenarios.PhaseLoad, Sweep: scenarios.Sweep{Concurrency: []int{8, 64, 16}}}}, 64},
		{"load swept concurrency is not capped", []*scenarios.Phase{{Kind: scenarios.PhaseLoad, Sweep: scenarios.Sweep{Concurrency: []int{5000}}}}, 5000},
		{"load rate without max_in_flight", []*scenarios.Phase{{Kind: scenarios.PhaseLoad, Rate: 10}}, 4096},
		{"load rate with max_in_flight", []*scenarios.Phase{{Kind: scenarios.PhaseLoad, Rate: 10, MaxInFlight: 100}}, 100},
		{"load rate with max_in_flight over the cap", []*scenarios.Phase{{Kind: scenarios.PhaseLoad, Rate: 10, MaxInFlight: 10000}}, 4096},
		{"load swept rates", []*scenarios.Phase{{Kind: scenarios.PhaseLoad, Sweep: scenarios.Sweep{Rate: []float64{1, 2}}, MaxInFlight: 50}}, 50},

		{"capacity max", []*scenarios.Phase{capacity(300)}, 300},
		{"capacity max over the cap", []*scenarios.Phase{capacity(10000)}, 4096},
		{"capacity small max", []*scenarios.Phase{capacity(2.5)}, 4},

		{"trace without max_in_flight", []*scenarios.Phase{{Kind: scenarios.PhaseTrace}}, 4096},
		{"trace max_in_flight", []*scenarios.Phase{{Kind: scenarios.PhaseTrace, MaxInFlight: 256}}, 256},
		{"trace ignores concurrency", []*scenarios.Phase{{Kind: scenarios.PhaseTrace, Concurrency: 9000, MaxInFlight: 10}}, 10},

		{"sessions closed loop", []*scenarios.Phase{conv(scenarios.PhaseSessions, 12, 0, 40)}, 12},
		{"sessions open loop", []*scenarios.Phase{conv(scenarios.PhaseSessions, 0, 1, 100)}, 100},
		{"sessions open loop capped", []*scenarios.Phase{conv(scenarios.PhaseSessions, 0, 1, 1000)}, 256},
		{"sessions open loop, few sessions", []*scenarios.Phase{conv(scenarios.PhaseSessions, 0, 1, 2)}, 4},
		{"agent closed loop", []*scenarios.Phase{conv(scenarios.PhaseAgent, 9, 0, 30)}, 9},
		{"agent open loop", []*scenarios.Phase{conv(scenarios.PhaseAgent, 0, 2, 50)}, 50},

		{"the largest over the phases", []*scenarios.Phase{{Kind: scenarios.PhaseWarmup}, {Kind: scenarios.PhaseLoad, Concurrency: 16}, conv(scenarios.PhaseSessions, 40, 0, 80)}, 40},
		{"a kind the live target does not run", []*scenarios.Phase{{Kind: "no-such-kind", Concurrency: 99}}, 4},
		{"no phases", nil, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := poolSize(c.phases); got != c.want {
				t.Errorf("poolSize = %d, want %d", got, c.want)
			}
			if old := switchPoolSize(c.phases); old != c.want {
				t.Errorf("the old switch gave %d, the row says %d", old, c.want)
			}
		})
	}
}

// TestPoolSizeCoversEveryKind: a kind added to Kinds needs a row above.
func TestPoolSizeCoversEveryKind(t *testing.T) {
	covered := map[string]bool{
		scenarios.PhaseWarmup: true, scenarios.PhasePrefill: true, scenarios.PhaseDecode: true,
		scenarios.PhasePrefixCache: true, scenarios.PhaseRequests: true, scenarios.PhaseLoad: true,
		scenarios.PhaseCapacity: true, scenarios.PhaseTrace: true, scenarios.PhaseSessions: true,
		scenarios.PhaseAgent: true,
	}
	for name := range Kinds() {
		if !covered[name] {
			t.Errorf("kind %s has no row in TestPoolSizeByKind", name)
		}
	}
}
