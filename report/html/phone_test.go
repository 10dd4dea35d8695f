package html

import (
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/gates"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
)

// judgeSpecs judges gates written for r, as the CLI does.
func judgeSpecs(t *testing.T, r *report.Report, specs ...gates.Spec) []report.GateResult {
	t.Helper()
	env, err := gates.Env(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, problems := gates.Compile(specs, env)
	if len(problems) > 0 {
		t.Fatalf("gates: %v", problems)
	}
	return set.Evaluate(env)
}

var gateMsgRE = regexp.MustCompile(`<div class="gatemsg[^"]*">([^<]*)</div>`)

// A failed gate's message that only restates its false comparisons is not
// shown under them; a message that says more (a no_regression verdict, an
// error, a skip) is, and every message wraps rather than run off a phone.
func TestFailedGateSaysItOnce(t *testing.T) {
	r := testfixture.LiveReport()
	r.Gates = judgeSpecs(t, r,
		gates.Spec{Name: "decode floor", Expr: "runs.embedded.phases.decode.decode_tokens_per_s.p50 >= 500"},
		gates.Spec{Name: "two floors", Expr: "runs.embedded.phases.decode.decode_tokens_per_s.p50 >= 500 || runs.embedded.phases.decode.ttft_ms.p50 < 1"})
	for _, g := range r.Gates {
		if g.Status != report.StatusFail || !strings.HasSuffix(g.Message, "is false") {
			t.Fatalf("gate %q: %s %q, want a failure that restates its comparisons", g.Name, g.Status, g.Message)
		}
	}
	said := "ttft_ms.p50 regressed beyond noise: +31.2% (limit +10%)"
	r.Gates = append(r.Gates,
		report.GateResult{Name: "no regression", Status: report.StatusFail, Message: said,
			Observations: []report.Observation{{Expr: "x < 1", Op: "<", Left: 2.0, Right: 1.0}}},
		report.GateResult{Name: "broken", Status: report.StatusError, Message: "unknown name nope"},
		report.GateResult{Name: "a skipped one", Status: report.StatusSkipped, Message: "skipped (no baseline)"})
	page := render(t, r, nil)
	var got []string
	for _, m := range gateMsgRE.FindAllStringSubmatch(page, -1) {
		got = append(got, html.UnescapeString(m[1]))
	}
	want := []string{said, "unknown name nope", "skipped (no baseline)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("gate messages shown %q, want %q", got, want)
	}
	if strings.Contains(page, "is false") {
		t.Error("a failed comparison is said again in its gate's message")
	}
	if !regexp.MustCompile(`\.gatemsg\{[^}]*overflow-wrap:anywhere`).MatchString(page) {
		t.Error("a gate's message does not wrap anywhere")
	}
}

// A concurrency axis is base-2 logarithmic past a 4× span, its ticks
// powers of two (every one while they fit, then every second…), and
// linear below it.
func TestLog2Axis(t *testing.T) {
	for _, tc := range []struct {
		name  string
		vals  []float64
		width float64
		log   bool
		ticks string
	}{
		{"a sweep to 64 streams", []float64{1, 8, 32, 64}, 460, true, "1 2 4 8 16 32 64"},
		{"on a phone", []float64{1, 8, 32, 64}, 250, true, "1 2 4 8 16 32 64"},
		{"to 1024 on a phone", []float64{1, 1024}, 250, true, "1 4 16 64 256 1024"},
		{"between powers", []float64{3, 24}, 460, true, "2 4 8 16 32"},
		{"four times is linear", []float64{2, 8}, 460, false, ""},
		{"one point", []float64{8}, 460, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScale(axis{Zero: true, Log2: true}, tc.vals, 0, tc.width)
			if s.log != tc.log {
				t.Fatalf("log %v, want %v (ticks %v)", s.log, tc.log, s.tickText)
			}
			if tc.log && strings.Join(s.tickText, " ") != tc.ticks {
				t.Errorf("ticks %v, want %s", s.tickText, tc.ticks)
			}
			for _, v := range tc.vals {
				if px := s.at(v); px < -0.001 || px > tc.width+0.001 {
					t.Errorf("%v maps outside the plot: %v", v, px)
				}
			}
			if tc.log {
				// Each doubling is as wide as the next.
				if d1, d2 := s.at(8)-s.at(4), s.at(16)-s.at(8); d1 < 10 || d1-d2 > 0.01 || d2-d1 > 0.01 {
					t.Errorf("4→8 is %.1f units, 8→16 %.1f", d1, d2)
				}
			}
		})
	}
}

var rlabelRE = regexp.MustCompile(`<text class="rlabel" x="([-\d.]+)" y="([-\d.]+)" text-anchor="(start|end)">([^<]*)<`)

// labelBoxes are the rule labels of an SVG, as drawRuleLabels sizes them.
func labelBoxes(t *testing.T, svg string) map[string]box {
	t.Helper()
	out := map[string]box{}
	for _, m := range rlabelRE.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		out[m[4]] = labelAt(x, y, m[3], float64(len([]rune(m[4])))*rlabelCharPx).box
	}
	return out
}

// A chart's rule labels keep apart, inside the plot, off each other's
// lines: a capacity found where the objective's limit is low, so that the
// capacity's label at the foot of its line would sit on the objective's.
func TestRuleLabelsKeepApart(t *testing.T) {
	var pass, fail series
	pass.Name, fail.Name = "pass", "fail"
	for _, v := range []float64{1, 2, 4, 8} {
		pass.Pts = append(pass.Pts, pt(v, 0.001*v, ""))
	}
	for _, v := range []float64{16, 32} {
		fail.Pts = append(fail.Pts, pt(v, 0.01*v, ""))
	}
	ch := lineChart{Title: "t", X: axis{Label: "concurrency", Unit: "streams", Log2: true}, Y: axis{Label: "error_rate", Zero: true},
		Series: []series{pass, fail},
		Rules:  []rule{{V: 0.01, Label: "objective ≤ 0.01"}, {V: 8, Label: "capacity 8", OnX: true}}}
	for _, g := range []geom{wideGeom, narrowGeom} {
		t.Run(fmt.Sprint(g.W), func(t *testing.T) {
			svg, _ := ch.svgAt(g)
			boxes := labelBoxes(t, svg)
			if len(boxes) != 2 {
				t.Fatalf("%d rule labels, want 2:\n%s", len(boxes), svg)
			}
			obj, capa := boxes["objective ≤ 0.01"], boxes["capacity 8"]
			if obj.overlaps(capa) {
				t.Errorf("the labels overlap: %v and %v", obj, capa)
			}
			ys := newScale(ch.Y, []float64{0.001, 0.32, 0.01}, g.H-padBot, padTop)
			xs := newScale(axis{Log2: true}, []float64{1, 32, 8}, leftPad(ys), g.W-padRight)
			plot := box{xs.p0, ys.p1, xs.p1, ys.p0}
			for name, b := range boxes {
				if b.outside(plot) > 0 {
					t.Errorf("%q leaves the plot: %v outside %v", name, b, plot)
				}
			}
			if x := xs.at(8); x > obj.x0 && x < obj.x1 {
				t.Errorf("the objective's label %v sits on the capacity's line at x=%.1f", obj, x)
			}
			if y := ys.at(0.01); y > capa.y0 && y < capa.y1 {
				t.Errorf("the capacity's label %v sits on the objective's line at y=%.1f", capa, y)
			}
		})
	}
}

// A sessions phase is drawn turn by turn: TTFT, and the prompt and cached
// tokens, against whole turn numbers; the baseline beside it.
func TestTurnCharts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded simulator")
	}
	r := runExample(t, "chat-sessions.yaml")
	figs := figures(r, viaJSON(t, r))
	for title, legend := range map[string]string{
		"Time to first token by turn — sim · chat":      "sim|sim (baseline)",
		"Prompt and cached tokens by turn — sim · chat": "prompt tokens|prompt tokens (baseline)|cached tokens|cached tokens (baseline)",
	} {
		f, ok := figs[title]
		if !ok {
			t.Errorf("no chart %q", title)
			continue
		}
		var names []string
		for _, l := range f.Legend {
			names = append(names, l.Name)
		}
		if strings.Join(names, "|") != legend {
			t.Errorf("%q: legend %v, want %s", title, names, legend)
		}
		for _, svg := range []string{string(f.SVG), string(f.SVGNarrow)} {
			if n := strings.Count(svg, `<path class="mk"`); n != 4*len(names) {
				t.Errorf("%q: %d markers, want a turn's each for 4 turns of %d series", title, n, len(names))
			}
			for _, tick := range []string{">1<", ">2<", ">3<", ">4<"} {
				if !strings.Contains(svg, `text-anchor="middle">`+tick[1:]) {
					t.Errorf("%q: no tick at turn %s", title, tick)
				}
			}
			if strings.Contains(svg, `text-anchor="middle">1.5<`) {
				t.Errorf("%q: a tick between turns", title)
			}
		}
	}
	checkPage(t, render(t, r, nil), r, []string{"Time to first token by turn — sim · chat"})
}

// A run with nothing for its card has none, and a report whose runs all
// have none has no Runs section.
func TestNoEmptyRunCards(t *testing.T) {
	r := &report.Report{Scenario: report.ScenarioInfo{Name: "bare"}, Status: report.StatusPass, RunOrder: []string{"quiet"},
		Runs: map[string]*report.Run{"quiet": {Target: report.Target{Kind: report.TargetEmbedded}, PhaseOrder: []string{"p"},
			Phases: map[string]*report.Phase{"p": {Kind: "requests"}}}}}
	page := render(t, r, nil)
	for _, s := range []string{`class="card run"`, `id="runs"`, `href="#runs"`} {
		if strings.Contains(page, s) {
			t.Errorf("the page has %s for a run with nothing to show", s)
		}
	}
	r.Runs["quiet"].Error = "target did not start"
	if page := render(t, r, nil); !strings.Contains(page, `class="card run"`) || !strings.Contains(page, "target did not start") {
		t.Error("a run that failed has no card saying why")
	}
}
