package html

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// The layout check opens pages in headless Chromium inside an iframe of an
// exact width (a headless window cannot be narrower than 500 px; an
// iframe's viewport is what its width says, media queries included) and
// measures the page from a script in the outer document, which writes
// what it found into the DOM that --dump-dom prints. No new dependency,
// no DevTools protocol: one browser process per page and width.

// layoutWidths are a phone and a laptop.
var layoutWidths = []int{390, 1280}

// colorSchemes are the page's two themes, as prefers-color-scheme picks
// them: Chromium's --force-dark-mode sets the media feature to dark (and
// the blink setting makes sure of it); its automatic darkening of pages
// stays off, so what is measured is the page's own dark CSS.
var colorSchemes = []struct {
	name string
	args []string
}{
	{"light", nil},
	{"dark", []string{"--force-dark-mode", "--blink-settings=preferredColorScheme=0"}},
}

// minSVGTextPx is the smallest on-screen size of any chart text.
const minSVGTextPx = 11

// chromium finds a Chromium or Chrome on PATH (or at /usr/bin/chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (apt-get install -y chromium to run the layout check)")
	return ""
}

// measureJS runs in the outer page once its iframes (one per width) have
// loaded, and measures each.
const measureJS = `
function measureFrame(f) {
  var w = f.contentWindow, d = f.contentDocument;
  var out = {innerWidth: w.innerWidth, scrollWidth: d.documentElement.scrollWidth, scrollHeight: d.documentElement.scrollHeight,
             svgTexts: 0, minSVGTextPx: 1e9, minSVGText: "", wideCharts: 0, narrowCharts: 0, overflowing: []};
  d.querySelectorAll("svg.chart").forEach(function (s) {
    if (!s.getClientRects().length) return;
    if (s.classList.contains("narrow")) out.narrowCharts++; else out.wideCharts++;
  });
  d.querySelectorAll("svg text").forEach(function (t) {
    if (!t.getClientRects().length) return;
    var m = t.getScreenCTM();
    if (!m) return;
    var px = parseFloat(w.getComputedStyle(t).fontSize) * Math.sqrt(m.a * m.a + m.b * m.b);
    out.svgTexts++;
    if (px < out.minSVGTextPx) { out.minSVGTextPx = px; out.minSVGText = t.textContent.slice(0, 40); }
  });
  var bg = w.getComputedStyle(d.body).backgroundColor.match(/[\d.]+/g).map(Number);
  out.dark = (bg[0] + bg[1] + bg[2]) / 3 < 128;
  // A frame that scrolls sideways hides what is past its edge: on a phone
  // none may (tables are cards there).
  out.sideways = [];
  d.querySelectorAll(".tablewrap, pre").forEach(function (e) {
    if (e.getClientRects().length && e.scrollWidth > e.clientWidth + 1 && out.sideways.length < 8)
      out.sideways.push(e.tagName.toLowerCase() + "." + e.className + " " + e.scrollWidth + ">" + e.clientWidth + ": " + e.textContent.trim().slice(0, 60));
  });
  // Text cut off by a frame that clips or scrolls it: each line box of each
  // text node, against the nearest ancestor that does not let it show.
  out.clipped = []; out.gateTexts = 0;
  var walk = d.createTreeWalker(d.body, NodeFilter.SHOW_TEXT);
  for (var n = walk.nextNode(); n; n = walk.nextNode()) {
    if (!n.textContent.trim() || n.parentElement.closest("svg, script, style")) continue;
    var rg = d.createRange(); rg.selectNodeContents(n);
    var rects = rg.getClientRects();
    if (!rects.length) continue;
    var gate = !!n.parentElement.closest("table.gates");
    if (gate) out.gateTexts++;
    var clip = null;
    for (var p = n.parentElement; p && p !== d.body; p = p.parentElement) {
      if (w.getComputedStyle(p).overflowX !== "visible") { clip = p; break; }
    }
    var box = clip ? clip.getBoundingClientRect() : {left: 0, right: w.innerWidth};
    for (var i = 0; i < rects.length; i++) {
      var r = rects[i];
      if (r.width && (r.right > box.right + 1 || r.left < box.left - 1) && out.clipped.length < 8) {
        out.clipped.push((gate ? "gate " : "") + n.parentElement.tagName.toLowerCase() + ": " + n.textContent.trim().slice(0, 60));
        break;
      }
    }
  }
  // Rule labels on a chart: none on another, none past the drawing.
  out.rlabels = 0; out.labelClashes = [];
  d.querySelectorAll("svg.chart").forEach(function (s) {
    if (!s.getClientRects().length) return;
    var sb = s.getBoundingClientRect(), ls = [].map.call(s.querySelectorAll("text.rlabel"), function (t) { return [t, t.getBoundingClientRect()]; });
    out.rlabels += ls.length;
    ls.forEach(function (a, i) {
      if (a[1].left < sb.left - 1 || a[1].right > sb.right + 1) out.labelClashes.push(a[0].textContent + " leaves its chart");
      ls.slice(i + 1).forEach(function (b) {
        if (Math.min(a[1].right, b[1].right) > Math.max(a[1].left, b[1].left) && Math.min(a[1].bottom, b[1].bottom) > Math.max(a[1].top, b[1].top))
          out.labelClashes.push(a[0].textContent + " on " + b[0].textContent);
      });
    });
  });
  // A run's card says something past its heading.
  out.emptyCards = [];
  d.querySelectorAll(".card.run").forEach(function (c) {
    var t = c.textContent.replace(c.querySelector("h3") ? c.querySelector("h3").textContent : "", "").trim();
    if (!t) out.emptyCards.push(c.querySelector("h3") ? c.querySelector("h3").textContent.trim() : "?");
  });
  // What reaches past the viewport outside a scrolling frame of its own.
  d.querySelectorAll("body *").forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.right <= w.innerWidth + 0.5 || out.overflowing.length >= 8) return;
    for (var p = e.parentElement; p && p !== d.body; p = p.parentElement) {
      var o = w.getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll" || o === "hidden") return;
    }
    out.overflowing.push(e.tagName.toLowerCase() + (e.className && e.className.baseVal === undefined ? "." + e.className : "") + " right=" + Math.round(r.right));
  });
  return out;
}
window.addEventListener("load", function () {
  var pre = document.createElement("pre");
  pre.id = "tg-measure";
  pre.textContent = JSON.stringify([].map.call(document.querySelectorAll("iframe"), measureFrame));
  document.body.appendChild(pre);
});
`

type measured struct {
	Dark         bool     `json:"dark"`
	Sideways     []string `json:"sideways"`
	Clipped      []string `json:"clipped"`
	GateTexts    int      `json:"gateTexts"`
	RuleLabels   int      `json:"rlabels"`
	LabelClashes []string `json:"labelClashes"`
	EmptyCards   []string `json:"emptyCards"`
	InnerWidth   int      `json:"innerWidth"`
	ScrollWidth  int      `json:"scrollWidth"`
	ScrollHeight int      `json:"scrollHeight"`
	SVGTexts     int      `json:"svgTexts"`
	MinSVGTextPx float64  `json:"minSVGTextPx"`
	MinSVGText   string   `json:"minSVGText"`
	WideCharts   int      `json:"wideCharts"`
	NarrowCharts int      `json:"narrowCharts"`
	Overflowing  []string `json:"overflowing"`
}

var measureRE = regexp.MustCompile(`(?s)<pre id="tg-measure">(.*?)</pre>`)

// runChromium runs one headless Chromium over file with args.
func runChromium(t *testing.T, bin, file string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, "file://"+file)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// measure lays page out at each of widths px in one Chromium, side by side
// in frames of those widths (a launch is most of a measurement's cost:
// one per width had the package's two layout tests at 50 s), and measures
// each; args are Chromium's further flags (a colour scheme).
func measure(t *testing.T, bin, dir, name, page string, widths []int, args ...string) []measured {
	t.Helper()
	var frames strings.Builder
	window := 20
	for _, w := range widths {
		fmt.Fprintf(&frames, `<iframe style="display:block;flex:none;width:%dpx;height:2000px;border:0" srcdoc="%s"></iframe>`, w, html.EscapeString(page))
		window += w
	}
	outer := `<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0;display:flex;align-items:flex-start">` +
		frames.String() + `<script>` + measureJS + `</script></body></html>`
	file := filepath.Join(dir, name+".html")
	if err := os.WriteFile(file, []byte(outer), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := runChromium(t, bin, file, append([]string{fmt.Sprintf("--window-size=%d,2100", max(window, 600)), "--dump-dom"}, args...)...)
	m := measureRE.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the measuring script wrote nothing at %v px", widths)
	}
	var got []measured
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &got); err != nil {
		t.Fatalf("measurement %q: %v", m[1], err)
	}
	if len(got) != len(widths) {
		t.Fatalf("%d measurements for %d widths", len(got), len(widths))
	}
	return got
}

// layoutReport is a page for the layout check.
type layoutReport struct {
	name string
	r, b *report.Report
	// failed: the page has a failed gate, whose text must show whole.
	failed bool
}

// layoutReports are pages that stress the layout: every live kind with a
// concurrency sweep under an SLO and a long gate (the sweep report);
// serving phases with failed gates of long expressions, against a
// baseline (the old-vs-new table is the widest of the live tables); a
// capacity search; chat sessions; seam runs against a baseline; an
// interrupted report with errors.
func layoutReports(t *testing.T) []layoutReport {
	rs := runExample(t, "route-session.yaml")
	serving := runExampleGated(t, "quickstart.yaml", failingGates...)
	return []layoutReport{
		{name: "every-kind", r: runEveryKind(t)},
		{name: "serving-failed", r: serving, b: viaJSON(t, serving), failed: true},
		{name: "capacity", r: runScenario(t, "capacity-phone.yaml", capacityPhone)},
		{name: "sessions", r: runExample(t, "chat-sessions.yaml")},
		{name: "route-session-baseline", r: rs, b: viaJSON(t, rs)},
		{name: "live-incomplete", r: testfixture.LiveReport()},
	}
}

// failingGates fail on any run of quickstart.yaml, each over paths too
// long for a phone's line.
var failingGates = []*scenarios.Gate{
	{Name: "identical prefix at a tenth of a millisecond", Expr: "runs.embedded.phases.prefix_cache.variants.identical.ttft_ms.p50 <= 0.0001 * runs.embedded.phases.prefix_cache.variants.fresh.ttft_ms.p50"},
	{Name: "every prompt size under a microsecond", Expr: `all(["256", "1024", "4096"], runs.embedded.phases.prefill.by_prompt_tokens[#].ttft_ms.p50 <= 0.001)`},
}

// capacityPhone is a capacity search of a few seconds, by rate, held to
// two objectives.
const capacityPhone = `
name: capacity-phone
description: A short capacity search on the embedded simulator, for the layout tests.
targets:
  server:
    kind: embedded
    sim: {max_running_seqs: 4, ttft_base: 5ms, decode_step: 10ms, decode_step_per_seq: 1ns, prefill_tokens_per_s: 1000000}
phases:
  capacity:
    kind: capacity
    capacity:
      by: rate
      min: 2
      max: 128
      start: 8
      precision: 20%
      budget: 10s
      probe: {warmup: 100ms, duration: 600ms, min_requests: 8, repeat: 1, hold: 0s}
      objectives: [ttft_ms.p99 <= 100, error_rate <= 0.01]
    arrival: constant
    prompt_tokens: 32
    max_tokens: 10
gates:
  - name: a capacity is found
    expr: runs.server.phases.capacity.capacity.max_rate_per_s >= 2
`

// TestLayoutInChromium: at 390 px nothing makes the page scroll sideways
// (tables scroll inside their frames) and the phone drawing of every chart
// is the one shown; at both widths no chart text is under 11 px on screen.
// Set TOLLGATE_SCREENSHOTS=DIR to also write each page and a full-page
// screenshot of it at each width there, to look at.
func TestLayoutInChromium(t *testing.T) {
	bin := chromium(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	shots := os.Getenv("TOLLGATE_SCREENSHOTS")
	for _, rc := range layoutReports(t) {
		page := render(t, rc.r, rc.b)
		for _, cs := range colorSchemes {
			t.Run(fmt.Sprintf("%s %s", rc.name, cs.name), func(t *testing.T) {
				// Two browsers at once (-parallel, GOMAXPROCS by
				// default): a launch is mostly waiting. Each in a folder
				// of its own.
				t.Parallel()
				dir := t.TempDir()
				ms := measure(t, bin, dir, rc.name, page, layoutWidths, cs.args...)
				for i, w := range layoutWidths {
					t.Run(fmt.Sprintf("%d px", w), func(t *testing.T) {
						m := ms[i]
						t.Logf("%+v", m)
						checkLayout(t, m, w, cs.name == "dark", rc.failed)
						if shots != "" {
							if err := os.WriteFile(filepath.Join(shots, rc.name+".html"), []byte(page), 0o644); err != nil {
								t.Fatal(err)
							}
							screenshot(t, bin, dir, page, w, m.ScrollHeight, filepath.Join(shots, fmt.Sprintf("%s-%d-%s.png", rc.name, w, cs.name)), cs.args...)
						}
					})
				}
			})
		}
	}
}

// checkLayout judges one page's measurements at width w px.
func checkLayout(t *testing.T, m measured, w int, dark, failed bool) {
	t.Helper()
	if m.InnerWidth != w {
		t.Fatalf("viewport %d px, want %d", m.InnerWidth, w)
	}
	if m.Dark != dark {
		t.Fatalf("the page is dark: %v, want %v: the colour scheme did not take", m.Dark, dark)
	}
	if m.ScrollWidth > w || len(m.Overflowing) > 0 {
		t.Errorf("the page is %d px wide at %d px; past the edge: %v", m.ScrollWidth, w, m.Overflowing)
	}
	if w < 600 && len(m.Sideways) > 0 {
		t.Errorf("frames scroll sideways at %d px, what is past their edge out of sight: %v", w, m.Sideways)
	}
	// A table may scroll inside its frame on a laptop; at either
	// width no gate's text is cut off, and on a phone no text.
	for _, c := range m.Clipped {
		if w < 600 || strings.HasPrefix(c, "gate ") {
			t.Errorf("text cut off at %d px: %s", w, c)
		}
	}
	if failed && m.GateTexts == 0 {
		t.Error("no gate text laid out")
	}
	if len(m.LabelClashes) > 0 {
		t.Errorf("%d rule labels; clashing: %v", m.RuleLabels, m.LabelClashes)
	}
	if len(m.EmptyCards) > 0 {
		t.Errorf("run cards with nothing in them: %v", m.EmptyCards)
	}
	if m.SVGTexts == 0 {
		t.Fatal("no chart text laid out")
	}
	if m.MinSVGTextPx < minSVGTextPx {
		t.Errorf("chart text %q is %.1f px on screen, want at least %d", m.MinSVGText, m.MinSVGTextPx, minSVGTextPx)
	}
	phone := w < 600
	if phone && (m.NarrowCharts == 0 || m.WideCharts > 0) || !phone && (m.WideCharts == 0 || m.NarrowCharts > 0) {
		t.Errorf("%d wide and %d narrow charts shown at %d px", m.WideCharts, m.NarrowCharts, w)
	}
}

// screenshot writes a full-page PNG of page at width px (in an iframe of
// that width when the window cannot be as narrow).
func screenshot(t *testing.T, bin, dir, page string, width, height int, out string, args ...string) {
	t.Helper()
	height = min(max(height, 600), 16000)
	file := filepath.Join(dir, "shot.html")
	body := page
	if width < 500 {
		body = fmt.Sprintf(`<!DOCTYPE html><html><body style="margin:0;background:#888"><iframe style="display:block;width:%dpx;height:%dpx;border:0" srcdoc="%s"></iframe></body></html>`,
			width, height, html.EscapeString(page))
	}
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if abs, err := filepath.Abs(out); err == nil {
		out = abs
	}
	runChromium(t, bin, file, append([]string{fmt.Sprintf("--window-size=%d,%d", max(width, 500), height), "--screenshot=" + out}, args...)...)
	t.Logf("wrote %s", out)
}

// TestDocScreenshots rewrites docs/report-serving.png and docs/report-seam.png
// from real runs of examples/serving.yaml and examples/route-session.yaml at
// 1280 px, when TOLLGATE_DOC_SCREENSHOTS is set; it skips otherwise.
func TestDocScreenshots(t *testing.T) {
	if os.Getenv("TOLLGATE_DOC_SCREENSHOTS") == "" {
		t.Skip("set TOLLGATE_DOC_SCREENSHOTS=1 to rewrite docs/report-*.png")
	}
	bin := chromium(t)
	dir := t.TempDir()
	for _, tc := range []struct{ example, png string }{
		{"serving.yaml", "report-serving.png"},
		{"route-session.yaml", "report-seam.png"},
	} {
		r := runExample(t, tc.example)
		// As tollgate run writes it: the status the gates decided, the
		// scenario path as given from the repository root.
		r.Status = report.StatusPass
		for _, g := range r.Gates {
			if g.Status != report.StatusPass && !g.Optional {
				r.Status = report.StatusFail
			}
		}
		r.Scenario.File = "examples/" + tc.example
		r.Tool.Version = "dev"
		page := render(t, r, nil)
		m := measure(t, bin, dir, strings.TrimSuffix(tc.example, ".yaml"), page, []int{1280})[0]
		screenshot(t, bin, dir, page, 1280, m.ScrollHeight, filepath.Join("..", "..", "docs", tc.png))
	}
}

// everyKind is every live phase kind on the embedded simulator, small, with
// a load sweep under an SLO and gates, one of them long.
const everyKind = `
name: every-kind
description: Every live phase kind, small, for the layout and chart tests.
vars: {slo_ttft_ms: 400}
targets:
  sim: {kind: embedded, sim: {decode_step: 1ms}, metrics: false}
phases:
  warmup: {requests: 2, prompt_tokens: 16, max_tokens: 2}
  prefill: {prompt_tokens: [64, 256, 1024], repeat: 3, max_tokens: 2}
  decode: {prompt_tokens: 32, max_tokens: 12, repeat: 3}
  prefix_cache: {prompt_tokens: 512, suffix_tokens: 16, repeat: 3, max_tokens: 2}
  load:
    sweep: {concurrency: [1, 4, 8]}
    requests: 12
    prompt_tokens: 64
    max_tokens: 6
    slo: {ttft_ms: "${vars.slo_ttft_ms}", e2e_ms: 2000}
gates:
  - name: p99 TTFT under the SLO at every point of the sweep, however long this gate's name gets on a phone
    expr: all(runs.sim.phases.load.points, .ttft_ms.p99 <= vars.slo_ttft_ms) && runs.sim.phases.prefix_cache.variants.identical.ttft_ms.p50 <= runs.sim.phases.prefix_cache.variants.fresh.ttft_ms.p50
`

// runEveryKind runs everyKind for real.
func runEveryKind(t *testing.T) *report.Report {
	t.Helper()
	return runScenario(t, "every-kind.yaml", everyKind)
}

// runScenario runs a scenario given as text for real, gates judged.
func runScenario(t *testing.T, name, text string) *report.Report {
	t.Helper()
	sc, err := scenarios.Parse(name, []byte(text), scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{ToolVersion: "test"}
	r := engine.New(sc, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := engine.Run(ctx, sc, r, opts); err != nil {
		t.Fatal(err)
	}
	return judge(t, r, sc)
}

// figures are the charts of a page by title.
func figures(r, base *report.Report) map[string]figure {
	out := map[string]figure{}
	for _, s := range newCharts(r, base).sections() {
		for _, f := range s.Figures {
			out[f.Title] = f
		}
	}
	return out
}

// Latency CDFs are drawn per prompt size, variant and load point, from the
// samples or (without them) from each slice's percentiles; the load
// phase's SLO is a labelled line on its CDFs and on the TTFT p99 sweep.
func TestCDFSlicesAndSLOLines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded simulator")
	}
	r := runEveryKind(t)
	bare := viaJSON(t, r)
	for _, run := range bare.Runs {
		for _, p := range run.Phases {
			p.Samples = nil
		}
	}
	for _, tc := range []struct {
		name   string
		r      *report.Report
		approx bool
	}{{"from samples", r, false}, {"from percentiles", bare, true}} {
		t.Run(tc.name, func(t *testing.T) {
			figs := figures(tc.r, nil)
			for _, want := range []struct {
				title  string
				legend []string
				rule   string
			}{
				{"TTFT distribution by prompt size — prefill", []string{"64 tokens", "256 tokens", "1024 tokens"}, ""},
				{"TTFT distribution by variant — prefix_cache", []string{"fresh", "identical", "small_suffix"}, ""},
				{"TTFT distribution by load point — load", []string{"concurrency 1", "concurrency 4", "concurrency 8"}, "SLO ttft_ms ≤ 400"},
				{"End-to-end latency distribution by load point — load", []string{"concurrency 1", "concurrency 4", "concurrency 8"}, "SLO e2e_ms ≤ 2000"},
				{"TTFT distribution — decode", []string{"decode"}, ""},
				{"TTFT p99 against concurrency — sim · load", []string{"sim"}, "SLO ttft_ms ≤ 400"},
			} {
				f, ok := figs[want.title]
				if !ok {
					t.Errorf("no chart %q", want.title)
					continue
				}
				var names []string
				for _, l := range f.Legend {
					names = append(names, l.Name)
				}
				if strings.Join(names, "|") != strings.Join(want.legend, "|") {
					t.Errorf("%q: legend %v, want %v", want.title, names, want.legend)
				}
				for _, svg := range []string{string(f.SVG), string(f.SVGNarrow)} {
					rules := strings.Count(svg, `<g class="rule">`)
					switch {
					case want.rule == "" && rules > 0:
						t.Errorf("%q: a threshold line where the scenario declares none", want.title)
					case want.rule != "" && (rules != 1 || !strings.Contains(svg, ">"+want.rule+"<")):
						t.Errorf("%q: %d threshold lines, want one labelled %q", want.title, rules, want.rule)
					}
				}
				if strings.HasPrefix(want.title, "TTFT distribution") && strings.Contains(f.Note, "traced through its percentiles") != tc.approx {
					t.Errorf("%q: note %q, traced from percentiles: %v", want.title, f.Note, tc.approx)
				}
			}
			for title := range figs {
				if strings.HasPrefix(title, "TTFT distribution by phase") {
					t.Errorf("chart %q mixes sliced phases into one curve", title)
				}
			}
		})
	}
}

// Every chart is drawn twice, wide and narrow, with the same series.
func TestChartsDrawnWideAndNarrow(t *testing.T) {
	page := render(t, testfixture.LiveReport(), nil)
	wide, narrow := strings.Count(page, `class="chart" viewBox="0 0 520 310"`), strings.Count(page, `class="chart narrow" viewBox="0 0 320 290"`)
	if wide == 0 || wide != narrow {
		t.Errorf("%d wide and %d narrow drawings, want one of each per chart", wide, narrow)
	}
}

// Against a baseline each slice's old curve is drawn beside its new one.
func TestCDFSlicesAgainstBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded simulator")
	}
	r := runEveryKind(t)
	f := figures(r, viaJSON(t, r))["TTFT distribution by load point — load"]
	var names []string
	for _, l := range f.Legend {
		names = append(names, l.Name)
	}
	want := "concurrency 1|concurrency 1 (baseline)|concurrency 4|concurrency 4 (baseline)|concurrency 8|concurrency 8 (baseline)"
	if strings.Join(names, "|") != want {
		t.Errorf("legend %v, want %s", names, want)
	}
}

// A CDF over many samples steps through a bounded number of ranks, and
// still ends at the maximum with markers at p50 and p95.
func TestCDFPointsBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		maxPts  int
		allKept bool
	}{
		{"few samples, every one", 7, 8, true},
		{"exactly the bound", maxCDFSteps, maxCDFSteps + 1, true},
		{"a long load phase", 100_000, maxCDFSteps + 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := make([]float64, tc.n)
			for i := range vals {
				vals[i] = float64(tc.n - i) // unsorted on purpose
			}
			pts := cdfPoints(vals, "ms")
			if len(pts) > tc.maxPts || tc.allKept && len(pts) != tc.n+1 {
				t.Errorf("%d points for %d samples, want at most %d", len(pts), tc.n, tc.maxPts)
			}
			last := pts[len(pts)-1]
			if last.X != float64(tc.n) || last.Y != 100 {
				t.Errorf("curve ends at (%v, %v), want (%d, 100)", last.X, last.Y, tc.n)
			}
			marks := 0
			for i, p := range pts {
				if p.Mark {
					marks++
				}
				if i > 0 && (p.X < pts[i-1].X || p.Y < pts[i-1].Y) {
					t.Fatalf("point %d goes back: %v after %v", i, p, pts[i-1])
				}
			}
			if marks < 1 || marks > 2 {
				t.Errorf("%d markers, want p50 and p95", marks)
			}
		})
	}
}
