// Package gates compiles expr-lang gate expressions against the report's
// shape and evaluates them over a finished report.
//
// Two rewrites make gates strict: every member access (a.b, a["b"]) reads
// through a function that errors when the key is absent, so a missing run,
// metric or statistic can never turn into a silent nil and a passing gate;
// and every comparison records both of its sides, so a verdict always comes
// with the values that decided it.
package gates

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker/nature"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"

	"github.com/tollgate-dev/tollgate/report"

	"github.com/tollgate-dev/tollgate/internal/suggest"
)

// Spec is a gate as written in the scenario.
type Spec struct {
	Name        string
	Expr        string
	Description string
	Optional    bool
	Pos         Position
}

// Position locates a gate's expression text in its file, so a compile error
// inside the expression points at the right line and column.
type Position struct {
	File      string
	Line, Col int
	// Block is true for | and > scalars: the text starts on the next line, at Indent.
	Block  bool
	Indent int
	// Quoted is true for "..." and '...' scalars: the text starts one column right.
	Quoted bool
	// Where is used verbatim when set (e.g. "--set gates.0.expr=...").
	Where string
}

// at maps a 1-based line and 0-based column inside the expression to the file.
func (p Position) at(line, col int) string {
	if p.Where != "" {
		return p.Where
	}
	if p.Line == 0 {
		return p.File
	}
	switch {
	case p.Block:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line+line, p.Indent+col+1)
	case line <= 1:
		q := 0
		if p.Quoted {
			q = 1
		}
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col+q+col)
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line+line-1, col+1)
	}
}

// Problem is a gate that cannot be compiled or names something the report will not have.
type Problem struct {
	Where string
	Gate  string
	Msg   string
	// Err is the kind of problem (ErrSyntax, ErrUnknownName, ErrNoBaseline,
	// ErrMissingKey, ErrType, ErrConstant), for errors.Is.
	Err error
}

func (p Problem) Error() string { return fmt.Sprintf("%s: gate %q: %s", p.Where, p.Gate, p.Msg) }

// Unwrap returns the kind of problem.
func (p Problem) Unwrap() error { return p.Err }

// Bounds of one evaluation. A gate is a short expression over a report;
// these are far above what a real one needs and far below what would hurt
// the machine running tollgate.
const (
	// maxNodes bounds the syntax tree (expr.MaxNodes).
	maxNodes = 5000
	// memoryBudget is expr's VM budget (elements of ranges, arrays, maps
	// and builtin results).
	memoryBudget = 1 << 22
	// maxBytes bounds the strings and lists a gate builds with repeat and
	// +, which expr's budget counts only after allocating them.
	maxBytes = 64 << 20
	// evalTimeout bounds one evaluation over a report.
	evalTimeout = 10 * time.Second
	// loadTimeout bounds evaluating a gate's constant parts at load.
	loadTimeout = 500 * time.Millisecond
	// maxVisits bounds the static check of one gate: a predicate body is
	// checked once per element of a constant list, and nested predicates
	// multiply that.
	maxVisits = 20000
)

// Gate is a compiled gate.
type Gate struct {
	Spec
	prog *vm.Program
	// readsBaseline: the gate reads baseline, so it is skipped when
	// evaluated without one.
	readsBaseline bool
}

// ReadsBaseline reports whether the gate reads baseline: evaluated over
// an environment without one, it is skipped (SkippedNoBaseline).
func (g *Gate) ReadsBaseline() bool { return g.readsBaseline }

// ReadBaseline lists the gates that read baseline, by name.
func (s *Set) ReadBaseline() []string {
	var out []string
	for _, g := range s.Gates {
		if g.readsBaseline {
			out = append(out, g.Name)
		}
	}
	return out
}

// SkippedNoBaseline is the message of a gate skipped because it reads
// baseline and none was given.
const SkippedNoBaseline = "skipped (no baseline): this gate reads baseline; give --baseline OLD.json to judge it"

// Set is the compiled gates of a scenario.
type Set struct{ Gates []*Gate }

// Compile checks every gate statically against shape (a report-shaped
// environment from Env, every addressable key present, with placeholder
// values) and compiles it: a gate that does not parse, names a run, phase
// or metric the shape lacks in any branch, has a type error, is not
// boolean, or has a constant part that cannot be evaluated (a division by
// zero, a memory bomb) is a Problem. Nothing is evaluated over the shape.
//
// Gates read baseline only when shape has one (from BaselineEnv: a
// baseline report, or the run's own shape when none is given, since a
// baseline has the report's shape); without it, baseline is an unknown
// name (ErrNoBaseline).
func Compile(specs []Spec, shape map[string]any) (*Set, []Problem) {
	set := &Set{}
	var problems []Problem
	// The environment only gives types at compile time, so its nature is
	// built once for all gates: expr.Env rebuilt it for each, a third of
	// the time of loading 14,000 gates.
	env := withHelpers(shape, newRecorder(time.Time{}))
	var cache nature.Cache
	envNature := conf.EnvWithCache(&cache, env)
	withEnv := func(c *conf.Config) {
		c.EnvObject, c.Env, c.Strict = env, envNature, envNature.Strict
	}
	static := newStaticEnv(shape)
	for _, s := range specs {
		readsBaseline, ps := static.check(s)
		if len(ps) > 0 {
			problems = append(problems, ps...)
			continue
		}
		src := &sources{text: map[ast.Node]string{}}
		prog, err := expr.Compile(s.Expr, append([]expr.Option{withEnv, expr.Patch(src), expr.Patch(&strict{src: src}),
			expr.Optimize(false), expr.MaxNodes(maxNodes)}, inKeyOrder...)...)
		if err != nil {
			problems = append(problems, compileProblem(s, err, ErrType))
			continue
		}
		set.Gates = append(set.Gates, &Gate{Spec: s, prog: prog, readsBaseline: readsBaseline})
	}
	return set, problems
}

func compileProblem(s Spec, err error, kind error) Problem {
	msg := err.Error()
	where := s.Pos.at(1, 0)
	var fe *file.Error
	if errors.As(err, &fe) {
		where = s.Pos.at(fe.Line, fe.Column)
		msg = fe.Message + snippet(s.Expr, fe.Line, fe.Column)
	}
	msg = strings.ReplaceAll(msg, "__get(", "(")
	return Problem{Where: where, Gate: s.Name, Msg: msg, Err: kind}
}

// snippetWidth bounds the excerpt an error shows: expr's own snippet
// repeats the whole line and a caret line as long, 1.9 MB for a 930 KB
// expression.
const snippetWidth = 100

// snippet is the line of src that holds a problem, cut to a window around
// column col (0-based, in runes), with a caret under the column.
func snippet(src string, line, col int) string {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	text := []rune(lines[line-1])
	if col < 0 || col > len(text) {
		col = 0
	}
	from := max(0, col-snippetWidth/2)
	to := min(len(text), from+snippetWidth)
	prefix, suffix := "", ""
	if from > 0 {
		prefix = "…"
	}
	if to < len(text) {
		suffix = "…"
	}
	caret := strings.Repeat(".", len([]rune(prefix))+col-from) + "^"
	return "\n | " + prefix + string(text[from:to]) + suffix + "\n | " + caret
}

// runBounded runs a program within expr's memory budget; the time and byte
// bounds are the recorder's, checked by the helpers in env.
func runBounded(prog *vm.Program, env map[string]any) (any, error) {
	machine := vm.VM{MemoryBudget: memoryBudget}
	return machine.Run(prog, env)
}

// Env turns a report into the environment gates see: the report's JSON
// shape (runs, scenario, host, …) plus vars. Gate results and the overall
// status are left out: a gate cannot depend on another gate.
func Env(r *report.Report, vars map[string]any) (map[string]any, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("gates: encoding report: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("gates: decoding report: %w", err)
	}
	delete(m, "gates")
	delete(m, "status")
	if vars == nil {
		vars = map[string]any{}
	}
	vb, err := json.Marshal(vars)
	if err != nil {
		return nil, fmt.Errorf("gates: encoding vars: %w", err)
	}
	var vm map[string]any
	if err := json.Unmarshal(vb, &vm); err != nil {
		return nil, fmt.Errorf("gates: decoding vars: %w", err)
	}
	m["vars"] = vm
	return m, nil
}

// BaselineEnv is the environment gates see as baseline: the report's
// JSON shape, without vars (a gate's vars are the scenario's own). Given
// the run's shape (engine.Shape) instead of a report, it is what gates are
// checked against when no baseline is given.
func BaselineEnv(r *report.Report) (map[string]any, error) {
	env, err := Env(r, nil)
	if err != nil {
		return nil, err
	}
	delete(env, "vars")
	return env, nil
}

// BaselineOf is what BaselineEnv gives for the report whose environment
// env is (from Env): a deep copy of env, vars left out. Copying the JSON
// values costs a small part of encoding and decoding the report again,
// which was 1 ms of every validate and run's start-up; the copy shares
// nothing with env.
func BaselineOf(env map[string]any) map[string]any {
	out := make(map[string]any, len(env))
	for k, v := range env {
		if k != "vars" {
			out[k] = copyJSON(v)
		}
	}
	return out
}

// copyJSON deep-copies a decoded JSON value.
func copyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = copyJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = copyJSON(e)
		}
		return l
	}
	return v
}

// Evaluate runs every gate over env (from Env) and returns their verdicts
// in order. When env has no baseline, a gate that reads it is skipped.
func (s *Set) Evaluate(env map[string]any) []report.GateResult {
	return s.EvaluateReports(env, Reports{})
}

// EvaluateReports is Evaluate with the reports env was built from, which
// no_regression compares; without a baseline report, a gate that calls
// it errors.
func (s *Set) EvaluateReports(env map[string]any, rs Reports) []report.GateResult {
	out := make([]report.GateResult, 0, len(s.Gates))
	_, hasBaseline := env["baseline"]
	for _, g := range s.Gates {
		if g.readsBaseline && !hasBaseline {
			out = append(out, report.GateResult{Name: g.Name, Expr: g.Expr, Description: g.Description, Optional: g.Optional,
				Status: report.StatusSkipped, Message: SkippedNoBaseline})
			continue
		}
		out = append(out, g.evaluate(env, &rs))
	}
	return out
}

const maxObservations = 16

func (g *Gate) evaluate(data map[string]any, rs *Reports) (res report.GateResult) {
	res = report.GateResult{Name: g.Name, Expr: g.Expr, Description: g.Description, Optional: g.Optional}
	rec := newRecorder(time.Now().Add(evalTimeout))
	rec.reports = rs
	v, err := runBounded(g.prog, withHelpers(data, rec))
	res.Observations = rec.observations()
	switch {
	case err != nil:
		res.Status = report.StatusError
		res.Message = cleanRuntimeError(err)
	default:
		b, ok := v.(bool)
		if !ok {
			res.Status = report.StatusError
			res.Value = compact(jsonSafe(v))
			res.Message = fmt.Sprintf("a gate must be true or false, but this one is %s", show(jsonSafe(v)))
			return res
		}
		res.Value = b
		switch {
		case b && len(rec.inconclusive) > 0:
			// It would pass only because noise hid what no_regression
			// tested: a gate that cannot tell never passes.
			res.Status = report.StatusInconclusive
			res.Message = "cannot tell from noise: " + strings.Join(rec.inconclusive, "; ")
		case b:
			res.Status = report.StatusPass
		case len(rec.failures) > 0:
			res.Status = report.StatusFail
			res.Message = strings.Join(rec.failures, "; ")
		default:
			res.Status = report.StatusFail
			res.Message = failMessage(res.Observations)
		}
	}
	return res
}

func cleanRuntimeError(err error) string {
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
	}
	return strings.ReplaceAll(msg, "__get(", "(")
}

func failMessage(obs []report.Observation) string {
	var parts []string
	for _, o := range obs {
		if !o.Result {
			parts = append(parts, fmt.Sprintf("%s: %s %s %s is false", o.Expr, show(o.Left), o.Op, show(o.Right)))
		}
	}
	if len(parts) == 0 {
		return "the expression is false"
	}
	return strings.Join(parts, "; ")
}

func show(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', 8, 64)
	case nil:
		return "nil"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// recorder collects what one evaluation saw (comparisons) and holds its
// bounds in time and bytes.
type recorder struct {
	obs   []report.Observation
	total int
	// touched lists the runs read since the last comparison, so an
	// observation inside all(values(runs), …) says which run it is about;
	// lastRun is the run read last, and point the load point read since
	// the last comparison, so one inside all(runs.x.phases.load.points,
	// …) says which point ("[x, concurrency 8]").
	touched []string
	lastRun string
	point   string
	// deadline (zero: none) and bytesLeft bound the evaluation; every
	// helper checks them, so a slow or greedy gate stops with an error.
	deadline  time.Time
	bytesLeft int
	calls     int
	// reports are what no_regression compares (nil: not given);
	// failures and inconclusive are its regressed and undecided tests,
	// one line each, for the gate's message and status.
	reports      *Reports
	failures     []string
	inconclusive []string
}

func newRecorder(deadline time.Time) *recorder {
	return &recorder{deadline: deadline, bytesLeft: maxBytes}
}

// errBudget is the error of an evaluation that ran out of time or bytes.
var errBudget = errors.New("the gate exceeds its evaluation budget")

// tick is called by every helper: reading the clock on every call would
// dominate cheap gates, so it is read every 64 calls.
func (r *recorder) tick() error {
	r.calls++
	if r.calls%64 == 0 && !r.deadline.IsZero() && time.Now().After(r.deadline) {
		return fmt.Errorf("%w: it ran out of time", errBudget)
	}
	return nil
}

// alloc charges n bytes to the evaluation before they are allocated.
func (r *recorder) alloc(n int, what string) error {
	if n < 0 || n > r.bytesLeft {
		return fmt.Errorf("%w: %s would need more than %d MiB", errBudget, what, maxBytes>>20)
	}
	r.bytesLeft -= n
	return nil
}

// repeat is expr's repeat, charged before allocating: expr's own charges
// after strings.Repeat has already run.
func (r *recorder) repeat(s string, n int) (string, error) {
	if n < 0 {
		return "", fmt.Errorf("repeat: negative count %d", n)
	}
	if n > 0 && len(s) > maxBytes/n {
		return "", fmt.Errorf("%w: repeat would need more than %d MiB", errBudget, maxBytes>>20)
	}
	if err := r.alloc(len(s)*n, "repeat"); err != nil {
		return "", err
	}
	return strings.Repeat(s, n), nil
}

// add is expr's +, charged for the strings and lists it builds: a chain of
// let x = y + y doubles a string with every few nodes.
func (r *recorder) add(a, b any) (res any, err error) {
	if err := r.tick(); err != nil {
		return nil, err
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			if err := r.alloc(len(x)+len(y), "+"); err != nil {
				return nil, err
			}
		}
	case []any:
		if y, ok := b.([]any); ok {
			if err := r.alloc(16*(len(x)+len(y)), "+"); err != nil {
				return nil, err
			}
		}
	}
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("%v", p)
		}
	}()
	return runtime.Add(a, b), nil
}

// observations keeps failed comparisons first, then passed ones, capped.
func (r *recorder) observations() []report.Observation {
	sort.SliceStable(r.obs, func(i, j int) bool { return !r.obs[i].Result && r.obs[j].Result })
	if len(r.obs) > maxObservations {
		r.obs = r.obs[:maxObservations]
	}
	return r.obs
}

func (r *recorder) observe(o report.Observation) {
	r.total++
	// Keep every failure (up to the cap) but only the first few passes.
	if len(r.obs) < maxObservations*4 {
		r.obs = append(r.obs, o)
	}
}

// sources records the text of every node before strict rewrites the tree,
// so observations and errors quote the expression as the user wrote it,
// and the comparisons that select a slice rather than judge it.
type sources struct {
	text map[ast.Node]string
	// selectors are the comparisons inside the predicate of a builtin
	// that selects (filter, find, …): they choose what the gate judges,
	// and are no observation of it.
	selectors map[ast.Node]bool
}

// selecting are the builtins whose predicate selects elements.
var selecting = map[string]bool{"filter": true, "find": true, "findIndex": true, "findLast": true, "findLastIndex": true,
	"groupBy": true, "sortBy": true}

func (s *sources) Visit(node *ast.Node) {
	s.text[*node] = (*node).String()
	b, ok := (*node).(*ast.BuiltinNode)
	if !ok || !selecting[b.Name] {
		return
	}
	for _, a := range b.Arguments[min(1, len(b.Arguments)):] {
		if p, ok := a.(*ast.PredicateNode); ok {
			ast.Walk(&p.Node, markSelectors{s})
		}
	}
}

// markSelectors marks the comparisons it visits as selectors.
type markSelectors struct{ s *sources }

func (m markSelectors) Visit(node *ast.Node) {
	if b, ok := (*node).(*ast.BinaryNode); ok && isComparison(b.Operator) {
		s := m.s
		if s.selectors == nil {
			s.selectors = map[ast.Node]bool{}
		}
		s.selectors[b] = true
	}
}

func isComparison(op string) bool {
	switch op {
	case "<", "<=", ">", ">=", "==", "!=":
		return true
	}
	return false
}

func (s *sources) of(n ast.Node) string {
	if t, ok := s.text[n]; ok {
		return t
	}
	return pathOf(n)
}

// touch notes a run (a map with name and phases) or a load point (a map
// with peak_in_flight and its concurrency or rate) that an access read.
func (r *recorder) touch(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if _, isPoint := m["peak_in_flight"]; isPoint {
		if c, ok := toFloat(m["concurrency"]); ok && c > 0 {
			r.point = "concurrency " + strconv.FormatFloat(c, 'g', -1, 64)
		} else if rt, ok := toFloat(m["rate"]); ok && rt > 0 {
			r.point = "rate " + strconv.FormatFloat(rt, 'g', -1, 64) + "/s"
		}
		return
	}
	name, ok := m["name"].(string)
	if _, hasPhases := m["phases"]; !ok || !hasPhases {
		return
	}
	r.lastRun = name
	for _, t := range r.touched {
		if t == name {
			return
		}
	}
	r.touched = append(r.touched, name)
}

// strict is the AST patch described in the package comment.
type strict struct{ src *sources }

func (st *strict) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.MemberNode:
		src := st.src.of(n.Node)
		ast.Patch(node, &ast.CallNode{
			Callee: &ast.IdentifierNode{Value: "__get"},
			Arguments: []ast.Node{
				n.Node, n.Property,
				&ast.BoolNode{Value: n.Optional},
				&ast.StringNode{Value: src},
			},
		})
	case *ast.PredicateNode:
		// Every iteration ticks the clock and is charged (see step).
		n.Node = &ast.CallNode{Callee: &ast.IdentifierNode{Value: "__step"}, Arguments: []ast.Node{n.Node}}
	case *ast.BinaryNode:
		switch n.Operator {
		case "+":
			ast.Patch(node, &ast.CallNode{
				Callee:    &ast.IdentifierNode{Value: "__add"},
				Arguments: []ast.Node{n.Left, n.Right},
			})
		case "<", "<=", ">", ">=", "==", "!=":
			src := st.src.of(n)
			callee := "__cmp"
			if st.src.selectors[n] {
				callee = "__sel" // strict as a comparison, never observed
			}
			ast.Patch(node, &ast.CallNode{
				Callee: &ast.IdentifierNode{Value: callee},
				Arguments: []ast.Node{
					n.Left, n.Right,
					&ast.StringNode{Value: n.Operator},
					&ast.StringNode{Value: src},
				},
			})
		}
	}
}

// pathOf prints a node as the user wrote it, seeing through our rewrites.
func pathOf(n ast.Node) string {
	if c, ok := n.(*ast.CallNode); ok {
		if id, ok := c.Callee.(*ast.IdentifierNode); ok && len(c.Arguments) == 4 {
			switch id.Value {
			case "__get":
				return c.Arguments[3].(*ast.StringNode).Value + accessor(c.Arguments[1])
			case "__cmp", "__sel":
				return "(" + c.Arguments[3].(*ast.StringNode).Value + ")"
			}
		}
		if id, ok := c.Callee.(*ast.IdentifierNode); ok && id.Value == "__add" && len(c.Arguments) == 2 {
			return "(" + pathOf(c.Arguments[0]) + " + " + pathOf(c.Arguments[1]) + ")"
		}
	}
	if _, ok := n.(*ast.PointerNode); ok {
		return "#"
	}
	return n.String()
}

func accessor(prop ast.Node) string {
	if s, ok := prop.(*ast.StringNode); ok && isIdent(s.Value) {
		return "." + s.Value
	}
	return "[" + pathOf(prop) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

// withHelpers returns data plus the functions of one evaluation.
func withHelpers(data map[string]any, rec *recorder) map[string]any {
	env := make(map[string]any, len(data)+10)
	for k, v := range data {
		env[k] = v
	}
	env["__get"] = func(obj, key any, optional bool, src string) (any, error) { return rec.get(obj, key, optional, src) }
	env["__cmp"] = func(a, b any, op, src string) (bool, error) { return rec.cmp(a, b, op, src) }
	env["__sel"] = func(a, b any, op, src string) (bool, error) { return rec.sel(a, b, op, src) }
	env["__add"] = rec.add
	env["__step"] = rec.step
	for name, fn := range guarded(rec) {
		env[name] = fn
	}
	env["repeat"] = rec.repeat
	env["run"] = func(params map[string]any) (any, error) { return findRun(data, params) }
	env["ratio"] = ratio
	env["no_regression"] = rec.noRegression
	env["pct"] = pct
	env["samples"] = samples
	env["distinct"] = distinct
	env["within"] = func(a, b, tol any) (bool, error) {
		ok, err := within(a, b, tol)
		if err == nil {
			rec.observe(report.Observation{Expr: fmt.Sprintf("within(%s, %s, %s)", show(a), show(b), show(tol)), Op: "within", Left: jsonSafe(a), Right: jsonSafe(b), Result: ok})
		}
		return ok, err
	}
	return env
}

// get reads obj[key]; parent is the source text of obj, for messages.
func (r *recorder) get(obj, key any, optional bool, parent string) (any, error) {
	if err := r.tick(); err != nil {
		return nil, err
	}
	src := parent + accessorOf(key)
	switch o := obj.(type) {
	case map[string]any:
		k, ok := key.(string)
		if !ok {
			return nil, fmt.Errorf("%s: keys are strings, got %T %v", src, key, key)
		}
		r.touch(o) // reading a field of a run (e.g. # in all(values(runs), …))
		v, ok := o[k]
		if ok {
			r.touch(v)
			return v, nil
		}
		// "*" marks an open map in the load-time shape (server metrics,
		// metadata): any key may exist at run time. Real reports never
		// carry "*" (it is not a valid Prometheus name or endpoint).
		if w, open := o["*"]; open {
			return w, nil
		}
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("%s", missingMessage(parent, k, o))
	case nil:
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: cannot read %v of nil (use ?. to allow absence)", src, key)
	default:
		return fetch(obj, key, src)
	}
}

func accessorOf(k any) string {
	if s, ok := k.(string); ok {
		if isIdent(s) {
			return "." + s
		}
		return "[" + strconv.Quote(s) + "]"
	}
	return fmt.Sprintf("[%v]", k)
}

func fetch(obj, key any, src string) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("%s: %v", src, p)
		}
	}()
	if s, ok := obj.([]any); ok {
		i, ok := toInt(key)
		if !ok {
			return nil, fmt.Errorf("%s: a list index must be an integer, got %v", src, key)
		}
		if i < 0 {
			i += len(s)
		}
		if i < 0 || i >= len(s) {
			return nil, fmt.Errorf("%s: index %v out of range (the list has %d items)", src, key, len(s))
		}
		return s[i], nil
	}
	return runtime.Fetch(obj, key), nil
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case float64:
		if x == float64(int(x)) {
			return int(x), true
		}
	}
	return 0, false
}

var statKeys = []string{"mean", "min", "p50", "p90", "p95", "p99", "max"}

func missingMessage(parent, key string, m map[string]any) string {
	if c, ok := m["count"].(float64); ok {
		for _, s := range statKeys {
			if s == key {
				if c == 0 {
					return fmt.Sprintf("%s has no %s: the statistic is absent because it has 0 samples", parent, key)
				}
			}
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	hint := closest(key, keys)
	list := strings.Join(quoteAll(keys), ", ")
	if len(keys) > 12 {
		list = strings.Join(quoteAll(keys[:12]), ", ") + ", …"
	}
	if len(keys) == 0 {
		list = "nothing"
	}
	if _, ok := m["points"]; ok && hint == "" {
		hint = " (load metrics such as goodput and queue_ms are per point: .points[0]." + key + ")"
	}
	return fmt.Sprintf("%s has no %q%s; it has %s", parent, key, hint, list)
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strconv.Quote(x)
	}
	return out
}

func closest(word string, known []string) string { return suggest.DidYouMean(word, known) }

// sel is a comparison that selects (a filter's predicate): as strict as
// cmp, and no observation; it says nothing about which run or point the
// next comparison reads.
func (r *recorder) sel(a, b any, op, src string) (bool, error) {
	obs, total, touched, point := len(r.obs), r.total, append([]string(nil), r.touched...), r.point
	res, err := r.cmp(a, b, op, src)
	r.obs, r.total, r.touched, r.point = r.obs[:obs], total, touched, point
	return res, err
}

func (r *recorder) cmp(a, b any, op, src string) (res bool, err error) {
	if err := r.tick(); err != nil {
		return false, err
	}
	defer func() {
		if p := recover(); p != nil {
			res, err = false, fmt.Errorf("%s: cannot compare %s %s %s", src, show(a), op, show(b))
		}
	}()
	if (a == nil || b == nil) && op != "==" && op != "!=" {
		return false, fmt.Errorf("%s: cannot compare %s %s %s", src, show(a), op, show(b))
	}
	// An infinity or NaN (a division by zero, an overflow) would make the
	// comparison pass or fail by accident: it is an error instead.
	for _, v := range []any{a, b} {
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return false, fmt.Errorf("%s: %s %s %s compares a non-finite number (a division by zero?)", src, show(a), op, show(b))
		}
	}
	switch op {
	case "<":
		res = runtime.Less(a, b)
	case "<=":
		res = runtime.LessOrEqual(a, b)
	case ">":
		res = runtime.More(a, b)
	case ">=":
		res = runtime.MoreOrEqual(a, b)
	case "==":
		res = equal(a, b)
	case "!=":
		res = !equal(a, b)
	}
	if !strings.HasPrefix(src, "runs[\"") && !strings.HasPrefix(src, "runs.") {
		// The expression reaches runs or load points through # or a
		// helper: name them.
		names := append([]string(nil), r.touched...)
		if r.point != "" {
			if len(names) == 0 && r.lastRun != "" {
				names = []string{r.lastRun}
			}
			names = append(names, r.point)
		}
		if len(names) > 0 {
			src = "[" + strings.Join(names, ", ") + "] " + src
		}
	}
	r.touched, r.point = r.touched[:0], ""
	r.observe(report.Observation{Expr: src, Op: op, Left: compact(jsonSafe(a)), Right: compact(jsonSafe(b)), Result: res})
	return res, nil
}

// equal is expr's equality, extended to lists and maps (compared deeply),
// so `.output_tokens == vars.expected_tokens` means what it says.
func equal(a, b any) bool {
	switch a.(type) {
	case []any, map[string]any:
		return reflect.DeepEqual(normalizeNumbers(a), normalizeNumbers(b))
	}
	return runtime.Equal(a, b)
}

func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeNumbers(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeNumbers(e)
		}
		return out
	}
	return v
}

// compact keeps an observation readable: a run or a long list compared
// with == is summarised rather than copied whole into the report.
func compact(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return fmt.Sprintf("{object with %d keys}", len(x))
	case []any:
		if len(x) > 8 {
			return fmt.Sprintf("[list of %d]", len(x))
		}
		for _, e := range x {
			if _, ok := e.(map[string]any); ok {
				return fmt.Sprintf("[list of %d objects]", len(x))
			}
		}
	}
	return v
}

// jsonSafe replaces what JSON cannot carry (NaN, ±Inf, functions) with a
// description, so a strange gate never keeps the report from being written.
func jsonSafe(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case nil, bool, string, int, int64:
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonSafe(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonSafe(e)
		}
		return out
	default:
		if _, err := json.Marshal(v); err != nil {
			return fmt.Sprintf("%T", v)
		}
	}
	return v
}
