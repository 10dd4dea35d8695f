package markdown

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
)

// comparePairs are pairs of reports with changes of every kind: a
// deterministic seam regression, and a live report whose slices have too
// few samples to tell.
func comparePairs(t *testing.T) []struct {
	name     string
	old, new *report.Report
	failOn   []string
} {
	route := testfixture.RoundTrip(t, testfixture.RouteSession(t, "route-session"))
	slower := testfixture.RoundTrip(t, route)
	*slower.Runs["relay/cached"].Phases["decode"].SeamLatencyMS.P50 *= 1.2
	live := testfixture.RoundTrip(t, testfixture.LiveReport())
	liveSlower := testfixture.RoundTrip(t, live)
	p := liveSlower.Runs["embedded"].Phases["prefill"].ByPromptTokens["1024"].TTFTMS.P50
	*p *= 1.5
	return []struct {
		name     string
		old, new *report.Report
		failOn   []string
	}{
		{"seam relay slower", route, slower, []string{"decode.seam_latency_ms.p50:+10%"}},
		{"live 1024 slower, too few samples", live, liveSlower, []string{"ttft_ms.p50:+10%"}},
	}
}

// The Markdown shows, row for row, the verdict compare's text table marks.
func TestComparisonAgreesWithTable(t *testing.T) {
	wordsOf := map[string][]string{"!": {"worse"}, "+": {"better"}, "*": {"changed"}, "~": {"same", "within noise"}, "?": {"cannot tell"}}
	for _, pair := range comparePairs(t) {
		t.Run(pair.name, func(t *testing.T) {
			var ths []compare.Threshold
			for _, s := range pair.failOn {
				th, err := compare.ParseThreshold(s)
				if err != nil {
					t.Fatal(err)
				}
				ths = append(ths, th)
			}
			res, err := compare.Compare(pair.old, pair.new, compare.Options{FailOn: ths, AllowAny: true})
			if err != nil {
				t.Fatal(err)
			}
			var txt, md bytes.Buffer
			if err := compare.Table(&txt, res); err != nil {
				t.Fatal(err)
			}
			if err := WriteComparison(&md, res); err != nil {
				t.Fatal(err)
			}
			tableRows := strings.Split(txt.String(), "\n")[2 : 2+len(res.Metrics)]
			// The metric rows: those after the metric table's header (the
			// per-slice verdict table comes before it).
			var mdRows []string
			inMetrics := false
			for _, l := range strings.Split(md.String(), "\n") {
				inMetrics = inMetrics || strings.HasPrefix(l, "| run ")
				if inMetrics && strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| run ") && !strings.HasPrefix(l, "| --- ") {
					mdRows = append(mdRows, l)
				}
			}
			if len(mdRows) != len(res.Metrics) {
				t.Fatalf("%d Markdown rows, %d metrics:\n%s", len(mdRows), len(res.Metrics), md.String())
			}
			regressed := map[string]bool{}
			for _, r := range res.Regressions {
				regressed[r.Path] = true
			}
			for i, m := range res.Metrics {
				marker := strings.Fields(tableRows[i])[0]
				word := strings.TrimSpace(strings.Split(mdRows[i], " | ")[5])
				if regressed[m.Path] {
					continue // ! for a --fail-on regression, whatever the outcome
				}
				ok := false
				for _, w := range wordsOf[marker] {
					ok = ok || w == word
				}
				if !ok {
					t.Errorf("%s: the table marks %s, the Markdown reads %q", m.Path, marker, word)
				}
			}
			for _, r := range append(append(append([]compare.Regression(nil), res.Regressions...), res.WithinNoise...), res.CannotTell...) {
				if !strings.Contains(md.String(), cell(r.Reason)) {
					t.Errorf("the Markdown lacks %q", r.Reason)
				}
			}
		})
	}
}

func TestComparisonGolden(t *testing.T) {
	pair := comparePairs(t)[1]
	th, err := compare.ParseThreshold(pair.failOn[0])
	if err != nil {
		t.Fatal(err)
	}
	res, err := compare.Compare(pair.old, pair.new, compare.Options{FailOn: []compare.Threshold{th}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, res); err != nil {
		t.Fatal(err)
	}
	testfixture.Golden(t, "compare-live.md", b.Bytes(), *update)
	if err := WriteComparison(&testfixture.FailWriter{N: 10}, res); !errors.Is(err, testfixture.ErrDiskFull) {
		t.Errorf("error %v, want ErrDiskFull", err)
	}
}
