package gates

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// maxFuzzExpr bounds fuzzed expressions: real gates are one or two lines,
// and longer inputs mostly build huge literals that only slow the fuzzer.
const maxFuzzExpr = 256

// gateDeadline is how long one compile or evaluation may take before it
// counts as a hang. expr has no loops, but builtins over ranges can be slow,
// and a gate that never returns would stall a CI run forever.
const gateDeadline = 20 * time.Second // a hang, not a slow machine

// fuzzFixture is the route-session example, run once per fuzz process: its
// report JSON (decoded afresh per input, so no input sees another's
// mutations) and its gates.
var fuzzFixture struct {
	once  sync.Once
	json  []byte
	specs []Spec
	err   error
}

func loadFuzzFixture(tb testing.TB) ([]byte, []Spec) {
	tb.Helper()
	fx := &fuzzFixture
	fx.once.Do(func() {
		sc, err := scenarios.Load("../examples/route-session.yaml", scenarios.Options{})
		if err != nil {
			fx.err = err
			return
		}
		r := engine.New(sc, engine.Options{})
		if err := engine.Run(context.Background(), sc, r, engine.Options{}); err != nil {
			fx.err = err
			return
		}
		env, err := Env(r, sc.Vars)
		if err != nil {
			fx.err = err
			return
		}
		if fx.json, err = json.Marshal(env); err != nil {
			fx.err = err
			return
		}
		for _, g := range sc.Gates {
			fx.specs = append(fx.specs, Spec{Name: g.Name, Expr: g.Expr, Optional: g.Optional,
				Pos: Position{File: "route-session.yaml", Line: g.ExprPos.Line, Col: g.ExprPos.Col}})
		}
	})
	if fx.err != nil {
		tb.Fatal(fx.err)
	}
	return fx.json, fx.specs
}

// freshEnv decodes the fixture into a new env, as Env does, so that every
// input starts from the real report shape.
func freshEnv(tb testing.TB, b []byte) map[string]any {
	tb.Helper()
	var env map[string]any
	if err := json.Unmarshal(b, &env); err != nil {
		tb.Fatal(err)
	}
	return env
}

// withinDeadline runs fn on its own goroutine: a hang fails the input with a
// message instead of stalling the fuzzer, and a panic fails it with a stack.
func withinDeadline(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Sprintf("%v\n%s", r, debug.Stack())
			}
		}()
		fn()
		done <- ""
	}()
	select {
	case p := <-done:
		if p != "" {
			t.Fatalf("%s panicked: %s", what, p)
		}
	case <-time.After(gateDeadline):
		t.Fatalf("%s did not return within %v", what, gateDeadline)
	}
}

// checkResults holds Evaluate to its contract: one verdict per gate, each
// pass, fail or error, and a failed or errored gate says why.
func checkResults(t *testing.T, set *Set, res []report.GateResult) {
	t.Helper()
	if len(res) != len(set.Gates) {
		t.Fatalf("%d results for %d gates", len(res), len(set.Gates))
	}
	for _, r := range res {
		switch r.Status {
		case report.StatusPass:
		case report.StatusFail, report.StatusError:
			if r.Message == "" {
				t.Errorf("gate %q: %s without a message", r.Expr, r.Status)
			}
		default:
			t.Errorf("gate %q: status %q", r.Expr, r.Status)
		}
		// The verdict goes into the JSON report; it must encode.
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("gate %q: result does not encode: %v", r.Expr, err)
		}
	}
}

// FuzzGates compiles arbitrary expressions against the real route-session
// report shape and evaluates them: nothing may panic or hang, every compile
// problem says where and what, and every verdict is pass, fail or error.
func FuzzGates(f *testing.F) {
	js, specs := loadFuzzFixture(f)
	for _, s := range specs {
		f.Add(s.Expr)
	}
	for _, s := range []string{
		`runs["direct/cached"].phases.decode.seam_latency_ms.p50 <= 0.8 * runs["direct/stateless"].phases.decode.seam_latency_ms.p50`,
		`run({transport: "relay", cache: "stateless"}).connections.attempts == 5`,
		`ratio(1, runs["direct/cached"].phases.decode.queue_wait_ms.p50) > 0`,
		`pct(runs["direct/stateless"].phases.decode.seam_latency_ms.p50, 0) > 70`,
		`within(1, 1.0005, 0.001)`,
		`all(values(runs), distinct(samples(#), "activation_id") == 5)`,
		`runs["direct/cached"].output_tokens == vars.expected_tokens[0:2]`,
		`runs["direct/cached"].phases?.nope?.p50 == nil`,
		`len(keys(runs)) > 0 && any(keys(runs), # contains "relay")`,
		`sum(map(values(runs), #.connections.attempts)) > 1`,
		`1 < < 2`,
		`(1..3)[0] == 1`,
		`"a" + 1`,
		`nil`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > maxFuzzExpr {
			t.Skip()
		}
		env := freshEnv(t, js)
		var set *Set
		var problems []Problem
		withinDeadline(t, "Compile", func() {
			set, problems = Compile([]Spec{{Name: "fuzz", Expr: src, Pos: Position{File: "f.yaml", Line: 3, Col: 11}}}, env)
		})
		for _, p := range problems {
			if p.Where == "" || p.Msg == "" || p.Gate != "fuzz" {
				t.Errorf("problem without a place, gate or message: %+v", p)
			}
		}
		if len(problems) > 0 {
			return
		}
		var res []report.GateResult
		withinDeadline(t, "Evaluate", func() { res = set.Evaluate(env) })
		checkResults(t, set, res)
	})
}

// envPaths lists every map key and list element under v, sorted, so a fuzz
// input can name one by index and replay the same mutation.
func envPaths(v any, prefix []any, out *[][]any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(append([]any{}, prefix...), k)
			*out = append(*out, p)
			envPaths(x[k], p, out)
		}
	case []any:
		for i, e := range x {
			p := append(append([]any{}, prefix...), i)
			*out = append(*out, p)
			envPaths(e, p, out)
		}
	}
}

// mutate applies one mutation to the value at path. Lists keep their length
// (dropping an element would shift every later index in the path list).
func mutate(env map[string]any, path []any, op byte) {
	var parent any = env
	for _, seg := range path[:len(path)-1] {
		// An earlier mutation may have replaced this subtree with another
		// shape: then this path no longer exists.
		switch p := parent.(type) {
		case map[string]any:
			k, ok := seg.(string)
			if !ok {
				return
			}
			parent = p[k]
		case []any:
			i, ok := seg.(int)
			if !ok || i >= len(p) {
				return
			}
			parent = p[i]
		default:
			return
		}
	}
	// No NaN or ±Inf: the env is decoded from report JSON, which cannot
	// hold them, so they would only exercise impossible reports.
	replacements := []any{
		nil, "", "1e3", "NaN", math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64,
		float64(math.MaxInt64), 0.0, -1.0, true, map[string]any{}, []any{}, []any{nil, "x", 1.0},
		map[string]any{"p50": "fast"},
	}
	last := path[len(path)-1]
	switch p := parent.(type) {
	case map[string]any:
		k, ok := last.(string)
		if !ok {
			return
		}
		if _, exists := p[k]; !exists {
			return
		}
		if int(op) >= len(replacements) {
			delete(p, k)
			return
		}
		p[k] = replacements[op]
	case []any:
		i, ok := last.(int)
		if !ok || i >= len(p) {
			return
		}
		p[i] = replacements[int(op)%len(replacements)]
	}
}

// FuzzGatesEnv evaluates the example's real gates over a report the fuzzer
// has damaged (keys dropped, values turned to nil, strings, huge or tiny
// numbers, wrong containers). A report from an older tollgate, a partial run
// or a hand-edited file looks like this; a gate over it must still end pass,
// fail or error, never panic or hang.
func FuzzGatesEnv(f *testing.F) {
	js, specs := loadFuzzFixture(f)
	shape := freshEnv(f, js)
	set, problems := Compile(specs, shape)
	if len(problems) > 0 {
		f.Fatalf("example gates do not compile: %v", problems)
	}
	var paths [][]any
	envPaths(shape, nil, &paths)
	// Seeds: each gate's first top-level path dropped or nulled, and a few
	// numbers replaced, so the fuzzer starts near the gates' reads.
	f.Add([]byte{})
	for i, p := range paths {
		if s := fmt.Sprint(p); strings.HasSuffix(s, "p50]") || strings.HasSuffix(s, "attempts]") || len(p) == 1 {
			f.Add([]byte{byte(i >> 8), byte(i), byte(i % 20)})
		}
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 3*32 {
			t.Skip()
		}
		env := freshEnv(t, js)
		var applied []string
		for i := 0; i+2 < len(ops); i += 3 {
			idx := (int(ops[i])<<8 | int(ops[i+1])) % len(paths)
			mutate(env, paths[idx], ops[i+2])
			applied = append(applied, fmt.Sprint(paths[idx])+"←"+strconv.Itoa(int(ops[i+2])))
		}
		var res []report.GateResult
		withinDeadline(t, "Evaluate over "+strings.Join(applied, ", "), func() { res = set.Evaluate(env) })
		checkResults(t, set, res)
	})
}
