package transport

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/engine/measure"
)

// find returns the series of a scrape by key.
func find(s measure.Scrape, key string) (measure.Series, bool) {
	for _, x := range s.Series {
		if x.Key == key {
			return x, true
		}
	}
	return measure.Series{}, false
}

// TestParsePrometheusServers parses real servers' expositions: every line
// kept, each series with its declared type.
func TestParsePrometheusServers(t *testing.T) {
	type want struct {
		key, typ string
		value    float64
	}
	tests := []struct {
		name   string
		file   string
		series int
		want   []want
		// hist is a histogram key and its cumulative buckets, le → count.
		hist    string
		buckets map[string]float64
	}{
		{
			name: "vLLM", file: "vllm.txt", series: 16,
			want: []want{
				{`python_gc_objects_collected_total{generation="1"}`, measure.MetricCounter, 678},
				{`process_resident_memory_bytes`, measure.MetricGauge, 3.2505856e9},
				{`vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"}`, measure.MetricGauge, 0.0125},
				{`vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"}`, measure.MetricCounter, 8192},
				{`vllm:request_success_total{engine="0",finished_reason="abort",model_name="Qwen/Qwen3-8B"}`, measure.MetricCounter, 0},
			},
			hist:    `vllm:time_to_first_token_seconds{engine="0",model_name="Qwen/Qwen3-8B"}`,
			buckets: map[string]float64{"0.001": 0, "0.005": 0, "0.01": 0, "0.02": 0, "0.04": 2, "0.06": 6, "0.08": 8, "0.1": 10, "0.25": 10, "+Inf": 10},
		},
		{
			name: "SGLang", file: "sglang.txt", series: 8,
			want: []want{
				{`sglang:cache_hit_rate{model_name="meta-llama/Llama-3.1-8B-Instruct"}`, measure.MetricGauge, 0.25},
				{`sglang:num_requests_total{model_name="meta-llama/Llama-3.1-8B-Instruct"}`, measure.MetricCounter, 4},
			},
			hist:    `sglang:e2e_request_latency_seconds{model_name="meta-llama/Llama-3.1-8B-Instruct"}`,
			buckets: map[string]float64{"1": 2, "2": 4, "+Inf": 4},
		},
		{
			name: "llama.cpp", file: "llamacpp.txt", series: 9,
			want: []want{
				{`llamacpp:prompt_seconds_total`, measure.MetricCounter, 0.512},
				{`llamacpp:predicted_tokens_seconds`, measure.MetricGauge, 62.5},
				{`llamacpp:requests_deferred`, measure.MetricGauge, 0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", "metrics", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			s, err := ParsePrometheus(text)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Warnings) != 0 || len(s.Series) != tt.series {
				t.Errorf("%d series, warnings %q; want %d series, no warning", len(s.Series), s.Warnings, tt.series)
			}
			for _, w := range tt.want {
				got, ok := find(s, w.key)
				if !ok || got.Type != w.typ || got.Value != w.value {
					t.Errorf("%s: %+v (found %v), want %s %v", w.key, got, ok, w.typ, w.value)
				}
			}
			if tt.hist == "" {
				return
			}
			h, ok := find(s, tt.hist)
			if !ok || h.Type != measure.MetricHistogram || !h.Labelled {
				t.Fatalf("histogram %s: %+v", tt.hist, h)
			}
			got := map[string]float64{}
			for i, b := range h.Buckets {
				got[b.LE] = b.Count
				if i > 0 && b.UpperBound <= h.Buckets[i-1].UpperBound {
					t.Errorf("buckets out of order: %+v", h.Buckets)
				}
			}
			if !reflect.DeepEqual(got, tt.buckets) || h.Count != tt.buckets["+Inf"] {
				t.Errorf("buckets %v count %v, want %v", got, h.Count, tt.buckets)
			}
		})
	}
}

// TestParsePrometheusLoses checks what a scrape keeps of an odd exposition:
// a line the parser rejects loses only itself, with a warning naming it.
func TestParsePrometheusLoses(t *testing.T) {
	tests := []struct {
		name string
		text string
		// keys are the series kept, with their values.
		keys map[string]float64
		// warn are substrings of the warnings, one each, in order.
		warn   []string
		errHas string
	}{
		{
			name: "Prometheus 3 quoted UTF-8 names",
			text: "# TYPE \"my.requests_total\" counter\n" +
				"{\"my.requests_total\", \"service.name\"=\"api\", code=\"200\"} 5\n" +
				"# TYPE \"vllm.ttft_seconds\" histogram\n" +
				"{\"vllm.ttft_seconds_bucket\", le=\"1\"} 2\n" +
				"{\"vllm.ttft_seconds_bucket\", le=\"+Inf\"} 3\n" +
				"{\"vllm.ttft_seconds_sum\"} 4.5\n" +
				"{\"vllm.ttft_seconds_count\"} 3\n",
			keys: map[string]float64{`my.requests_total{code="200","service.name"="api"}`: 5, `vllm.ttft_seconds`: 3},
		},
		{
			name: "a bad line among good ones",
			text: "# TYPE a_total counter\na_total 1\nb{unterminated=\"x} 2\nc 3\n",
			keys: map[string]float64{"a_total": 1, "c": 3},
			warn: []string{`/metrics line 3 dropped: label value "x} 2" contains unescaped new-line: "b{unterminated=\"x} 2"`},
		},
		{
			name: "two bad lines, each its own warning",
			text: "a 1\nb abc\nc 3\nd{x=} 4\ne 5\n",
			keys: map[string]float64{"a": 1, "c": 3, "e": 5},
			warn: []string{"line 2 dropped", "line 4 dropped"},
		},
		{
			name: "an OpenMetrics-only type loses its TYPE line, not its samples",
			text: "# TYPE build info\nbuild{version=\"1\"} 1\n",
			keys: map[string]float64{`build{version="1"}`: 1},
			warn: []string{`line 1 dropped: unknown metric type "info"`},
		},
		{
			name: "values JSON cannot carry",
			text: "# TYPE g gauge\ng NaN\nh +Inf\nok 1\n",
			keys: map[string]float64{"ok": 1},
			warn: []string{"g dropped: value NaN", "h dropped: value +Inf"},
		},
		{
			name: "label values escaped, timestamps ignored, no final newline",
			text: `weird{path="C:\\dir",msg="say \"hi\"\nthere"} 1 1700000000000` + "\nlast 2",
			keys: map[string]float64{`weird{msg="say \"hi\"\nthere",path="C:\\dir"}`: 1, "last": 2},
		},
		{
			name: "a name the report reserves",
			text: "{\"*\"} 1\nok 1\n",
			keys: map[string]float64{"ok": 1},
			warn: []string{`metric named "*" dropped`},
		},
		{
			name: "bad lines in two families: each re-parsed alone, numbered in the whole text",
			text: "# HELP a A.\n# TYPE a counter\na 1\na{x=\"1\"} oops\n# HELP b B.\n# TYPE b gauge\nb 2\n# TYPE c gauge\nc{ 3\nc{y=\"2\"} 4\n",
			keys: map[string]float64{"a": 1, "b": 2, `c{y="2"}`: 4},
			warn: []string{`line 4 dropped: expected float as value, got "oops"`, "line 9 dropped"},
		},
		{
			name: "a family declared again with another type",
			text: "# TYPE a counter\na 1\n# TYPE b gauge\nb 2\nbad{\n# TYPE a gauge\na{x=\"1\"} 3\n",
			keys: map[string]float64{"a": 1, "b": 2},
			warn: []string{"line 5 dropped", "a declared again as a gauge: dropped"},
		},
		{
			name:   "more bad lines than the bound",
			text:   strings.Repeat("bad line\n", maxBadLines+1),
			errHas: "more than 32 bad lines",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParsePrometheus([]byte(tt.text))
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err %v, want %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, x := range s.Series {
				got[x.Key] = x.Value
				if x.Type == measure.MetricHistogram {
					got[x.Key] = x.Count
				}
			}
			if !reflect.DeepEqual(got, tt.keys) {
				t.Errorf("series %v, want %v", got, tt.keys)
			}
			if len(s.Warnings) != len(tt.warn) {
				t.Fatalf("warnings %q, want %d", s.Warnings, len(tt.warn))
			}
			for i, w := range tt.warn {
				if !strings.Contains(s.Warnings[i], w) {
					t.Errorf("warning %q lacks %q", s.Warnings[i], w)
				}
			}
		})
	}
}

// TestParsePrometheusBadLineInAServer: one bad line in a vLLM exposition
// loses that line alone, named by its line number.
func TestParsePrometheusBadLineInAServer(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "metrics", "vllm.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(text), "\n")
	bad := strings.Join(lines[:20], "") + "vllm:broken{model_name=\"m\" 1\n" + strings.Join(lines[20:], "")
	s, err := ParsePrometheus([]byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Series) != 16 || len(s.Warnings) != 1 || !strings.HasPrefix(s.Warnings[0], "/metrics line 21 dropped: ") {
		t.Errorf("%d series, warnings %q; want 16 and line 21 dropped", len(s.Series), s.Warnings)
	}
	if h, ok := find(s, `vllm:time_to_first_token_seconds{engine="0",model_name="Qwen/Qwen3-8B"}`); !ok || h.Count != 10 {
		t.Errorf("TTFT histogram %+v", h)
	}
}

func TestParsePrometheusBoundsWarnings(t *testing.T) {
	var b strings.Builder
	for i := range maxWarnings + 5 {
		fmt.Fprintf(&b, "g%d NaN\n", i)
	}
	s, err := ParsePrometheus([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != maxWarnings+1 || s.Warnings[maxWarnings] != "and 5 more /metrics warnings" {
		t.Errorf("%d warnings, last %q", len(s.Warnings), s.Warnings[len(s.Warnings)-1])
	}
}
