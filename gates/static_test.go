package gates

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// shapeOf is the load-time shape of an example, as tollgate run builds it.
func shapeOf(t testing.TB, example string) map[string]any {
	t.Helper()
	sc, err := scenarios.Load("../examples/"+example, scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Shape(sc)
	if err != nil {
		t.Fatal(err)
	}
	env, err := Env(r, sc.Vars)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// withBaseline adds a baseline of the same shape, as --baseline does.
func withBaseline(t testing.TB, shape map[string]any) map[string]any {
	t.Helper()
	base := map[string]any{}
	for k, v := range shape {
		if k != "vars" {
			base[k] = v
		}
	}
	out := map[string]any{"baseline": base}
	for k, v := range shape {
		out[k] = v
	}
	return out
}

// where is the position Compile should report for the first occurrence of
// mark in a single-line expression written at s.yaml:10:11.
func where(expr, mark string) string {
	i := strings.Index(expr, mark)
	if i < 0 {
		panic("mark " + mark + " not in " + expr)
	}
	return fmt.Sprintf("s.yaml:10:%d", 11+len([]rune(expr[:i])))
}

func TestStaticProblems(t *testing.T) {
	serving := shapeOf(t, "quickstart.yaml")
	seams := shapeOf(t, "route-session.yaml")
	for _, tc := range []struct {
		name  string
		shape map[string]any
		expr  string
		mark  string // where the (first) problem points; "" for the start
		msg   string // substring of the first problem
		kind  error
		n     int // number of problems; 0 means 1
	}{
		// Misspellings in branches an evaluation over the shape never reads.
		{name: "right of && after a false left", shape: serving,
			expr: `runs.embedded.phases.decode.requests >= 2 && runs.embedded.phases.decode.tpot_msx.p95 < 100`,
			mark: "tpot_msx", msg: `runs.embedded.phases.decode has no "tpot_msx" (did you mean "tpot_ms"?)`, kind: ErrMissingKey},
		{name: "right of false &&", shape: serving,
			expr: `false && runs.embedded.phases.decod.requests > 0`, mark: "decod", msg: `has no "decod" (did you mean "decode"?)`, kind: ErrMissingKey},
		{name: "right of true ||", shape: serving,
			expr: `true || runs.embeded.phases.decode.requests > 0`, mark: "embeded", msg: `runs has no "embeded" (did you mean "embedded"?)`, kind: ErrMissingKey},
		{name: "unused arm of ?:", shape: serving,
			expr: `runs.embedded.phases.decode.requests > 0 ? true : runs.embedded.phases.decode.ttft.p50 > 0`,
			mark: "ttft.", msg: `has no "ttft" (did you mean "ttft_ms"?)`, kind: ErrMissingKey},
		{name: "predicate over a list filtered to nothing", shape: serving,
			expr: `all(filter(runs.embedded.phases.prefill.calibration, .tokens > 1e9), .tokenz > 0)`,
			mark: "tokenz", msg: `has no "tokenz" (did you mean "tokens"?)`, kind: ErrMissingKey},
		{name: "any over values(runs)", shape: serving,
			expr: `any(values(runs), .phases.decode.tpot.p50 > 0)`, mark: "tpot", msg: `.phases.decode has no "tpot" (did you mean "tpot_ms"?)`, kind: ErrMissingKey},
		{name: "none over samples", shape: serving,
			expr: `none(runs.embedded.phases.decode.samples, .okk)`, mark: "okk", msg: `has no "okk" (did you mean "ok"?)`, kind: ErrMissingKey},
		{name: "map then sum", shape: serving,
			expr: `sum(map(values(runs), .phases.decode.requets)) > 0`, mark: "requets", msg: `(did you mean "requests"?)`, kind: ErrMissingKey},
		{name: "count with #", shape: serving,
			expr: `count(runs.embedded.phases.decode.samples, #.ttft > 1) == 0`, mark: "ttft", msg: `(did you mean "ttft_ms"?)`, kind: ErrMissingKey},
		{name: "helper run()", shape: seams,
			expr: `run({cache: "cached", transport: "direct"}).phases.decode.seam_latency.p50 > 0`, mark: "seam_latency", msg: `(did you mean "seam_latency_ms"?)`, kind: ErrMissingKey},
		{name: "run() with params no run has", shape: seams,
			expr: `run({cache: "cahced"}).connections.attempts > 0`, mark: "run", msg: `no run has these params`, kind: ErrMissingKey},
		{name: "run() with ambiguous params", shape: seams,
			expr: `run({cache: "cached"}).connections.attempts > 0`, mark: "run", msg: `2 runs match (direct/cached, relay/cached)`, kind: ErrMissingKey},
		{name: "helper samples()", shape: seams,
			expr: `len(samples(runs["direct/cached"])) > 9 && all(samples(runs["direct/cached"]), .sesion_id != "")`,
			mark: "sesion_id", msg: `(did you mean "session_id"?)`, kind: ErrMissingKey},
		{name: "computed key, every element of a constant list", shape: seams,
			expr: `all(["direct", "relay"], runs[# + "/cahced"].connections.attempts == 1)`,
			mark: `[# + "/cahced"]`, msg: `runs has no "direct/cahced" (did you mean "direct/cached"?)`, kind: ErrMissingKey, n: 2},
		{name: "computed key, one bad element", shape: seams,
			expr: `all(["direct", "relya"], runs[# + "/cached"].connections.attempts == 1)`,
			mark: `[# + "/cached"]`, msg: `runs has no "relya/cached" (did you mean "relay/cached"?)`, kind: ErrMissingKey},
		{name: "key from keys(runs), misspelt below it", shape: seams,
			expr: `all(keys(runs), runs[#].phases.decode.seam_latency_ms.p55 > 0)`, mark: "p55", msg: `has no "p55"`, kind: ErrMissingKey},
		{name: "dynamic key checked against every value", shape: seams,
			expr: `all(values(runs), runs[.name].phases.decode.tokens_per_sec > 0)`, mark: "tokens_per_sec", msg: `(did you mean "tokens_per_s"?)`, kind: ErrMissingKey},
		{name: "let", shape: serving,
			expr: `let s = runs.embedded.phases.prefill.by_prompt_tokens; s["256"].ttft_ms.p50 < s["4097"].ttft_ms.p50`,
			mark: `["4097"]`, msg: `s has no "4097" (did you mean "4096"?)`, kind: ErrMissingKey},
		{name: "unknown name", shape: serving, expr: `rnus.embedded.requests > 1`, mark: "rnus", msg: `unknown name rnus (did you mean "runs"?)`, kind: ErrUnknownName},
		{name: "unknown function", shape: serving, expr: `percentile(runs.embedded.phases.decode.samples, 50) > 1`, mark: "percentile", msg: `unknown name percentile`, kind: ErrUnknownName},
		{name: "baseline without a baseline", shape: serving,
			expr: `runs.embedded.phases.decode.tpot_ms.p50 <= baseline.runs.embedded.phases.decode.tpot_ms.p50`, mark: "baseline", msg: "unknown name baseline", kind: ErrNoBaseline},
		{name: "baseline has the report's shape", shape: withBaseline(t, serving),
			expr: `runs.embedded.phases.decode.tpot_ms.max <= baseline.runs.embedded.phases.decode.tpot_ms.p5`, mark: "p5", msg: `baseline.runs.embedded.phases.decode.tpot_ms has no "p5"`, kind: ErrMissingKey},
		{name: "every misspelling at once", shape: serving,
			expr: `runs.embeded.phases.decode.requests > runs.embedded.phases.decod.requests`, mark: "embeded", msg: `runs has no "embeded"`, kind: ErrMissingKey, n: 2},

		// Types.
		{name: "string compared with a number", shape: serving, expr: `runs.embedded.phases.decode.kind > 3`, mark: ">", msg: "mismatched types string and int", kind: ErrType},
		{name: "string equal to a number", shape: serving, expr: `runs.embedded.name == 3`, mark: "==", msg: "mismatched types string and int", kind: ErrType},
		{name: "arithmetic on a string", shape: serving, expr: `runs.embedded.phases.decode.kind * 2 > 1`, mark: "*", msg: "mismatched types string and int", kind: ErrType},
		{name: "string minus string", shape: serving, expr: `"a" - "b" == 0`, mark: "-", msg: "mismatched types string and string", kind: ErrType},
		{name: "modulo of a float", shape: serving, expr: `runs.embedded.phases.decode.requests % 2 == 0`, mark: "%", msg: "mismatched types float64 and int", kind: ErrType},
		{name: "modulo of a float literal", shape: serving, expr: `1.5 % 2 == 1`, mark: "%", msg: "mismatched types float64 and int", kind: ErrType},
		{name: "not boolean", shape: serving, expr: `runs.embedded.phases.decode.requests`, msg: "expected bool, but got float64", kind: ErrType},
		{name: "type through # over values(runs)", shape: serving, expr: `all(values(runs), .name > 1)`, mark: ">", msg: "mismatched types string and int", kind: ErrType},
		{name: "type through a computed key", shape: seams,
			expr: `all(["direct", "relay"], runs[# + "/cached"].name >= 1)`, mark: ">=", msg: "mismatched types string and int", kind: ErrType},
		{name: "string element compared with a number", shape: seams, expr: `any(keys(runs), # > 1)`, mark: ">", msg: "mismatched types string and int", kind: ErrType},
		{name: "helper argument", shape: serving, expr: `distinct(runs.embedded.phases.decode.samples, 3) == 1`, mark: "3", msg: "cannot use int as argument", kind: ErrType},

		// Constants.
		{name: "constant division by zero", shape: serving, expr: `runs.embedded.phases.decode.requests / 0 > 1`, mark: "0 >", msg: "division by zero", kind: ErrConstant},
		{name: "constant division by a zero expression", shape: serving, expr: `runs.embedded.phases.decode.requests / (2 - 2) > 1`, mark: "- 2)", msg: "division by zero: 2 - 2 is always 0", kind: ErrConstant},
		{name: "constant modulo by zero", shape: serving, expr: `len(runs) % 0 == 1`, mark: "0 ==", msg: "modulo by zero", kind: ErrConstant},
		{name: "ratio by a constant zero", shape: serving, expr: `ratio(runs.embedded.phases.decode.requests, 0) > 1`, mark: "0)", msg: "ratio by zero", kind: ErrConstant},
		{name: "constant that errors", shape: serving, expr: `int("x") > 1`, mark: ">", msg: `cannot be evaluated`, kind: ErrConstant},
		{name: "repeat bomb", shape: serving, expr: `len(repeat(repeat("a", 900000), 900000)) > 0`, mark: "> 0", msg: "exceeds its evaluation budget", kind: ErrConstant},
		{name: "doubling bomb", shape: serving,
			expr: `let a = repeat("a", 999999); let b = a + a; let c = b + b; let d = c + c; let e = d + d; let f = e + e; let g = f + f; let h = g + g; len(h + h) > 0`,
			mark: "+ f", msg: "exceeds its evaluation budget", kind: ErrConstant},
		{name: "range bomb", shape: serving, expr: `all(1..100000000, # > 0)`, mark: "..", msg: "memory budget exceeded", kind: ErrConstant},
		{name: "constant inside a predicate", shape: serving, expr: `all(runs.embedded.phases.decode.samples, 1 % 0 == 1)`, mark: "0 ==", msg: "modulo by zero", kind: ErrConstant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, problems := Compile([]Spec{spec(tc.name, tc.expr)}, tc.shape)
			if d := time.Since(start); d > stopsWithin {
				t.Errorf("took %v", d)
			}
			want := tc.n
			if want == 0 {
				want = 1
			}
			if len(problems) != want {
				t.Fatalf("problems %v, want %d", problems, want)
			}
			p := problems[0]
			if !strings.Contains(p.Msg, tc.msg) {
				t.Errorf("message %q, want it to contain %q", p.Msg, tc.msg)
			}
			wantWhere := "s.yaml:10:11"
			if tc.mark != "" {
				wantWhere = where(tc.expr, tc.mark)
			}
			if p.Where != wantWhere {
				t.Errorf("at %s, want %s (%s)", p.Where, wantWhere, p.Msg)
			}
			if !errors.Is(p, tc.kind) {
				t.Errorf("problem %v is not %v", p.Err, tc.kind)
			}
		})
	}
}

// Gates that must load: absence allowed with ?., open maps, dynamic keys,
// constants that are fine.
func TestStaticAccepts(t *testing.T) {
	serving := shapeOf(t, "quickstart.yaml")
	seams := shapeOf(t, "route-session.yaml")
	for _, tc := range []struct {
		name  string
		shape map[string]any
		expr  string
	}{
		{"?. allows a missing key", serving, `runs.embedded.phases?.nope?.p50 == nil`},
		{"?. then ?? default", serving, `(runs.embedded.phases.prefix_cache?.server_metrics_delta?.["sglang:cache_hit_total"] ?? 1) > 0`},
		{"?. below a missing key", serving, `runs.embedded.phases.decode?.nope.deeper.still == nil`},
		{"open map", serving, `runs.embedded.phases.prefix_cache.server_metrics_delta["vllm:prefix_cache_hits_total"] > 0`},
		{"baseline", withBaseline(t, serving), `runs.embedded.phases.decode.decode_tokens_per_s.p50 >= 0.9 * baseline.runs.embedded.phases.decode.decode_tokens_per_s.p50`},
		{"baseline with dynamic keys", withBaseline(t, seams), `all(keys(runs), within(runs[#].phases.decode.seam_latency_ms.p50, baseline.runs[#].phases.decode.seam_latency_ms.p50, 0.10))`},
		{"int element", serving, `all([1, 2, 3], # % 2 >= 0)`},
		{"numbers of both kinds", serving, `len(runs) == runs.embedded.phases.decode.requests`},
		{"division by a non-zero constant", serving, `runs.embedded.phases.decode.requests / (2 - 1) > 0`},
		{"list equality", seams, `runs["direct/cached"].output_tokens == vars.expected_tokens`},
		{"find", serving, `find(runs.embedded.phases.decode.samples, .ok).ttft_ms > 0`},
		{"map over a constant list", seams, `all(map(["direct", "relay"], runs[# + "/cached"]), .connections.attempts >= 1)`},
		{"reduce", serving, `reduce(runs.embedded.phases.decode.samples, #acc + .ttft_ms, 0) >= 0`},
		{"nested predicates", serving, `all(values(runs), all(values(.phases), .errors.count == 0))`},
		{"sequence of lets", serving, `let a = 1; let b = a + 1; runs.embedded.phases.decode.requests >= b - 2`},
		{"conditional of maps", serving, `(true ? runs.embedded.phases.decode : runs.embedded.phases.prefill).requests >= 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, problems := Compile([]Spec{spec(tc.name, tc.expr)}, tc.shape); len(problems) > 0 {
				t.Fatalf("problems: %v", problems)
			}
		})
	}
}

// A gate whose bomb is not constant loads, and is stopped by the budget
// when it is evaluated, quickly.
func TestEvaluationIsBounded(t *testing.T) {
	env := seamEnv(t)
	for _, expr := range []string{
		`len(repeat(runs["direct/cached"].name, 100000000)) > 0`,
		`let a = repeat(runs["direct/cached"].name, 99999); let b = a + a; let c = b + b; let d = c + c; let e = d + d; let f = e + e; let g = f + f; let h = g + g; let i = h + h; len(i + i) > 0`,
		`all(values(runs), all(1..int(runs["direct/cached"].connections.attempts) * 10000000, # > 0))`,
	} {
		set, problems := Compile([]Spec{spec("bomb", expr)}, env)
		if len(problems) > 0 {
			t.Fatalf("%s: %v", expr, problems)
		}
		start := time.Now()
		res := set.Evaluate(env)[0]
		if res.Status != "error" || !strings.Contains(res.Message, "budget") {
			t.Errorf("%s: %s %q, want an error naming the budget", expr, res.Status, res.Message)
		}
		if d := time.Since(start); d > stopsWithin {
			t.Errorf("%s: took %v", expr, d)
		}
	}
}

// A block scalar: the problem is on the right line of the file.
func TestStaticBlockPosition(t *testing.T) {
	s := Spec{Name: "block", Expr: "runs.embedded.phases.decode.requests > 0 ||\n  runs.embedded.phases.decod.requests > 0",
		Pos: Position{File: "s.yaml", Line: 10, Col: 11, Block: true, Indent: 6}}
	_, problems := Compile([]Spec{s}, shapeOf(t, "quickstart.yaml"))
	if len(problems) != 1 || problems[0].Where != "s.yaml:12:30" {
		t.Fatalf("problems %v, want one at s.yaml:12:30", problems)
	}
}

// Nested predicates over constant lists are checked element by element
// only up to a budget, so the check itself stays fast.
func TestStaticCheckIsBounded(t *testing.T) {
	start := time.Now()
	expr := `all(1..60, all(1..60, all(1..60, all(1..60, all(1..60, # >= 0)))))`
	if _, problems := Compile([]Spec{spec("nested", expr)}, shapeOf(t, "quickstart.yaml")); len(problems) > 1 {
		t.Fatal(problems)
	}
	if d := time.Since(start); d > stopsWithin {
		t.Errorf("took %v", d)
	}
}
