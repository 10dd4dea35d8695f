package html

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/gates"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// runExample runs an example scenario for real, gates judged, as the CLI does.
func runExample(t *testing.T, name string) *report.Report {
	t.Helper()
	return runExampleGated(t, name)
}

// runExampleGated runs an example scenario with more gates than its own.
func runExampleGated(t *testing.T, name string, more ...*scenarios.Gate) *report.Report {
	t.Helper()
	sc, err := scenarios.Load(filepath.Join("..", "..", "examples", name), scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Gates = append(sc.Gates, more...)
	r := engine.New(sc, engine.Options{ToolVersion: "test"})
	if err := engine.Run(context.Background(), sc, r, engine.Options{ToolVersion: "test"}); err != nil {
		t.Fatal(err)
	}
	return judge(t, r, sc)
}

// judge evaluates the scenario's gates over r, as the CLI does.
func judge(t *testing.T, r *report.Report, sc *scenarios.Scenario) *report.Report {
	t.Helper()
	env, err := gates.Env(r, sc.Vars)
	if err != nil {
		t.Fatal(err)
	}
	var specs []gates.Spec
	for _, g := range sc.Gates {
		specs = append(specs, gates.Spec{Name: g.Name, Expr: g.Expr, Description: g.Description, Optional: g.Optional})
	}
	set, problems := gates.Compile(specs, env)
	if len(problems) > 0 {
		t.Fatalf("gates: %v", problems)
	}
	r.Gates = set.Evaluate(env)
	return r
}

// viaJSON round-trips a report as `tollgate report` reads it: samples become []any.
func viaJSON(t *testing.T, r *report.Report) *report.Report { return testfixture.RoundTrip(t, r) }

func render(t *testing.T, r, base *report.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, r, base); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

var chartRE = regexp.MustCompile(`(?s)<svg xmlns="http://www.w3.org/2000/svg" class="chart".*?</svg>`)

// svgChart is what a structural check needs from one chart.
type svgChart struct {
	title      string
	axisTitles []string
	marks      int // series paths with data and bars with area
}

var badNumber = regexp.MustCompile(`NaN|Inf`)

// parseCharts parses every chart SVG with encoding/xml and checks that its
// coordinates are all finite.
func parseCharts(t *testing.T, page string) []svgChart {
	t.Helper()
	var charts []svgChart
	for _, frag := range chartRE.FindAllString(page, -1) {
		var c svgChart
		dec := xml.NewDecoder(strings.NewReader(frag))
		depthInSeries := 0
		var textClass string
		for {
			tok, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("chart does not parse as XML: %v\n%s", err, frag)
			}
			switch el := tok.(type) {
			case xml.StartElement:
				attrs := map[string]string{}
				for _, a := range el.Attr {
					attrs[a.Name.Local] = a.Value
					switch a.Name.Local {
					case "d", "x", "y", "x1", "x2", "y1", "y2", "width", "height", "transform", "viewBox":
						if badNumber.MatchString(a.Value) {
							t.Errorf("non-finite coordinate %s=%q in %q", a.Name.Local, a.Value, c.title)
						}
					}
				}
				if depthInSeries > 0 {
					depthInSeries++
				}
				if el.Name.Local == "g" && strings.HasPrefix(attrs["class"], "s ") {
					depthInSeries = 1
				}
				if depthInSeries > 0 {
					if el.Name.Local == "path" && attrs["d"] != "" {
						c.marks++
					}
					if el.Name.Local == "rect" && attrs["width"] != "0" && attrs["height"] != "0" {
						c.marks++
					}
				}
				textClass = attrs["class"]
				if el.Name.Local == "title" && c.title == "" {
					textClass = "charttitle"
				}
			case xml.EndElement:
				if depthInSeries > 0 {
					depthInSeries--
				}
				textClass = ""
			case xml.CharData:
				switch textClass {
				case "atitle":
					c.axisTitles = append(c.axisTitles, string(el))
				case "charttitle":
					c.title = string(el)
				}
			}
		}
		charts = append(charts, c)
	}
	return charts
}

// unitRE is an axis title's unit; a turn or a step is a position, a count
// with none.
var unitRE = regexp.MustCompile(`\((ms|tokens|tokens/s|%|req/s|streams)\)$|^(turn|step)$`)

// checkPage runs the structural checks every rendered page must pass.
func checkPage(t *testing.T, page string, r *report.Report, wantCharts []string) {
	t.Helper()
	charts := parseCharts(t, page)
	titles := map[string]bool{}
	for _, c := range charts {
		titles[c.title] = true
		if c.marks == 0 {
			t.Errorf("chart %q draws nothing", c.title)
		}
		if len(c.axisTitles) == 0 {
			t.Errorf("chart %q has no axis titles", c.title)
		}
		for _, a := range c.axisTitles {
			if a != "" && !unitRE.MatchString(a) {
				t.Errorf("chart %q: axis title %q has no unit", c.title, a)
			}
		}
	}
	for _, want := range wantCharts {
		if !titles[want] {
			t.Errorf("no chart %q; charts: %v", want, titles)
		}
	}
	for _, g := range r.Gates {
		row := regexp.MustCompile(`(?s)<tr class="gaterow">\s*<td><span class="badge [a-z]+">[^<]*` + regexp.QuoteMeta(g.Status) + `</span>.*?<b>` + regexp.QuoteMeta(htmlEscape(g.Name)) + `</b>`)
		if !row.MatchString(page) {
			t.Errorf("no %s row for gate %q", g.Status, g.Name)
		}
	}
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("%d script elements, want only the page's own", n)
	}
	for _, external := range []string{`src="http`, `href="http`, "@import", "url(http"} {
		if strings.Contains(page, external) {
			t.Errorf("page refers to an external resource: %s", external)
		}
	}
}

// htmlEscape is how html/template escapes text, for matching it in the page.
func htmlEscape(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestWriteRouteSession(t *testing.T) {
	r := runExample(t, "route-session.yaml")
	want := []string{"Decode throughput per run", "Where a prefill transfer's time goes", "Where a decode transfer's time goes",
		"Seam latency distribution — prefill", "Seam latency distribution — decode"}
	for _, tc := range []struct {
		name string
		r    *report.Report
	}{
		{"in process (typed samples)", r},
		{"decoded from JSON (untyped samples)", viaJSON(t, r)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := render(t, tc.r, nil)
			checkPage(t, page, tc.r, want)
			for _, s := range []string{"direct/cached", "relay/stateless", "connection_setup", "transport", `id="gates"`} {
				if !strings.Contains(page, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			if strings.Contains(page, `id="compare"`) {
				t.Error("a comparison without a baseline")
			}
		})
	}
}

func TestWriteQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded simulator for a few seconds")
	}
	r := runExample(t, "quickstart.yaml")
	page := render(t, viaJSON(t, r), nil)
	checkPage(t, page, r, []string{"Time to first token by prompt size", "Decode throughput per run",
		"Prefix-cache reuse: time to first token", "TTFT distribution — decode", "TTFT distribution by prompt size — prefill",
		"TTFT distribution by variant — prefix_cache", "End-to-end latency distribution by prompt size — prefill"})
	for _, s := range []string{"tollgate-sim", "/v1/models", "base_url", "small_suffix"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}

func TestWriteBaseline(t *testing.T) {
	r := runExample(t, "route-session.yaml")
	old := viaJSON(t, r)
	// The baseline was slower on direct/cached decode and faster on relay/cached.
	scale := func(p *float64, k float64) {
		if p != nil {
			*p *= k
		}
	}
	scale(old.Runs["direct/cached"].Phases["decode"].SeamLatencyMS.P50, 1.5)
	scale(old.Runs["relay/cached"].Phases["decode"].SeamLatencyMS.P50, 0.5)
	scale(old.Runs["direct/cached"].Phases["decode"].TokensPerS, 0.5)
	page := render(t, r, old)
	checkPage(t, page, r, nil)
	for _, s := range []string{`id="compare"`, "(baseline)", `class="num better">-33.3%`, `class="num worse">&#43;100.0%`,
		`class="num better">&#43;100.0%`, "metrics unchanged"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	if !strings.Contains(page, `class="s c0 old"`) {
		t.Error("no baseline series drawn")
	}
}

func TestEscapesReportText(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	r := runExample(t, "route-session.yaml")
	r = viaJSON(t, r)
	r.Scenario.Name = evil
	r.Scenario.Description = evil
	r.Host.Hostname = evil
	run := r.Runs["direct/cached"]
	delete(r.Runs, "direct/cached")
	r.Runs[evil] = run
	r.RunOrder[0] = evil
	run.Target.Metadata = map[string]any{evil: evil}
	r.Gates = append(r.Gates, report.GateResult{Name: evil, Expr: evil, Status: report.StatusError, Message: evil,
		Observations: []report.Observation{{Expr: evil, Op: "==", Left: evil, Right: 1.0}}})
	page := render(t, r, nil)
	if strings.Contains(page, "<script>alert") {
		t.Fatal("report text reached the page unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("escaped name not found")
	}
	checkPage(t, page, r, nil)
}

// Every free string of every fixture report (run and phase names, errors,
// warnings, the target's model and URL) is text on the page.
func TestEscapesFixtureStrings(t *testing.T) {
	for _, rc := range testfixture.Reports() {
		t.Run(rc.Name, func(t *testing.T) {
			page := render(t, testfixture.WithHostileStrings(rc.Report(t)), nil)
			for _, raw := range []string{"<script>alert", "<b>z"} {
				if strings.Contains(page, raw) {
					t.Errorf("%q reached the page unescaped", raw)
				}
			}
			if !strings.Contains(page, "&lt;b&gt;z&lt;/b&gt;") {
				t.Error("the escaped strings are not on the page")
			}
		})
	}
}

func TestWithoutSamples(t *testing.T) {
	r := viaJSON(t, runExample(t, "route-session.yaml"))
	for _, run := range r.Runs {
		for _, p := range run.Phases {
			p.Samples = nil
		}
	}
	page := render(t, r, nil)
	checkPage(t, page, r, []string{"Seam latency distribution — decode"})
	if !strings.Contains(page, "traced through its percentiles") {
		t.Error("a CDF from percentiles is not marked as such")
	}
	if strings.Contains(page, "transfer's time goes") {
		t.Error("a latency breakdown without samples")
	}
}

func TestSweepPoints(t *testing.T) {
	fp := func(v float64) *float64 { return &v }
	ttft := func(p99 float64) *report.ServingMetrics {
		return &report.ServingMetrics{TTFTMS: report.Stat{Count: 1, P99: fp(p99)}}
	}
	pts := []*report.LoadPoint{
		{Concurrency: 1, OutputTokensPerS: fp(100), ServingMetrics: ttft(20), Goodput: &report.Goodput{GoodRequestsPerS: fp(2)}},
		{Concurrency: 8, OutputTokensPerS: fp(700), ServingMetrics: ttft(45)},
		{Rate: 4, TotalTokensPerS: fp(50)},
		nil,
	}
	for _, tc := range []struct {
		name   string
		x      int
		metric int
		want   []float64
	}{
		{"throughput by concurrency", 0, 0, []float64{100, 700}},
		{"goodput present at one point", 0, 1, []float64{2}},
		{"p99 ttft", 0, 2, []float64{20, 45}},
		{"rate sweep falls back to total tokens", 1, 0, []float64{50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sweepSeries("run", 0, false, pts, sweepAxes()[tc.x], sweepMetrics()[tc.metric])
			var got []float64
			for _, p := range s.Pts {
				got = append(got, p.Y)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		name           string
		a              axis
		vals           []float64
		wantLo, wantHi float64
		wantTicks      int
	}{
		{"latencies from zero", axis{Zero: true}, []float64{16.07, 89.33}, 0, 100, 6},
		{"one constant value", axis{Zero: true}, []float64{99.97}, 0, 100, 6},
		{"small seam latencies", axis{}, []float64{1.035, 2.955}, 1, 3, 5},
		{"log over two decades", axis{Log: true}, []float64{6.2, 89.3}, 5, 100, 5},
		{"log over many decades ticks decades", axis{Log: true}, []float64{6.2, 2567}, 1, 10000, 5},
		{"log under a decade is linear", axis{Log: true}, []float64{3, 9}, 2, 10, 5},
		{"percent axis", axis{Zero: true, HasMx: true, Max: 100}, []float64{0, 100}, 0, 100, 6},
		{"no data", axis{}, nil, 0, 1, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScale(tc.a, tc.vals, 0, 100)
			if s.lo != tc.wantLo || s.hi != tc.wantHi || len(s.ticks) != tc.wantTicks {
				t.Errorf("range %v..%v with %d ticks %v, want %v..%v with %d", s.lo, s.hi, len(s.ticks), s.tickText, tc.wantLo, tc.wantHi, tc.wantTicks)
			}
			for _, v := range tc.vals {
				if px := s.at(v); px < -0.001 || px > 100.001 {
					t.Errorf("%v maps outside the plot: %v", v, px)
				}
			}
		})
	}
}

func TestChartsSurviveBadData(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name string
		svg  func() (string, []legendItem)
	}{
		{"line with non-finite points", lineChart{Title: "t", X: axis{Label: "x", Unit: "ms"}, Y: axis{Label: "y", Unit: "ms"},
			Series: []series{{Name: "a", Pts: []xy{pt(nan, 1, ""), pt(1, inf, ""), pt(2, 3, ""), {X: 3, Y: 4, Lo: nan, Hi: inf}}}}}.svg},
		{"line with no points", lineChart{Title: "t", X: axis{Label: "x", Unit: "ms", Log: true}, Y: axis{Label: "y", Unit: "ms"}, Series: []series{{Name: "a"}}}.svg},
		{"bars with gaps", barChart{Title: "t", Cats: []string{"a", "b"}, V: axis{Label: "v", Unit: "ms"},
			Series: []barSeries{{Name: "s", Vals: []float64{nan, 2}, Lo: []float64{inf}, Hi: []float64{nan}}}}.svg},
		{"stacked horizontal, all zero", barChart{Title: "t", Cats: []string{"a"}, V: axis{Label: "v", Unit: "ms"}, Horizontal: true, Stacked: true,
			Series: []barSeries{{Name: "s", Vals: []float64{0}}}}.svg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg, _ := tc.svg()
			parseCharts(t, svg)
			if badNumber.MatchString(svg) {
				t.Errorf("non-finite number in %s", svg)
			}
		})
	}
}

func TestEmptyAndNilReports(t *testing.T) {
	if err := Write(io.Discard, nil, nil); err == nil {
		t.Error("no error for a nil report")
	}
	page := render(t, &report.Report{}, &report.Report{})
	if !strings.Contains(page, "tollgate report") {
		t.Error("an empty report has no title")
	}
}

// TestBrowser opens real pages in headless Chromium: the charts must be in
// the DOM Chromium builds, and the page's script must run without errors.
func TestBrowser(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no browser at %s (apt-get install -y chromium to run this test)", chromium)
	}
	if testing.Short() {
		t.Skip("starts a browser")
	}
	r := runExample(t, "route-session.yaml")
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, []byte(render(t, r, viaJSON(t, r))), 0o644); err != nil {
		t.Fatal(err)
	}
	browse := func(extra ...string) (string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir(),
			"--enable-logging=stderr", "--v=0"}, extra...)
		cmd := exec.CommandContext(ctx, chromium, append(args, "file://"+file)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium: %v\n%s", err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	dom, logs := browse("--dump-dom")
	if strings.Contains(logs, "Uncaught") {
		t.Errorf("console errors:\n%s", logs)
	}
	if !strings.Contains(dom, `class="js"`) {
		t.Error("the page's script did not run")
	}
	charts := parseCharts(t, dom)
	if len(charts) < 5 {
		t.Errorf("%d charts in the DOM, want at least 5", len(charts))
	}
	for _, c := range charts {
		if c.marks == 0 {
			t.Errorf("chart %q is empty in the browser", c.title)
		}
	}
	shot := filepath.Join(dir, "shot.png")
	browse("--hide-scrollbars", "--window-size=1280,2000", "--screenshot="+shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("no screenshot: %v", err)
	}
}

// The server's own timings (llama.cpp's) sit beside the client's figures,
// and a run that did not complete says once that the gates were not judged.
func TestServerTimingsAndUnjudgedGates(t *testing.T) {
	r := testfixture.LiveReport()
	page := render(t, r, nil)
	for _, s := range []string{"the server's own timings, beside the client's", "llama.cpp timings", "9.80/10.51", "25149/23564", "98.4/98.1"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	failed := testfixture.LiveReport()
	failed.Incomplete, failed.Status, failed.Gates = false, report.StatusError, nil
	failed.Runs["embedded"].Status, failed.Runs["embedded"].Error = report.RunError, "connection refused at http://127.0.0.1:1 (retried for 10s)"
	page = render(t, failed, nil)
	if n := strings.Count(page, "Gates not judged: run embedded did not complete."); n != 1 {
		t.Errorf("the not-judged banner is on the page %d times, want once", n)
	}
	if n := strings.Count(page, "connection refused at"); n != 1 {
		t.Errorf("the run's error is on the page %d times, want once", n)
	}
}
