package remotewrite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

// dashboardFiles are the Grafana dashboards shipped under deploy/grafana.
func dashboardFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "grafana", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards under deploy/grafana (%v)", err)
	}
	return files
}

type dashPanel struct {
	Title   string      `json:"title"`
	Type    string      `json:"type"`
	Panels  []dashPanel `json:"panels"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
}

type dashboard struct {
	Title      string      `json:"title"`
	UID        string      `json:"uid"`
	Panels     []dashPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

var (
	// dashVar is a Grafana variable in a query: $name or ${name}
	// (${name:format} too).
	dashVar = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}?`)
	// labelValues is Grafana's variable query label_values(SELECTOR, LABEL).
	labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)
	legendLabel = regexp.MustCompile(`\{\{\s*([^}\s]+)\s*\}\}`)
)

// promQL is a dashboard query as Prometheus reads it once Grafana has put
// its variables in: intervals become a duration, the others a value.
func promQL(q string) string {
	return dashVar.ReplaceAllStringFunc(q, func(m string) string {
		if strings.HasPrefix(strings.Trim(m, "${}"), "__") {
			return "5m" // $__interval, $__range, $__rate_interval
		}
		return "x"
	})
}

// queryProblems checks one query (and its legend) against the catalog:
// it must parse, select only series tollgate writes, match, group by and
// name in its legend only labels those series carry. It returns what is
// wrong and the families it reads.
func queryProblems(catalog map[string][]string, q, legend string) (problems, read []string) {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(promQL(q))
	if err != nil {
		return []string{fmt.Sprintf("%q does not parse: %v", q, err)}, nil
	}
	var labels, grouping []string
	var sels int
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.AggregateExpr:
			grouping = append(grouping, n.Grouping...)
		case *parser.VectorSelector:
			sels++
			name := n.Name
			for _, m := range n.LabelMatchers {
				if m.Name == model.MetricNameLabel && name == "" {
					name = m.Value
				}
			}
			have, ok := catalog[name]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s is not a series tollgate writes", n))
				return nil
			}
			read = append(read, name)
			labels = append(labels, have...)
			for _, m := range n.LabelMatchers {
				if m.Name != model.MetricNameLabel && !slices.Contains(have, m.Name) {
					problems = append(problems, fmt.Sprintf("%s has no label %q (it has %v)", name, m.Name, have))
				}
			}
		}
		return nil
	})
	if sels == 0 {
		problems = append(problems, fmt.Sprintf("%q selects no series", q))
	}
	for _, g := range grouping {
		if !slices.Contains(labels, g) {
			problems = append(problems, fmt.Sprintf("groups by %q, which none of its series has", g))
		}
	}
	for _, m := range legendLabel.FindAllStringSubmatch(legend, -1) {
		if len(grouping) > 0 && !slices.Contains(grouping, m[1]) || !slices.Contains(labels, m[1]) {
			problems = append(problems, fmt.Sprintf("the legend names %q, which its result has not", m[1]))
		}
	}
	return problems, read
}

// variableProblems checks a variable's label_values(SELECTOR, LABEL).
func variableProblems(catalog map[string][]string, q string) []string {
	m := labelValues.FindStringSubmatch(q)
	if m == nil {
		return []string{fmt.Sprintf("%q is not label_values(SELECTOR, LABEL)", q)}
	}
	problems, read := queryProblems(catalog, m[1], "")
	for _, name := range read {
		if !slices.Contains(catalog[name], m[2]) {
			problems = append(problems, fmt.Sprintf("%s has no label %q", name, m[2]))
		}
	}
	return problems
}

// Every query of every dashboard names only series tollgate writes, and
// only labels those series carry (Catalog, from the code that writes
// them); its legends and groupings only those labels; its variables too.
// The dashboard has the panels and variables it promises.
func TestDashboardQueriesNameWrittenSeries(t *testing.T) {
	catalog := catalogLabels(t)
	for _, file := range dashboardFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var d dashboard
			if err := json.Unmarshal(data, &d); err != nil {
				t.Fatalf("not a dashboard: %v", err)
			}
			if d.Title == "" || d.UID == "" {
				t.Error("the dashboard has no title or uid")
			}
			read := map[string]bool{} // families some panel reads
			queries := 0
			var walk func(ps []dashPanel)
			walk = func(ps []dashPanel) {
				for _, p := range ps {
					walk(p.Panels) // a row's panels
					if p.Type != "row" && len(p.Targets) == 0 {
						t.Errorf("panel %q has no query", p.Title)
					}
					for i, tg := range p.Targets {
						queries++
						problems, names := queryProblems(catalog, tg.Expr, tg.LegendFormat)
						for _, pr := range problems {
							t.Errorf("panel %q, query %c: %s", p.Title, 'A'+i, pr)
						}
						for _, n := range names {
							read[n] = true
						}
					}
				}
			}
			walk(d.Panels)
			vars := map[string]bool{}
			for _, v := range d.Templating.List {
				vars[v.Name] = true
				if v.Type != "query" {
					continue
				}
				var q struct {
					Query string `json:"query"`
				}
				if err := json.Unmarshal(v.Query, &q); err != nil {
					_ = json.Unmarshal(v.Query, &q.Query) // a plain string
				}
				for _, pr := range variableProblems(catalog, q.Query) {
					t.Errorf("variable %s: %s", v.Name, pr)
				}
			}
			for _, v := range []string{"scenario", "target"} {
				if !vars[v] {
					t.Errorf("no template variable %s", v)
				}
			}
			for _, f := range []string{"tollgate_ttft_seconds", "tollgate_tpot_seconds", "tollgate_gate_passed", "tollgate_capacity_rate_per_second"} {
				if !read[f] {
					t.Errorf("no panel reads %s", f)
				}
			}
			t.Logf("%d queries checked against %d families", queries, len(catalog))
		})
	}
}

// The check catches what it is for.
func TestDashboardCheckCatches(t *testing.T) {
	catalog := catalogLabels(t)
	for _, c := range []struct{ q, legend, want string }{
		{`tollgate_ttft_ms{scenario="x"}`, "", "not a series tollgate writes"},
		{`{__name__="tollgate_nope"}`, "", "not a series tollgate writes"},
		{`tollgate_ttft_seconds{percentile="0.99"}`, "", `has no label "percentile"`},
		{`sum by (instance) (tollgate_requests)`, "", `groups by "instance"`},
		{`sum by (phase) (tollgate_requests)`, "{{slice}}", `the legend names "slice"`},
		{`tollgate_gate_passed`, "{{phase}}", `the legend names "phase"`},
		{`rate(tollgate_requests[`, "", "does not parse"},
	} {
		problems, _ := queryProblems(catalog, c.q, c.legend)
		if !strings.Contains(strings.Join(problems, "\n"), c.want) {
			t.Errorf("%q (legend %q): %v, want a problem saying %q", c.q, c.legend, problems, c.want)
		}
	}
	if p := variableProblems(catalog, "label_values(tollgate_gate_passed, target)"); len(p) == 0 {
		t.Error("label_values over a label the series lacks passes")
	}
	if p := variableProblems(catalog, `label_values(tollgate_run_ok{scenario=~"$scenario"}, target)`); len(p) != 0 {
		t.Errorf("a good variable: %v", p)
	}
	if p, _ := queryProblems(catalog, `last_over_time(tollgate_ttft_seconds{scenario=~"$scenario", quantile=~"${quantile}"}[$__interval])`, "{{slice}} q{{quantile}}"); len(p) != 0 {
		t.Errorf("a good query: %v", p)
	}
}
