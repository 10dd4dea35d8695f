package view

import (
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

func fp(v float64) *float64 { return &v }

func metrics(n int, ttft ...float64) *report.ServingMetrics {
	return &report.ServingMetrics{Requests: n, Succeeded: n, TTFTMS: report.NewStat(ttft), E2EMS: report.NewStat(ttft),
		Errors: report.ErrorSummary{ByClass: map[string]int{}}}
}

// liveReport has every kind of live row: warmup, prompt sizes, variants
// (one the engine does not write today), a load sweep, a warning and a
// failed request.
func liveReport() *report.Report {
	dec := metrics(3, 10, 11)
	dec.Succeeded = 2
	dec.Warnings = []string{"no usage"}
	dec.Errors.Examples = []report.RequestError{{Class: "http_status", Status: 500, Request: "decode #2", Message: "boom"}}
	return &report.Report{
		RunOrder: []string{"server", "route"},
		Runs: map[string]*report.Run{
			"route": {Target: report.Target{Kind: report.TargetSeam}},
			"server": {Target: report.Target{Kind: report.TargetOpenAI}, PhaseOrder: []string{"warmup", "prefill", "decode", "prefix_cache", "load"},
				Phases: map[string]*report.Phase{
					"warmup": {Kind: report.KindWarmup, ServingMetrics: metrics(2)},
					"prefill": {Kind: report.KindPrefill, ServingMetrics: metrics(4, 1, 2, 3, 4), ByPromptTokens: map[string]*report.Point{
						"1024": {ServingMetrics: metrics(2, 3, 4), TargetPromptTokens: 1024},
						"256":  {ServingMetrics: metrics(2, 1, 2), TargetPromptTokens: 256},
						"bad":  nil,
					}},
					"decode": {Kind: report.KindDecode, ServingMetrics: dec},
					"prefix_cache": {Kind: report.KindPrefixCache, ServingMetrics: metrics(6, 1), Variants: map[string]*report.Point{
						"long_suffix":             {ServingMetrics: metrics(2, 9), Speedup: fp(1.5)},
						report.VariantIdentical:   {ServingMetrics: metrics(2, 5), Speedup: fp(8.14)},
						report.VariantFresh:       {ServingMetrics: metrics(2, 40)},
						report.VariantSmallSuffix: {ServingMetrics: metrics(2, 6), Speedup: fp(6)},
					}},
					"load": {Kind: report.KindLoad, ServingMetrics: metrics(20, 5), Points: []*report.LoadPoint{
						{Concurrency: 1, ServingMetrics: metrics(10, 4), RequestThroughputPerS: fp(9.5)},
						{Rate: 4, AchievedRatePerS: fp(3.96), ServingMetrics: metrics(10, 6),
							Goodput: &report.Goodput{AttainedPct: fp(95), GoodRequestsPerS: fp(3.1)}},
					}},
				}},
		},
	}
}

func TestLive(t *testing.T) {
	live := Live(liveReport())
	if len(live) != 1 || live[0].Name != "server" {
		t.Fatalf("live runs %+v, want only server (route is a seam run)", live)
	}
	lr := live[0]
	var labels []string
	for _, row := range lr.Rows {
		labels = append(labels, row.Label)
		if len(row.Cells) != len(LiveColumns()) {
			t.Errorf("%s: %d cells for %d columns", row.Label, len(row.Cells), len(LiveColumns()))
		}
	}
	want := []string{"warmup", "prefill 256", "prefill 1024", "decode", "prefix_cache fresh", "prefix_cache identical",
		"prefix_cache small_suffix", "prefix_cache long_suffix", "load (all points)"}
	if !slices.Equal(labels, want) {
		t.Errorf("rows %v\nwant %v", labels, want)
	}
	for _, tc := range []struct {
		name string
		row  int
		want []string
	}{
		{name: "warmup is counted, not measured", row: 0, want: []string{"2/2", WarmupCell, "-", "-", "-", "-", "-", "-"}},
		{name: "prompt size", row: 1, want: []string{"2/2", "1.00/2.00", "-", "-", "-", "1.0", "-", "-"}},
		{name: "failed requests count against ok", row: 3, want: []string{"2/3", "10.00/11.00", "-", "-", "-", "10.0", "-", "-"}},
		{name: "speedup", row: 5, want: []string{"2/2", "5.00/5.00", "-", "-", "-", "5.0", "-", "8.1x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lr.Rows[tc.row].Cells; !slices.Equal(got, tc.want) {
				t.Errorf("cells %q, want %q", got, tc.want)
			}
		})
	}
	if len(lr.Points) != 2 || lr.Points[0].Label != "concurrency 1" || lr.Points[1].Cells[0] != "rate 4/s (sent 4.0/s)" ||
		lr.Points[1].Cells[len(LoadColumns())-1] != "95.0% (3.1/s)" {
		t.Errorf("load points %+v", lr.Points)
	}
	if len(lr.Warnings) != 1 || lr.Warnings[0].Phase != "decode" {
		t.Errorf("warnings %+v", lr.Warnings)
	}
	if len(lr.Errors) != 1 || lr.Errors[0].Text != "http_status (HTTP 500) in decode #2: boom" {
		t.Errorf("errors %+v", lr.Errors)
	}
}

func TestSeams(t *testing.T) {
	r := &report.Report{RunOrder: []string{"a", "b", "c"}, Runs: map[string]*report.Run{
		"a": {Target: report.Target{Kind: report.TargetSeam}, PhaseOrder: []string{"decode"}, Connections: &report.Connections{Attempts: 5},
			Phases: map[string]*report.Phase{"decode": {Kind: report.KindDecode, SeamMetrics: &report.SeamMetrics{
				SeamLatencyMS: report.NewStat([]float64{1.03545, 1.2}), QueueWaitMS: report.NewStat([]float64{0}), TokensPerS: fp(965.76), BytesPerToken: fp(45)}}},
			Seams: map[string]*report.SeamMetrics{"h->t": {PayloadBytes: 20480, WireBytes: 230}}},
		"b": {Target: report.Target{Kind: report.TargetSeam}, Status: report.RunError, Error: "refused"},
		"c": {Target: report.Target{Kind: report.TargetSeam}},
	}}
	rows := Seams(r)
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, tc := range []struct {
		name string
		row  SeamRow
		want []string
	}{
		{name: "figures", row: rows[0], want: []string{"a", "1.0354/1.2000", "965.8", "45", "20480/230 (89.04x)", "5", "0.00"}},
		{name: "no decode phase, no seams", row: rows[2], want: []string{"c", "-", "-", "-", "0/0 (-)", "0", "-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(tc.row.Cells, tc.want) {
				t.Errorf("cells %q, want %q", tc.row.Cells, tc.want)
			}
		})
	}
	if rows[1].Cells != nil || rows[1].Error != "refused" {
		t.Errorf("failed run %+v", rows[1])
	}
}

func TestValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{name: "float, six digits", in: 1.0354512, want: "1.03545"},
		{name: "integer", in: 45, want: "45"},
		{name: "string quoted", in: "ok", want: `"ok"`},
		{name: "nil", in: nil, want: "nil"},
		{name: "short list", in: []any{1.5, "a"}, want: `[1.5, "a"]`},
		{name: "long list by size", in: []any{1, 2, 3, 4, 5, 6, 7}, want: "[7 items]"},
		{name: "strings", in: []string{" amber", " birch"}, want: `[" amber", " birch"]`},
		{name: "map by size", in: map[string]any{"a": 1}, want: "{1 keys}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Value(tc.in); got != tc.want {
				t.Errorf("Value(%v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestTightest(t *testing.T) {
	obs := []report.Observation{
		{Op: "<=", Left: 1.0, Right: 2.0, Result: true},
		{Op: "<=", Left: 1.9, Right: 2.0, Result: true},
		{Op: "==", Left: 2.0, Right: 2.0, Result: true},
		{Op: "<", Left: 3.0, Right: 2.0, Result: false},
		{Op: ">=", Left: "a", Right: 2.0, Result: true},
	}
	o, h, ok := Tightest(obs)
	if !ok || o.Left != 1.9 || Percent(h*100) != "5.0%" {
		t.Errorf("tightest %+v %v %v, want 1.9 <= 2 with 5.0%% headroom", o, h, ok)
	}
	if _, _, ok := Tightest(obs[2:]); ok {
		t.Error("equalities, failures and non-numbers have no headroom")
	}
}

func TestDeltaPlace(t *testing.T) {
	r := liveReport()
	for _, tc := range []struct {
		name                   string
		segs                   []string
		run, where, metricName string
	}{
		{"phase", []string{"runs", "server", "phases", "decode", "ttft_ms"}, "server", "decode", "ttft_ms"},
		{"prompt size", []string{"runs", "server", "phases", "prefill", "by_prompt_tokens", "256", "ttft_ms"}, "server", "prefill 256", "ttft_ms"},
		{"variant", []string{"runs", "server", "phases", "prefix_cache", "variants", "fresh", "speedup"}, "server", "prefix_cache fresh", "speedup"},
		{"load point by label", []string{"runs", "server", "phases", "load", "points", "1", "goodput", "attained_pct"}, "server", "load rate 4/s", "goodput.attained_pct"},
		{"errors", []string{"runs", "server", "phases", "decode", "errors", "rate"}, "server", "decode", "errors.rate"},
		{"seam", []string{"runs", "route", "seams", "h->t", "wire_bytes"}, "route", "seam h->t", "wire_bytes"},
		{"connections", []string{"runs", "route", "connections", "attempts"}, "route", "", "connections.attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, where, name := place(r, tc.segs)
			if run != tc.run || where != tc.where || name != tc.metricName {
				t.Errorf("place = %q, %q, %q; want %q, %q, %q", run, where, name, tc.run, tc.where, tc.metricName)
			}
		})
	}
}

func TestDeltasRefuseAnotherTool(t *testing.T) {
	r := &report.Report{SchemaVersion: report.SchemaVersion, Tool: report.Tool{Name: "tollgate"}, Runs: map[string]*report.Run{}}
	other := &report.Report{SchemaVersion: report.SchemaVersion, Tool: report.Tool{Name: "other"}, Runs: map[string]*report.Run{}}
	if _, err := Deltas(other, r); err == nil || !strings.Contains(err.Error(), "not a tollgate report") {
		t.Errorf("error %v", err)
	}
}

// A phase whose reads held several token events says how many, beside its
// own warnings: how finely itl_ms and ttft_ms were timed.
func TestResolutionNote(t *testing.T) {
	for _, tc := range []struct {
		name           string
		coalesced, fst int
		want           string // "": no note
	}{
		{name: "every event its own read"},
		{name: "events after the first", coalesced: 3,
			want: "timing resolution: 3 of 20 token events came in one read with the event before them (the client read late), timed at that read: itl_ms holds a 0 ms gap for each"},
		{name: "a first token too", coalesced: 3, fst: 1,
			want: "timing resolution: 3 of 20 token events came in one read with the event before them (the client read late), timed at that read: itl_ms holds a 0 ms gap for each; 1 of 2 requests' first token shared its read, their ttft_ms an upper bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := liveReport()
			dec := r.Runs["server"].Phases["decode"].ServingMetrics
			dec.SSETokenEvents = report.NewStat([]float64{8, 12})
			dec.CoalescedEvents, dec.TTFTCoalesced = tc.coalesced, tc.fst
			var notes []string
			for _, n := range Live(r)[0].Warnings {
				if n.Phase == "decode" && strings.HasPrefix(n.Text, "timing resolution") {
					notes = append(notes, n.Text)
				}
			}
			switch {
			case tc.want == "" && len(notes) != 0:
				t.Errorf("notes %q, want none", notes)
			case tc.want != "" && (len(notes) != 1 || notes[0] != tc.want):
				t.Errorf("notes %q\nwant %q", notes, tc.want)
			}
		})
	}
}
