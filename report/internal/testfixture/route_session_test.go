package testfixture

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/gates"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

var update = flag.Bool("update", false, "rewrite route-session.json from a fresh run of examples/route-session.yaml")

// failing are the gates route-session-fail adds: one fails, one optional
// one fails.
var failing = []gates.Spec{
	{Name: "relay decode p95 under 1.5 ms", Expr: `all(["direct", "relay"], runs[# + "/cached"].phases.decode.seam_latency_ms.p95 < 1.5)`},
	{Name: "stateless: at most 4 connections", Optional: true, Expr: `runs["relay/stateless"].connections.attempts <= 4`},
}

// TestRouteSessionRuns runs examples/route-session.yaml (a seam scenario:
// deterministic), judges it, and holds route-session.json, which every
// writer's golden test renders, to what the engine and the gates produce now.
func TestRouteSessionRuns(t *testing.T) {
	runs := map[string]*report.Report{
		"route-session":      judgedRouteSession(t),
		"route-session-fail": judgedRouteSession(t, failing...),
	}
	got, err := json.MarshalIndent(runs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(RouteSessionFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(RouteSessionFile)
	if err != nil {
		t.Fatalf("%v (go test -update ./report/internal/testfixture/ writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what examples/route-session.yaml gives now; if intended, run go test -update ./report/internal/testfixture/ and then go test -update on the writers", RouteSessionFile)
	}
}

// judgedRouteSession runs the example and judges its gates and extra, with
// the wall-clock and machine facts pinned.
func judgedRouteSession(t *testing.T, extra ...gates.Spec) *report.Report {
	t.Helper()
	sc, err := scenarios.Load("../../../examples/route-session.yaml", scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{ToolVersion: "test", Now: func() time.Time { return time.Time{} }}
	r := engine.New(sc, opts)
	if err := engine.Run(context.Background(), sc, r, opts); err != nil {
		t.Fatal(err)
	}
	// The file as named from the repository root, not from this package.
	r.Scenario.File = "examples/route-session.yaml"
	specs := make([]gates.Spec, 0, len(sc.Gates)+len(extra))
	for _, g := range sc.Gates {
		specs = append(specs, gates.Spec{Name: g.Name, Expr: g.Expr, Description: g.Description, Optional: g.Optional})
	}
	specs = append(specs, extra...)
	env, err := gates.Env(r, sc.Vars)
	if err != nil {
		t.Fatal(err)
	}
	set, problems := gates.Compile(specs, env)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	r.Gates = set.Evaluate(env)
	r.Status = report.StatusPass
	for _, g := range r.Gates {
		if g.Status == report.StatusFail && !g.Optional {
			r.Status = report.StatusFail
		}
	}
	r.StartedAt, r.EndedAt = time.Time{}, time.Time{}
	r.Host = report.Host{}
	return r
}
