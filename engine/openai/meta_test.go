package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitReady(t *testing.T) {
	tests := []struct {
		name    string
		handler func(calls *atomic.Int32) http.HandlerFunc
		ok      bool
		errHas  []string
	}{
		{
			name: "health 503 while loading, then 200",
			handler: func(calls *atomic.Int32) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path != "/health" {
						t.Errorf("unexpected %s: a 503 /health must not fall back", r.URL.Path)
					}
					if calls.Add(1) < 3 {
						http.Error(w, "loading model", http.StatusServiceUnavailable)
						return
					}
					fmt.Fprint(w, `{"status":"ok"}`)
				}
			},
			ok: true,
		},
		{
			name: "no /health, /v1/models answers",
			handler: func(*atomic.Int32) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/v1/models" {
						fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
						return
					}
					http.NotFound(w, r)
				}
			},
			ok: true,
		},
		{
			name: "never ready",
			handler: func(*atomic.Int32) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					http.Error(w, "still loading "+testSecret, http.StatusServiceUnavailable)
				}
			},
			errHas: []string{"/health: HTTP 503", "still loading", "not ready by"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(tt.handler(&calls))
			defer srv.Close()
			c := newClient(t, srv.URL, nil)
			err := c.WaitReady(context.Background(), time.Now().Add(700*time.Millisecond))
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil {
				for _, s := range append(tt.errHas, srv.URL) {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				if strings.Contains(err.Error(), testSecret) {
					t.Error("secret leaked")
				}
			}
		})
	}
}

func TestModels(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"openai list", `{"object":"list","data":[{"id":"qwen3-8b"},{"id":"other"}]}`, []string{"qwen3-8b", "other"}},
		{"llama.cpp models list only", `{"models":[{"name":"g.gguf","model":"g.gguf"}],"data":[]}`, []string{"g.gguf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, tt.body) }))
			defer srv.Close()
			got, err := newClient(t, srv.URL, nil).Models(context.Background())
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, %v", got, err)
			}
		})
	}
}

func TestMetadataSomeAbsent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			fmt.Fprint(w, "OK")
		case "/v1/models":
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
		case "/v1/stats":
			http.Error(w, "boom "+testSecret, http.StatusInternalServerError)
		case "/version":
			fmt.Fprint(w, strings.Repeat("v", 100<<10))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	md := newClient(t, srv.URL, nil).Metadata(context.Background())
	if len(md) != len(MetadataPaths()) {
		t.Fatalf("entries %d", len(md))
	}
	if md["/health"].Text != "OK" || md["/health"].JSON != nil {
		t.Errorf("/health: %+v", md["/health"])
	}
	if string(md["/v1/models"].JSON) != `{"data":[{"id":"m"}]}` {
		t.Errorf("/v1/models: %+v", md["/v1/models"])
	}
	if md["/v1/cache/status"].Note != "absent: 404" {
		t.Errorf("/v1/cache/status: %+v", md["/v1/cache/status"])
	}
	if md["/v1/stats"].Note != "HTTP 500" || strings.Contains(md["/v1/stats"].Text, testSecret) {
		t.Errorf("/v1/stats: %+v", md["/v1/stats"])
	}
	if v := md["/version"]; len(v.Text) != metadataBytes || !strings.HasPrefix(v.Note, "truncated") {
		t.Errorf("/version: note %q len %d", v.Note, len(v.Text))
	}
	if _, err := json.Marshal(md); err != nil {
		t.Fatal(err)
	}
	// A dead server still gives an entry per path.
	srv.Close()
	md = newClient(t, srv.URL, nil).Metadata(context.Background())
	if !strings.HasPrefix(md["/health"].Note, "error: ") {
		t.Errorf("dead server: %+v", md["/health"])
	}
}

const promText = `# HELP vllm:num_requests_running Number of requests running.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="qwen",engine="0"} 3.0
vllm:prompt_tokens_total{model_name="qwen"} 1234 1700000000000
process_start_time_seconds 1.7e+09
weird{path="C:\\dir",msg="say \"hi\"\nthere",} 1
nan_metric NaN
inf_metric{le="+Inf"} +Inf
neg_inf -Inf
exemplar_total{a="b"} 5 # {trace_id="x"} 1.0
# EOF
`

func TestParsePrometheus(t *testing.T) {
	got, err := ParsePrometheus(strings.NewReader(promText))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`vllm:num_requests_running{engine="0",model_name="qwen"}`: 3,
		`vllm:prompt_tokens_total{model_name="qwen"}`:             1234,
		`process_start_time_seconds`:                              1.7e9,
		`weird{msg="say \"hi\"\nthere",path="C:\\dir"}`:           1,
		`inf_metric{le="+Inf"}`:                                   math.Inf(1),
		`neg_inf`:                                                 math.Inf(-1),
		`exemplar_total{a="b"}`:                                   5,
	}
	if !math.IsNaN(got["nan_metric"]) {
		t.Errorf("nan_metric = %v", got["nan_metric"])
	}
	delete(got, "nan_metric")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	for _, bad := range []struct{ name, text string }{
		{"no value", "metric_only\n"},
		{"unterminated label", `m{a="x} 1` + "\n"},
		{"bad value", "m abc\n"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			if _, err := ParsePrometheus(strings.NewReader(bad.text)); err == nil || !strings.Contains(err.Error(), "line 1") {
				t.Fatalf("want line error, got %v", err)
			}
		})
	}
}

func TestScrapeMetricsAndDiff(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		k := n.Add(1)
		fmt.Fprintf(w, "# TYPE reqs counter\nreqs_total{code=\"200\"} %d\n", k*10)
		if k > 1 {
			fmt.Fprint(w, "reqs_total{code=\"500\"} 2\n")
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	before, err := c.ScrapeMetrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after, err := c.ScrapeMetrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := Diff(before, after)
	want := map[string]float64{`reqs_total{code="200"}`: 10, `reqs_total{code="500"}`: 2}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("diff %v", d)
	}
}
