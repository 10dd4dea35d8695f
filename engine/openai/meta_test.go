package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/transport"
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
		{
			name: "/health wants credentials, /v1/models answers",
			handler: func(*atomic.Int32) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/v1/models" {
						fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
						return
					}
					http.Error(w, "login", http.StatusUnauthorized)
				}
			},
			ok: true,
		},
		{
			name: "credentials refused: fails at the first probe, not at the deadline",
			handler: func(calls *atomic.Int32) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					if calls.Add(1) > 2 {
						t.Errorf("probed again after a 401: %s", r.URL.Path)
					}
					http.Error(w, "bad key "+testSecret, http.StatusForbidden)
				}
			},
			errHas: []string{"refuses the request's credentials", "/v1/models: HTTP 403", "check api_key_env"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(tt.handler(&calls))
			defer srv.Close()
			c := newClient(t, srv.URL, nil)
			// Only a server that never gets ready waits out the deadline;
			// the others have time to spare on a loaded machine.
			wait := 10 * time.Second
			if tt.name == "never ready" {
				wait = 2 * time.Second // room for a few probes on a loaded machine
			}
			err := c.WaitReady(context.Background(), time.Now().Add(wait))
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
	if len(md) != len(transport.MetadataPaths()) {
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
	if v := md["/version"]; len(v.Text) != 64<<10 || !strings.HasPrefix(v.Note, "truncated") {
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

func TestScrapeMetrics(t *testing.T) {
	vllm, err := os.ReadFile(filepath.Join("..", "transport", "testdata", "metrics", "vllm.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		body   string
		status int
		series int
		errHas string
	}{
		{name: "vLLM exposition", body: string(vllm), status: 200, series: 16},
		{name: "no /metrics", status: 404, errHas: "HTTP 404"},
		{name: "a bad line is a warning, with secrets redacted", body: "ok 1\nbad " + testSecret + "\n", status: 200, series: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/metrics" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			s, err := newClient(t, srv.URL, nil).ScrapeMetrics(context.Background())
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err %v, want %q", err, tt.errHas)
				}
				return
			}
			if err != nil || len(s.Series) != tt.series {
				t.Fatalf("%d series, %v", len(s.Series), err)
			}
			for _, w := range s.Warnings {
				if strings.Contains(w, testSecret) {
					t.Errorf("secret in warning %q", w)
				}
			}
		})
	}
}
