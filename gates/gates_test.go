package gates

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// seamEnv runs the route-session example for real and returns its gate env.
func seamEnv(t *testing.T) map[string]any {
	t.Helper()
	sc, err := scenarios.Load("../examples/route-session.yaml", scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := engine.New(sc, engine.Options{})
	if err := engine.Run(context.Background(), sc, r, engine.Options{}); err != nil {
		t.Fatal(err)
	}
	env, err := Env(r, sc.Vars)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func spec(name, expr string) Spec {
	return Spec{Name: name, Expr: expr, Pos: Position{File: "s.yaml", Line: 10, Col: 11}}
}

func TestVerdicts(t *testing.T) {
	env := seamEnv(t)
	for _, tc := range []struct {
		name, expr string
		status     string
		msg        string // substring of the message
		obsLeft    any    // left side of the first observation, when checked
	}{
		{name: "pass", expr: `runs["direct/cached"].phases.decode.seam_latency_ms.p50 <= 0.8 * runs["direct/stateless"].phases.decode.seam_latency_ms.p50`, status: "pass", obsLeft: 1.03545},
		{name: "fail shows both sides", expr: `runs["relay/cached"].phases.decode.seam_latency_ms.p95 < 1.5`, status: "fail", msg: `runs["relay/cached"].phases.decode.seam_latency_ms.p95 < 1.5: 1.55545 < 1.5 is false`, obsLeft: 1.55545},
		{name: "a failure names the run it is about", expr: `all(values(runs), .connections.attempts < 5)`, status: "fail", msg: "/stateless] .connections.attempts < 5: 5 < 5 is false"},
		{name: "all over runs", expr: `all(["direct", "relay"], runs[# + "/cached"].connections.attempts == 1)`, status: "pass"},
		{name: "run by params", expr: `run({transport: "relay", cache: "stateless"}).connections.attempts == 5`, status: "pass"},
		{name: "ambiguous run params", expr: `run({cache: "cached"}).connections.attempts == 1`, status: "error", msg: "2 runs match (direct/cached, relay/cached)"},
		{name: "ratio", expr: `ratio(runs["direct/cached"].phases.decode.tokens_per_s, runs["direct/stateless"].phases.decode.tokens_per_s) >= 1.2`, status: "pass"},
		{name: "ratio by zero errors", expr: `ratio(1, runs["direct/cached"].phases.decode.queue_wait_ms.p50) > 0`, status: "error", msg: "denominator is zero"},
		{name: "pct", expr: `pct(runs["direct/stateless"].phases.decode.seam_latency_ms.p50, runs["direct/cached"].phases.decode.seam_latency_ms.p50) > 70`, status: "pass"},
		{name: "within", expr: `within(runs["direct/cached"].phases.prefill.seam_latency_ms.p50, 3.1185, 0.001)`, status: "pass"},
		{name: "distinct and samples", expr: `all(values(runs), distinct(samples(#), "activation_id") == 5)`, status: "pass"},
		{name: "list equality", expr: `runs["direct/cached"].output_tokens == [" amber", " birch", " cedar", " dogwood"]`, status: "pass"},
		{name: "list inequality fails", expr: `runs["direct/cached"].output_tokens == vars.expected_tokens[0:2]`, status: "fail"},
		{name: "non-boolean is a load error", expr: `runs["direct/cached"].phases.decode.tokens_per_s`, status: "error", msg: "expected bool, but got float64"},
		{name: "non-boolean of unknown type errors", expr: `runs["direct/cached"].phases?.nope ?? 3`, status: "error", msg: "must be true or false"},
		{name: "optional chaining allows absence", expr: `runs["direct/cached"].phases?.nope?.p50 == nil`, status: "pass"},
		{name: "missing at runtime errors", expr: `all(["direct", "relya"], runs[# + "/cached"].connections.attempts == 1)`, status: "error", msg: `runs has no "relya/cached"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, problems := Compile([]Spec{spec(tc.name, tc.expr)}, env)
			if len(problems) > 0 {
				// Runtime misses with dynamic keys also surface at compile
				// time against the shape, which is the point.
				if tc.status == "error" && strings.Contains(problems[0].Msg, tc.msg) {
					return
				}
				t.Fatalf("compile: %v", problems)
			}
			res := set.Evaluate(env)[0]
			if res.Status != tc.status {
				t.Fatalf("status %s (%s), want %s", res.Status, res.Message, tc.status)
			}
			if !strings.Contains(res.Message, tc.msg) {
				t.Errorf("message %q, want it to contain %q", res.Message, tc.msg)
			}
			if tc.obsLeft != nil {
				if len(res.Observations) == 0 || res.Observations[0].Left != tc.obsLeft {
					t.Errorf("observations %+v, want left %v", res.Observations, tc.obsLeft)
				}
			}
		})
	}
}

func TestCompileProblems(t *testing.T) {
	env := seamEnv(t)
	for _, tc := range []struct {
		name, expr, where, msg string
		pos                    Position
	}{
		{name: "misspelt run", expr: `runs["direct/cahced"].phases.decode.seam_latency_ms.p50 < 2`, msg: `runs has no "direct/cahced" (did you mean "direct/cached"?)`, where: "s.yaml:10:15"},
		{name: "misspelt metric", expr: `runs["direct/cached"].phases.decode.seam_latency.p50 < 2`, msg: `runs["direct/cached"].phases.decode has no "seam_latency" (did you mean "seam_latency_ms"?)`},
		{name: "misspelt phase", expr: `runs["direct/cached"].phases.decod.seam_latency_ms.p50 < 2`, msg: `has no "decod" (did you mean "decode"?)`},
		{name: "unknown name", expr: `rusn["x"] < 2`, msg: "unknown name rusn"},
		{name: "first of two misspellings", expr: `runs["direct/cahced"].connections.attempts < runs["direct/cached"].conections.attempts`, msg: `runs has no "direct/cahced"`, where: "s.yaml:10:15"},
		{name: "syntax error column", expr: `1 < < 2`, where: "s.yaml:10:15", msg: "unexpected token"},
		{name: "block scalar position", expr: "true &&\n  1 < < 2", where: "s.yaml:12:9", pos: Position{File: "s.yaml", Line: 10, Col: 11, Block: true, Indent: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec(tc.name, tc.expr)
			if tc.pos.File != "" {
				s.Pos = tc.pos
			}
			_, problems := Compile([]Spec{s}, env)
			want := 1
			if strings.Contains(tc.name, "two") {
				want = 2
			}
			if len(problems) != want {
				t.Fatalf("problems %v, want %d", problems, want)
			}
			p := problems[0]
			if !strings.Contains(p.Msg, tc.msg) {
				t.Errorf("message %q, want %q", p.Msg, tc.msg)
			}
			if tc.where != "" && p.Where != tc.where {
				t.Errorf("at %s, want %s", p.Where, tc.where)
			}
		})
	}
}

// A statistic over zero samples is absent, and a gate that reads it errors:
// it can never pass on a 0.
func TestAbsentStatisticErrors(t *testing.T) {
	r := &report.Report{
		Runs: map[string]*report.Run{"a": {
			Name: "a", Params: map[string]string{},
			Phases: map[string]*report.Phase{"decode": {Kind: "decode",
				SeamMetrics: report.SeamMetricsFrom(nil, nil, nil, 0)}},
			PhaseOrder: []string{"decode"},
		}},
		RunOrder: []string{"a"},
	}
	env, err := Env(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := spec("empty", `runs.a.phases.decode.seam_latency_ms.p50 < 1000000`)
	_, problems := Compile([]Spec{s}, env)
	// Against this shape the absence is already known at load time…
	if len(problems) != 1 || !strings.Contains(problems[0].Msg, "has no p50: this phase never measures seam_latency_ms") {
		t.Fatalf("problems %v", problems)
	}
	// …and at run time against a shape that had it, the gate errors.
	full := seamEnv(t)
	set, problems := Compile([]Spec{spec("x", `runs["direct/cached"].phases.decode.seam_latency_ms.p50 < 1000000`)}, full)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	runs := full["runs"].(map[string]any)
	dec := runs["direct/cached"].(map[string]any)["phases"].(map[string]any)["decode"].(map[string]any)
	dec["seam_latency_ms"] = map[string]any{"count": 0.0}
	res := set.Evaluate(full)[0]
	if res.Status != report.StatusError || !strings.Contains(res.Message, "0 samples") {
		t.Errorf("status %s message %q, want error naming 0 samples", res.Status, res.Message)
	}
	if tokens := report.SeamMetricsFrom(nil, nil, nil, 0).TokensPerS; tokens != nil {
		t.Errorf("tokens_per_s over nothing = %v, want absent", *tokens)
	}
}

func TestEnvHasNoVerdicts(t *testing.T) {
	env := seamEnv(t)
	if _, ok := env["gates"]; ok {
		t.Error("gates must not see gate results")
	}
	if _, ok := env["vars"]; !ok {
		t.Error("vars missing from the env")
	}
}

// expr's own snippet repeats the whole line; a 1 MB expression printed
// 1.9 MB of error.
func TestCompileErrorExcerptIsBounded(t *testing.T) {
	long := strings.Repeat("1 < 2 && ", 100000) + "(1 +)"
	_, problems := Compile([]Spec{{Name: "big", Expr: long}}, map[string]any{})
	if len(problems) != 1 {
		t.Fatalf("problems: %v", problems)
	}
	msg := problems[0].Error()
	if len(msg) > 400 || !strings.Contains(msg, "…") || !strings.Contains(msg, "^") {
		t.Errorf("%d bytes: %.400s", len(msg), msg)
	}
}

// BaselineOf gives what BaselineEnv gives, sharing nothing with the env it
// copies.
func TestBaselineOfIsBaselineEnv(t *testing.T) {
	sc, err := scenarios.Load("../examples/quickstart.yaml", scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Shape(sc)
	if err != nil {
		t.Fatal(err)
	}
	env, err := Env(r, map[string]any{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	want, err := BaselineEnv(r)
	if err != nil {
		t.Fatal(err)
	}
	got := BaselineOf(env)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("BaselineOf\n%v\nBaselineEnv\n%v", got, want)
	}
	got["runs"].(map[string]any)["embedded"].(map[string]any)["phases"] = nil
	if env["runs"].(map[string]any)["embedded"].(map[string]any)["phases"] == nil {
		t.Error("BaselineOf shares its maps with env")
	}
}

// loadEnv is a report of one run whose load phase has three closed-loop
// points and one open-loop one, as gates read it.
func loadEnv(t *testing.T) map[string]any {
	t.Helper()
	f := func(v float64) *float64 { return &v }
	point := func(c int, rate, attained float64) *report.LoadPoint {
		return &report.LoadPoint{Concurrency: c, Rate: rate, PeakInFlight: int64(c),
			ServingMetrics: &report.ServingMetrics{Requests: 10, Succeeded: 10, Errors: report.ErrorSummary{ByClass: map[string]int{}}},
			Goodput:        &report.Goodput{AttainedPct: f(attained)}}
	}
	r := &report.Report{RunOrder: []string{"server"}, Runs: map[string]*report.Run{"server": {Name: "server", Status: "ok",
		PhaseOrder: []string{"load"}, Phases: map[string]*report.Phase{"load": {Kind: report.KindLoad,
			ServingMetrics: &report.ServingMetrics{Errors: report.ErrorSummary{ByClass: map[string]int{}}},
			Points:         []*report.LoadPoint{point(1, 0, 95), point(8, 0, 40), point(64, 0, 10), point(0, 2.5, 30)}}}}}}
	env, err := Env(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// A failed gate over load points names each point it judged, and a
// filter's predicate, which chose the points, is no observation of it.
func TestLoadPointObservations(t *testing.T) {
	env := loadEnv(t)
	for _, tc := range []struct {
		name, expr string
		msg        string   // the gate's message, exactly
		obs        []string // every observation's expr, in order
	}{
		{
			name: "all points",
			expr: `all(runs.server.phases.load.points, .goodput.attained_pct >= 50)`,
			msg:  "[server, concurrency 8] .goodput.attained_pct >= 50: 40 >= 50 is false",
			obs:  []string{"[server, concurrency 8] .goodput.attained_pct >= 50", "[server, concurrency 1] .goodput.attained_pct >= 50"},
		},
		{
			name: "filtered points: the predicate selects, the gate judges",
			expr: `all(filter(runs.server.phases.load.points, .peak_in_flight >= 8), .goodput.attained_pct >= 20)`,
			msg:  "[server, concurrency 64] .goodput.attained_pct >= 20: 10 >= 20 is false",
			obs:  []string{"[server, concurrency 64] .goodput.attained_pct >= 20", "[server, concurrency 8] .goodput.attained_pct >= 20"},
		},
		{
			name: "an open-loop point is named by its rate",
			expr: `all(runs.server.phases.load.points, .goodput.attained_pct != 30)`,
			msg:  "[server, rate 2.5/s] .goodput.attained_pct != 30: 30 != 30 is false",
		},
		{
			name: "a point read by its index needs no name",
			expr: `runs.server.phases.load.points[1].goodput.attained_pct >= 50`,
			msg:  "runs.server.phases.load.points[1].goodput.attained_pct >= 50: 40 >= 50 is false",
			obs:  []string{"runs.server.phases.load.points[1].goodput.attained_pct >= 50"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, problems := Compile([]Spec{spec(tc.name, tc.expr)}, env)
			if len(problems) > 0 {
				t.Fatalf("compile: %v", problems)
			}
			res := set.Evaluate(env)[0]
			if res.Status != report.StatusFail {
				t.Fatalf("status %s (%s), want fail", res.Status, res.Message)
			}
			if !strings.HasPrefix(res.Message, tc.msg) {
				t.Errorf("message %q, want %q", res.Message, tc.msg)
			}
			if strings.Contains(res.Message, ".peak_in_flight") {
				t.Errorf("message %q quotes the filter's predicate", res.Message)
			}
			if tc.obs == nil {
				return
			}
			var got []string
			for _, o := range res.Observations {
				got = append(got, o.Expr)
			}
			if strings.Join(got, "\n") != strings.Join(tc.obs, "\n") {
				t.Errorf("observations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.obs, "\n"))
			}
		})
	}
}
