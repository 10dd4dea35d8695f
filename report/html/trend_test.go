package html

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/sim"
	"github.com/tollgate-dev/tollgate/report/compare"
	"github.com/tollgate-dev/tollgate/report/trend"
)

// trendNight is one night of a nightly job: decode against a server at
// base_url, which the scenario identity leaves out, so nights against a
// faster or a slower server are one scenario.
const trendNight = `
name: trend-nightly
targets:
  server: {kind: openai, base_url: "%s", metadata: false, metrics: false}
phases:
  decode: {prompt_tokens: 32, max_tokens: 8, repeat: 8}
  prefill: {prompt_tokens: [32, 128], repeat: 6, max_tokens: 2}
`

// slowNight is the night (from 0) run against a server three times slower.
const slowNight = 3

// trendNights runs five nights through the real engine against the
// simulator as a separate server: decode steps of 5 ms, and 15 ms on
// slowNight.
func trendNights(t *testing.T) []trend.Input {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	url := func(step time.Duration) string {
		cfg := sim.DefaultConfig()
		cfg.DecodeStep = step
		s, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		u, err := s.Start(ctx, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return u
	}
	fast, slow := url(5*time.Millisecond), url(15*time.Millisecond)
	var out []trend.Input
	for i := range 5 {
		u := fast
		if i == slowNight {
			u = slow
		}
		r := runScenario(t, "trend.yaml", fmt.Sprintf(trendNight, u))
		out = append(out, trend.Input{Path: fmt.Sprintf("nightly/night-%d.json", i+1), Report: viaJSON(t, r)})
	}
	return out
}

// A point is marked a regression exactly where compare of it with the
// report before it, under the same --fail-on, regresses; and the night
// against the 3× slower server is that point.
func TestTrendMarksWhatCompareFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	nights := trendNights(t)
	th, err := compare.ParseThreshold("tpot_ms.p50:+50%")
	if err != nil {
		t.Fatal(err)
	}
	opts := compare.Options{FailOn: []compare.Threshold{th}}
	tr, err := trend.Build(nights, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Scenarios) != 1 || len(tr.Scenarios[0].Points) != 5 {
		t.Fatalf("%d scenarios, want one of 5 points", len(tr.Scenarios))
	}
	sc := tr.Scenarios[0]
	var tpot *trend.Series
	for _, s := range sc.Metrics {
		if s.Path == "runs.server.phases.decode.tpot_ms" {
			tpot = s
		}
	}
	if tpot == nil {
		t.Fatal("no tpot_ms series")
	}
	for i := 1; i < 5; i++ {
		res, err := compare.Compare(nights[i-1].Report, nights[i].Report, opts)
		if err != nil {
			t.Fatal(err)
		}
		_, marked := tpot.Steps[i].Regressed("p50")
		flagged := res.Verdict() == compare.Regressed
		if marked != flagged {
			t.Errorf("night %d: marked %v, compare regressed %v", i+1, marked, flagged)
		}
		if marked != (i == slowNight) {
			t.Errorf("night %d: marked %v; only night %d ran 3× slower", i+1, marked, slowNight+1)
		}
		// The band agrees with compare's verdict on every statistic it has.
		for _, m := range res.Metrics {
			var s *trend.Series
			for _, c := range sc.Metrics {
				if c.Path == m.Path {
					s = c
				}
			}
			for stat, b := range s.Steps[i].Band {
				v := s.Values[i][stat]
				inside := v >= b[0] && v <= b[1]
				if inside != (m.Verdict(stat) == compare.Within) {
					t.Errorf("night %d %s.%s: %v inside band %v: %v; compare's verdict %v", i+1, m.Path, stat, v, b, inside, m.Verdict(stat))
				}
			}
		}
	}
	var b bytes.Buffer
	if err := WriteTrend(&b, tr); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, `<tr class="flag">`); n < 1 {
		t.Errorf("%d flagged rows", n)
	}
	if !strings.Contains(page, "regression (--fail-on)") || !strings.Contains(page, "#4 night-4") {
		t.Error("the page marks no regression at night 4")
	}
}

// TestTrendLayoutInChromium: the trend page over five nights, at a phone's
// and a laptop's width, light and dark, as TestLayoutInChromium checks the
// report page.
func TestTrendLayoutInChromium(t *testing.T) {
	bin := chromium(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	th, err := compare.ParseThreshold("tpot_ms.p50:+50%")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trend.Build(trendNights(t), compare.Options{FailOn: []compare.Threshold{th}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteTrend(&b, tr); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	shots := os.Getenv("TOLLGATE_SCREENSHOTS")
	for _, cs := range colorSchemes {
		t.Run("trend "+cs.name, func(t *testing.T) {
			t.Parallel() // a launch is mostly waiting
			dir := t.TempDir()
			ms := measure(t, bin, dir, "trend", page, layoutWidths, cs.args...)
			for i, w := range layoutWidths {
				t.Run(fmt.Sprintf("%d px", w), func(t *testing.T) {
					m := ms[i]
					t.Logf("%+v", m)
					checkLayout(t, m, w, cs.name == "dark", false)
					if shots != "" {
						if err := os.WriteFile(filepath.Join(shots, "trend.html"), []byte(page), 0o644); err != nil {
							t.Fatal(err)
						}
						screenshot(t, bin, dir, page, w, m.ScrollHeight, filepath.Join(shots, fmt.Sprintf("trend-%d-%s.png", w, cs.name)), cs.args...)
					}
				})
			}
		})
	}
}
