package scenarios

import (
	"strings"
	"testing"
)

// Bad capacity phases are refused at load with the position of the fault.
func TestCapacityBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, capacity, want string
	}{
		{name: "a metric the phase does not produce", capacity: `{min: 1, max: 8, objectives: ["seam_latency_ms.p99 <= 5"]}`,
			want: `c.yaml:4:65: phases.cap.capacity.objectives[0]: a capacity phase produces no metric "seam_latency_ms"`},
		{name: "a request metric with no statistic", capacity: `{min: 1, max: 8, objectives: ["ttft_ms <= 5"]}`,
			want: `c.yaml:4:65: phases.cap.capacity.objectives[0]: ttft_ms needs a statistic`},
		{name: "min equals max", capacity: `{min: 8, max: 8, objectives: ["ttft_ms.p99 <= 5"]}`,
			want: `c.yaml:4:49: phases.cap.capacity.max: must be above min (8), got 8`},
		{name: "min above max", capacity: `{min: 9, max: 8, objectives: ["ttft_ms.p99 <= 5"]}`,
			want: `c.yaml:4:49: phases.cap.capacity.max: must be above min (9), got 8`},
		{name: "precision 0", capacity: `{min: 1, max: 8, precision: 0%, objectives: ["ttft_ms.p99 <= 5"]}`,
			want: `c.yaml:4:63: phases.cap.capacity.precision: must be above 0% and below 100%, got 0%`},
		{name: "precision 100", capacity: `{min: 1, max: 8, precision: 100%, objectives: ["ttft_ms.p99 <= 5"]}`,
			want: `c.yaml:4:63: phases.cap.capacity.precision: must be above 0% and below 100%, got 100%`},
		{name: "precision without a percent sign", capacity: `{min: 1, max: 8, precision: 0.05, objectives: ["ttft_ms.p99 <= 5"]}`,
			want: `c.yaml:4:63: phases.cap.capacity.precision: expected a percentage such as 5%`},
		{name: "no objective", capacity: `{min: 1, max: 8, objectives: []}`,
			want: `c.yaml:4:64: phases.cap.capacity.objectives: a capacity search needs at least one objective`},
		{name: "no objectives key", capacity: `{min: 1, max: 8}`,
			want: `c.yaml:4:35: phases.cap.capacity.objectives: a capacity search needs at least one objective`},
		{name: "goodput without slo", capacity: `{min: 1, max: 8, objectives: ["goodput_pct >= 90"]}`,
			want: `c.yaml:4:65: phases.cap.capacity.objectives: goodput_pct needs per-request limits in slo`},
		// Objectives no load can meet, the minimum included.
		{name: "a latency of 0", capacity: `{min: 1, max: 8, objectives: ["error_rate <= 0.01", "ttft_ms.p99 <= 0"]}`,
			want: `c.yaml:4:87: phases.cap.capacity.objectives: ttft_ms.p99 <= 0 cannot be met at any load, the minimum included: every request takes time; give a limit above 0`},
		{name: "a token rate of at most 0", capacity: `{min: 1, max: 8, objectives: ["decode_tokens_per_s.p50 <= 0"]}`,
			want: `c.yaml:4:65: phases.cap.capacity.objectives: decode_tokens_per_s.p50 <= 0 cannot be met at any load`},
		{name: "a hold shorter than the window", capacity: `{min: 1, max: 8, probe: {duration: 2s, hold: 1s}, objectives: ["ttft_ms.p99 <= 5"]}`,
			want: `phases.cap.capacity.probe.hold: a hold shorter than a probe's window (2s) confirms nothing; give at least 2s, or 0s for no hold`},
		{name: "a concurrency that is not whole", capacity: `{by: concurrency, min: 1.5, max: 8, objectives: ["e2e_ms.p50 <= 5"]}`,
			want: `c.yaml:4:58: phases.cap.capacity.min: a concurrency is a whole number, got 1.5`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "targets:\n  s: {kind: embedded}\nphases:\n  cap: {kind: capacity, capacity: " + tc.capacity + "}\n"
			_, err := Parse("c.yaml", []byte(src), Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant one containing %s", err, tc.want)
			}
		})
	}
}

// A good capacity phase takes its defaults.
func TestCapacityDefaults(t *testing.T) {
	sc, err := Parse("c.yaml", []byte("phases:\n  capacity: {capacity: {min: 1, max: 8, objectives: [\"ttft_ms.p99<=500\"]}}\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Runs[0].Phases[0].Capacity
	if c.By != "rate" || c.Start != 1 || c.Precision.Fraction != 0.05 || c.Probe.Repeat != 2 || c.Probe.MinRequests != 50 || c.Objectives[0].Text != "ttft_ms.p99 <= 500" || c.Probe.Hold != nil {
		t.Errorf("defaults %+v", c)
	}
}

// goodput_pct above 100 is never met, whatever the slo.
func TestGoodputAbove100IsUnmeetable(t *testing.T) {
	if msg := unmeetable(Objective{Metric: "goodput_pct", Op: ">=", Limit: 101}); !strings.Contains(msg, "at most 100") {
		t.Errorf("goodput_pct >= 101: %q", msg)
	}
	if msg := unmeetable(Objective{Metric: "goodput_pct", Op: ">=", Limit: 100}); msg != "" {
		t.Errorf("goodput_pct >= 100: %q", msg)
	}
}
