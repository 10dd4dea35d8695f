package report

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadReport is a report of one load point: 5 requests, 4 answered and
// one connect error, with the statistics and window a run writes.
func loadReport() *Report {
	r := minimal()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	sm := &ServingMetrics{Requests: 5, Succeeded: 4, Warnings: []string{},
		Errors: ErrorSummary{Count: 1, Rate: F(0.2), ByClass: map[string]int{"connect": 1}},
		TTFTMS: NewStat([]float64{10, 12, 15, 30}), E2EMS: NewStat([]float64{40, 42, 45, 90, 1})}
	lp := &LoadPoint{Rate: 10, ServingMetrics: sm, QueueMS: NewStat([]float64{0.1, 0.2, 0.1, 0.3, 0.2}), DurationS: 0.5,
		AchievedRatePerS: F(8), Window: &Window{FirstSend: t0, LastSend: t0.Add(400 * time.Millisecond), LastEnd: t0.Add(500 * time.Millisecond), Sent: 5, E2ESumMS: 218}}
	filtered := 2
	ds := &Dataset{File: "chat.jsonl", Format: "jsonl", Read: 10, Skipped: 1, Filtered: &filtered, Eligible: 7, Used: 5, EstimatedPromptTokens: NewStat([]float64{8, 9, 10, 11, 12})}
	r.Runs["server"] = &Run{Name: "server", Params: map[string]string{}, Target: Target{Name: "server", Kind: "openai"}, Status: "ok",
		Phases: map[string]*Phase{"load": {Kind: "load", ServingMetrics: sm, Points: []*LoadPoint{lp}, Dataset: ds}}, PhaseOrder: []string{"load"}}
	r.RunOrder = []string{"server"}
	return r
}

// TestReadFileChecksTheReport: a saved report that fails its schema or
// contradicts itself is refused naming the file and the JSON path of what
// is wrong, and so is a field no tollgate report has.
func TestReadFileChecksTheReport(t *testing.T) {
	good, err := Marshal(loadReport())
	if err != nil {
		t.Fatalf("the test's report does not validate: %v", err)
	}
	point := func(m map[string]any) map[string]any {
		return m["runs"].(map[string]any)["server"].(map[string]any)["phases"].(map[string]any)["load"].(map[string]any)["points"].([]any)[0].(map[string]any)
	}
	stat := func(m map[string]any, k string) map[string]any { return point(m)[k].(map[string]any) }
	dataset := func(m map[string]any) map[string]any {
		return m["runs"].(map[string]any)["server"].(map[string]any)["phases"].(map[string]any)["load"].(map[string]any)["dataset"].(map[string]any)
	}
	const pt = "/runs/server/phases/load/points/0"
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string // "": reads
	}{
		{"as written", func(map[string]any) {}, ""},
		// An unknown field is refused at its own pointer, whether the
		// schema closes its object (the top) or only the types do (a point).
		{"an unknown top-level field", func(m map[string]any) { m["future"] = map[string]any{"x": 1} }, `/future: unknown field "future"`},
		{"an unknown field in a point", func(m map[string]any) { point(m)["future_rate"] = 3.0 }, pt + `/future_rate: unknown field "future_rate"`},
		{"an unknown field in a statistic", func(m map[string]any) { stat(m, "ttft_ms")["p42"] = 3.0 }, pt + `/ttft_ms/p42: unknown field "p42"`},
		{"a user's var is free", func(m map[string]any) {
			m["scenario"].(map[string]any)["vars"] = map[string]any{"anything": map[string]any{"x": 1}}
		}, ""},
		{"p50 above max", func(m map[string]any) { stat(m, "ttft_ms")["p50"] = 100.0 }, pt + "/ttft_ms: p50 (100) is above p90 (30)"},
		{"max below p99", func(m map[string]any) { stat(m, "e2e_ms")["max"] = 50.0 }, pt + "/e2e_ms: p99 (90) is above max (50)"},
		{"mean outside min and max", func(m map[string]any) { stat(m, "ttft_ms")["mean"] = 5.0 }, pt + "/ttft_ms: mean (5) is below min (10)"},
		{"figures over no samples", func(m map[string]any) { stat(m, "queue_ms")["count"] = 0.0 }, pt + "/queue_ms: count is 0 but mean is present"},
		{"more samples than requests", func(m map[string]any) { stat(m, "ttft_ms")["count"] = 9.0 }, pt + "/ttft_ms/count: 9 samples, more than the 5 requests"},
		{"counts that do not add up", func(m map[string]any) { point(m)["succeeded"] = 5.0 }, pt + ": succeeded (5) + errors.count (1) is not requests (5)"},
		{"errors by class that do not add up", func(m map[string]any) {
			point(m)["errors"].(map[string]any)["by_class"] = map[string]any{"connect": 3.0}
		}, pt + "/errors: count (1) is not the sum of by_class (3)"},
		{"dataset counts that do not add up", func(m map[string]any) { dataset(m)["read"] = 12.0 }, "/runs/server/phases/load/dataset: skipped (1) + filtered (2) + eligible (7) is not read (12)"},
		{"an older report's dataset, without filtered", func(m map[string]any) { delete(dataset(m), "filtered"); dataset(m)["read"] = 9.0 }, ""},
		{"a negative filtered", func(m map[string]any) { dataset(m)["filtered"] = -1.0 }, "/runs/server/phases/load/dataset/filtered: minimum: got -1, want 0"},
		{"an error rate past 1", func(m map[string]any) { point(m)["errors"].(map[string]any)["rate"] = 1.5 }, pt + "/errors/rate: maximum: got 1.5, want 1"},
		{"a negative rate", func(m map[string]any) { point(m)["achieved_rate_per_s"] = -8.0 }, pt + "/achieved_rate_per_s: a rate below 0 (-8)"},
		{"a window backwards", func(m map[string]any) {
			point(m)["window"].(map[string]any)["last_send"] = "2026-01-01T11:59:00Z"
		}, pt + "/window: last_send (2026-01-01T11:59:00Z) is before first_send"},
		{"ended before it started", func(m map[string]any) { m["ended_at"] = "1969-01-01T00:00:00Z" }, "/ended_at: 1969-01-01T00:00:00Z is before started_at"},
		{"schema: a status it does not have", func(m map[string]any) { m["status"] = "great" }, "/status: value must be one of"},
		{"schema: a hash that is not one", func(m map[string]any) { m["scenario"].(map[string]any)["sha256"] = "xyz" }, "/scenario/sha256: "},
		{"schema: a required field missing", func(m map[string]any) { delete(m, "gates") }, "missing property 'gates'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(good, &m); err != nil {
				t.Fatal(err)
			}
			tc.edit(m)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "edited.json")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = ReadFile(path)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidReport) || !errors.Is(err, ErrNotReport) {
				t.Fatalf("error %v: want ErrInvalidReport (and ErrNotReport, its class)", err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, path+": ") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q: want it to start with the file and name %q", msg, tc.want)
			}
		})
	}
}
