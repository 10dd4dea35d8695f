package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/gates"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// judge runs a scenario and evaluates its gates, as tollgate run does, and
// returns each gate's status by name.
func judge(t *testing.T, sc *scenarios.Scenario) map[string]string {
	t.Helper()
	shape, err := Shape(sc)
	if err != nil {
		t.Fatal(err)
	}
	env, err := gates.Env(shape, sc.Vars)
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]gates.Spec, 0, len(sc.Gates))
	for _, g := range sc.Gates {
		specs = append(specs, gates.Spec{Name: g.Name, Expr: g.Expr})
	}
	set, problems := gates.Compile(specs, env)
	if len(problems) > 0 {
		t.Fatalf("gates do not compile against the shape: %v", problems)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := New(sc, Options{})
	if err := Run(ctx, sc, r, Options{}); err != nil {
		t.Fatalf("run: %v", err)
	}
	if env, err = gates.Env(r, sc.Vars); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range set.Evaluate(env) {
		out[g.Name] = g.Status
	}
	return out
}

// endpoint answers one-token completions; echo says whether the n-th
// completion (from 1) echoes the session header.
func endpoint(t *testing.T, echo func(n int) bool) string {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			fmt.Fprint(w, "{}")
		case "/v1/completions":
			k := int(n.Add(1))
			if echo(k) {
				w.Header().Set("X-Meshnet-Session", r.Header.Get("X-Meshnet-Session"))
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"tok\"}]}\n\ndata: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The route-session-live gates on a real wire: a leaked connection fails
// the clean-shutdown gate, a server that loses the session after the
// prefill fails the one-session gate, and nothing else moves.
func TestLiveSeamGatesCatch(t *testing.T) {
	tokens := "vars.expected_tokens=[tok, tok, tok, tok, tok, tok, tok, tok, tok, tok, tok, tok, tok, tok, tok, tok]"
	for _, tc := range []struct {
		name  string
		echo  func(int) bool
		sets  []string
		fails []string
	}{
		{name: "a well-behaved node passes the invariants", echo: func(int) bool { return true }},
		{name: "a leaked connection fails clean shutdown", echo: func(int) bool { return true },
			sets: []string{"targets.route.faults={leak_connections: 1}"}, fails: []string{"clean shutdown"}},
		{name: "a node that drops the session header fails one route session", echo: func(k int) bool { return k%17 == 1 },
			fails: []string{"one route session per run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each its own endpoint
			sets := append([]string{"vars.base_url=" + endpoint(t, tc.echo), tokens, "targets.route.endpoint.model=m"}, tc.sets...)
			sc, err := scenarios.Load("../examples/route-session-live.yaml", scenarios.Options{Sets: sets})
			if err != nil {
				t.Fatal(err)
			}
			got := judge(t, sc)
			want := map[string]bool{}
			for _, f := range tc.fails {
				want[f] = true
			}
			for _, name := range []string{"output tokens unchanged", "one route session per run", "activation ids never reused",
				"clean shutdown", "cached runs open one connection per seam", "stateless runs open a connection per transfer",
				"relayed connections all went through the relay"} {
				wantStatus := report.StatusPass
				if want[name] {
					wantStatus = report.StatusFail
				}
				if got[name] != wantStatus {
					t.Errorf("gate %q: %s, want %s", name, got[name], wantStatus)
				}
			}
		})
	}
}

// A live seam's secrets stay out of the report and its errors: the base
// URL's password, a secret header's value and the API key.
func TestLiveSeamSecretsRedacted(t *testing.T) {
	const pass, hdr, key = "pw-Zq8vN3xLr7", "hdr-Tf9YcD4h", "sk-live-Kp2Wb9"
	sc, err := scenarios.Load("../examples/route-session-live.yaml", scenarios.Options{Sets: []string{
		"vars.base_url=http://user:" + pass + "@127.0.0.1:1",
		"targets.route.endpoint.ready_timeout=100ms",
		"targets.route.endpoint.api_key_env=SEAM_KEY",
		"targets.route.endpoint.headers={X-Tenant-Token: " + hdr + "}",
		"targets.route.endpoint.secret_headers=[X-Tenant-Token]",
	}})
	if err != nil {
		t.Fatal(err)
	}
	sc.Runs = sc.Runs[:1]
	r := New(sc, Options{})
	lookup := func(name string) (string, bool) { return key, name == "SEAM_KEY" }
	if err := Run(context.Background(), sc, r, Options{LookupEnv: lookup}); err == nil {
		t.Fatal("an unreachable endpoint must fail the run")
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{pass, hdr, key} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the report holds %q:\n%s", secret, b)
		}
	}
	if run := r.Runs["direct/cached"]; run.Status != report.RunError || !strings.Contains(run.Error, "not ready") {
		t.Errorf("run %s: %s", run.Status, run.Error)
	}
}
