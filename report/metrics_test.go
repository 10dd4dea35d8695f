package report_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// The metric table and the published report schema say the same: every
// row is a statistic of servingMetrics with the row's formula as its
// description and a per-request field of requestSample (itl_ms, many per
// request, excepted), and every statistic the schema lists is a row.
func TestSchemaFollowsMetricTable(t *testing.T) {
	data, err := os.ReadFile("../schema/report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	type prop struct {
		Ref         string `json:"$ref"`
		Description string `json:"description"`
	}
	var doc struct {
		Defs map[string]struct {
			Properties map[string]prop `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	check := func(def string, keys []string, desc func(string) string, perRequest bool) {
		props := doc.Defs[def].Properties
		for _, k := range keys {
			p, ok := props[k]
			if !ok {
				t.Errorf("%s: the table's %s is not in the schema", def, k)
				continue
			}
			if !perRequest && p.Ref != "#/$defs/stat" {
				t.Errorf("%s.%s: $ref %q, want a stat", def, k, p.Ref)
			}
			if want := desc(k); want != "" && p.Description != want {
				t.Errorf("%s.%s: the schema says\n  %q\nthe table says\n  %q", def, k, p.Description, want)
			}
		}
		if perRequest {
			return
		}
		for k, p := range props {
			if p.Ref == "#/$defs/stat" && !slices.Contains(keys, k) {
				t.Errorf("%s: the schema's statistic %s is not in the table", def, k)
			}
		}
	}
	var keys, sampled []string
	for _, m := range report.Metrics {
		keys = append(keys, m.Key)
		if m.Value != nil {
			sampled = append(sampled, m.Key)
		}
		if (m.Value == nil) == (m.Values == nil) {
			t.Errorf("%s: a row has exactly one of Value and Values", m.Key)
		}
	}
	check("servingMetrics", keys, func(k string) string { m, _ := report.MetricByKey(k); return m.Description }, false)
	check("requestSample", sampled, func(string) string { return "" }, true)
	var srv []string
	for _, m := range report.ServerTimingMetrics {
		srv = append(srv, m.Key)
	}
	check("serverReported", srv, func(k string) string {
		for _, m := range report.ServerTimingMetrics {
			if m.Key == k {
				return m.Description
			}
		}
		return ""
	}, false)
}

// Every row's Stat and Value reach the field of its own key: a value put
// under the key in the JSON of a RequestMetrics (what engine/measure
// measures, embedded in the sample) is what Value reads, and a Stat set
// through the row appears in the JSON under the key.
func TestMetricTableFieldsMatchKeys(t *testing.T) {
	for _, m := range report.Metrics {
		t.Run(m.Key, func(t *testing.T) {
			var sm report.ServingMetrics
			*m.Stat(&sm) = report.Stat{Count: 7}
			b, _ := json.Marshal(&sm)
			var back map[string]any
			_ = json.Unmarshal(b, &back)
			if st, _ := back[m.Key].(map[string]any); st == nil || st["count"] != float64(7) {
				t.Errorf("Stat does not reach %s: %s", m.Key, b)
			}
			if m.Value == nil {
				return
			}
			var measured report.RequestMetrics
			if err := json.Unmarshal([]byte(`{"`+m.Key+`": 3}`), &measured); err != nil {
				t.Fatal(err)
			}
			s := report.RequestSample{RequestMetrics: measured}
			if v, ok := m.Value(&s); !ok || v != 3 {
				t.Errorf("Value reads %v, %v from a sample with %s 3", v, ok, m.Key)
			}
		})
	}
}

// The schema's error classes are the report's, in the same order, and the
// by_class description names each of them.
func TestSchemaErrorClassesAreTheReports(t *testing.T) {
	data, err := os.ReadFile("../schema/report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs struct {
			ErrorClass struct {
				Enum []string `json:"enum"`
			} `json:"errorClass"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(doc.Defs.ErrorClass.Enum, report.ErrorClasses) {
		t.Fatalf("schema errorClass enum %q, report.ErrorClasses %q", doc.Defs.ErrorClass.Enum, report.ErrorClasses)
	}
}
