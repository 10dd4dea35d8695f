package report

import "time"

// ShardInfo is what one shard of a sharded run (tollgate run --shard I/N)
// records about itself, so that tollgate merge can check the set is whole
// and a reader can see how well the shards started together.
type ShardInfo struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Host is the machine the shard ran on (also in host.hostname).
	Host string `json:"host"`
	// RunID names the sharded run this shard is part of (--run-id, else
	// $TOLLGATE_RUN_ID): tollgate merge refuses shards whose run ids
	// differ. Absent when none was given; the run is then known by
	// StartAt alone.
	RunID string `json:"run_id,omitempty"`
	// File is the shard report merged (set by tollgate merge only).
	File string `json:"file,omitempty"`
	// AllPhases: non-load phases ran on this shard too (--shard-all-phases);
	// else only shard 0 runs them.
	AllPhases bool `json:"all_phases,omitempty"`
	// StartAt is the --start-at every shard was given; StartLatenessMS how
	// late this shard began its first load point after it (0 when on time).
	StartAt         *time.Time `json:"start_at,omitempty"`
	StartLatenessMS *float64   `json:"start_lateness_ms,omitempty"`
	// ClockOffsetMS is the target's clock minus this shard's, from the
	// target's HTTP Date header (the second boundary, found by polling),
	// ± ClockOffsetUncertaintyMS; ClockNote says why it is absent.
	ClockOffsetMS            *float64 `json:"clock_offset_ms,omitempty"`
	ClockOffsetUncertaintyMS *float64 `json:"clock_offset_uncertainty_ms,omitempty"`
	ClockNote                string   `json:"clock_note,omitempty"`
	// Points are the shard's load points: the rate it was asked for (its
	// share) and the rate it achieved.
	Points []ShardRate `json:"points"`
}

// ShardRate is one load point of one shard: requested vs achieved.
type ShardRate struct {
	Run   string `json:"run"`
	Phase string `json:"phase"`
	Point string `json:"point"`
	// RequestedRatePerS is the shard's share of an open loop's rate;
	// Concurrency its share of a closed loop's.
	RequestedRatePerS *float64 `json:"requested_rate_per_s,omitempty"`
	Concurrency       int      `json:"concurrency,omitempty"`
	Requests          int      `json:"requests"`
	AchievedRatePerS  *float64 `json:"achieved_rate_per_s,omitempty"`
}

// Window is a load point's wall-clock window and the sums its rates are
// made of, so a merge can recompute them over the union of the windows.
type Window struct {
	FirstSend time.Time `json:"first_send"`
	LastSend  time.Time `json:"last_send"`
	LastEnd   time.Time `json:"last_end"`
	// FirstSend and LastSend are the first and last request written;
	// Sent counts requests written (achieved_rate_per_s is over them).
	Sent int `json:"sent"`
	// E2ESumMS is Σ e2e over every request, failed ones included.
	E2ESumMS float64 `json:"e2e_sum_ms"`
	// FirstStart is the earliest send timestamp, where a request's e2e
	// begins (before its connection is set up, so before FirstSend):
	// achieved_concurrency = E2ESumMS / 1000 / (LastEnd − FirstStart), the
	// span every e2e lies in, so it never exceeds the most in flight.
	// Zero in reports from before it was kept: FirstSend stands in.
	FirstStart time.Time `json:"first_start,omitzero"`
}

// ShardPhase is one shard's own figures of a merged phase: its load points
// (and, for a non-load phase every shard ran, its metrics), without
// histograms or samples.
type ShardPhase struct {
	Index int    `json:"index"`
	Host  string `json:"host"`
	*ServingMetrics
	Points []*LoadPoint `json:"points,omitempty"`
}
