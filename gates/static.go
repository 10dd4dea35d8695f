package gates

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/checker/nature"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/types"

	"github.com/tollgate-dev/tollgate/report/compare"
)

// Static checking, in three steps over the syntax tree, none of which
// evaluates the gate over the report:
//
//  1. a resolver walks every node (both sides of && and ||, both arms of
//     ?:, every predicate body) and resolves each member access against the
//     shape, so a misspelt key is found wherever it is written;
//  2. constant subexpressions are evaluated, bounded in bytes and time, so
//     a constant error (1 % 0, a memory bomb) is a load error;
//  3. expr's own checker infers and checks types, over a typed environment
//     in which every access the resolver resolved is a typed placeholder.

// Sentinel errors a Problem wraps, so callers tell kinds apart with errors.Is.
var (
	ErrSyntax      = errors.New("syntax error")
	ErrUnknownName = errors.New("unknown name")
	// ErrNoBaseline is an ErrUnknownName for baseline, which exists only
	// when the run is given a baseline report.
	ErrNoBaseline = fmt.Errorf("%w baseline", ErrUnknownName)
	// ErrNoRepetitions is an ErrUnknownName for repetitions, which a
	// report has only when the scenario ran more than once.
	ErrNoRepetitions = fmt.Errorf("%w repetitions", ErrUnknownName)
	ErrMissingKey    = errors.New("missing key")
	ErrType          = errors.New("type error")
	ErrConstant      = errors.New("constant expression error")
	// ErrThreshold: no_regression's threshold is not a constant
	// METRIC.STAT:±N% (0 % included: any noise breaches it).
	ErrThreshold = errors.New("bad no_regression threshold")
)

// maxConstElems bounds how many elements of a constant list a predicate
// body is checked with one by one; beyond it the body is checked once.
const maxConstElems = 64

// aval is what the resolver knows about the value of a node.
type aval struct {
	// vals are the values the node may have: parts of the shape
	// (placeholders for the real values), or exact values when exact.
	vals  []any
	exact bool
	// unknown: it may also be something the shape does not describe
	// (behind ?., from a helper), so nothing below it is checked.
	unknown bool
	// konst: computed only from literals and exact bindings, so it can be
	// evaluated at load; vals may be empty until it is.
	konst bool
}

var unknownAval = aval{unknown: true}

func exactVal(v any) aval { return aval{vals: []any{v}, exact: true, konst: true} }

// scope is the let variables in force, innermost first.
type scope struct {
	name string
	val  aval
	next *scope
}

func (s *scope) lookup(name string) (aval, bool) {
	for ; s != nil; s = s.next {
		if s.name == name {
			return s.val, true
		}
	}
	return aval{}, false
}

// nodeInfo accumulates, over every visit of a node (a predicate body is
// visited once per constant element), the type of its value.
type nodeInfo struct {
	t       *vtype
	partial bool // some visit could not resolve it: left to the checker
}

type resolver struct {
	spec     Spec
	shape    map[string]any
	problems []Problem
	// constants are the problems of constant parts, reported only when the
	// gate has no other: a type error says more than a failed evaluation.
	constants []Problem
	seen      map[string]bool
	info      map[ast.Node]*nodeInfo
	// deadline and bytesLeft bound all constant evaluation of the gate.
	deadline  time.Time
	bytesLeft int
	exhausted bool // the budget is spent: one problem says so, once
	visits    int
	// readsBaseline: some node may be the shape's baseline (baseline,
	// $env.baseline, a let bound to it, a computed key of $env), the map
	// whose address is baseline (0: the shape has none).
	readsBaseline bool
	baseline      uintptr
}

func (w *resolver) problem(n ast.Node, kind error, msg string) {
	line, col := lineCol(w.spec.Expr, n.Location().From)
	p := Problem{Where: w.spec.Pos.at(line, col), Gate: w.spec.Name, Msg: msg, Err: kind}
	key := p.Where + "\x00" + p.Msg
	if w.seen[key] {
		return // the same misspelling, seen again for another element
	}
	w.seen[key] = true
	if kind == ErrConstant {
		w.constants = append(w.constants, p)
		return
	}
	w.problems = append(w.problems, p)
}

// lineCol turns a rune offset into a 1-based line and 0-based column.
func lineCol(src string, from int) (int, int) {
	line, col, i := 1, 0, 0
	for _, r := range src {
		if i == from {
			break
		}
		if r == '\n' {
			line, col = line+1, 0
		} else {
			col++
		}
		i++
	}
	return line, col
}

func (w *resolver) record(n ast.Node, av aval) {
	ni := w.info[n]
	if ni == nil {
		ni = &nodeInfo{}
		w.info[n] = ni
	}
	if av.unknown || len(av.vals) == 0 {
		ni.partial = true
		return
	}
	for _, v := range av.vals {
		ni.t = join(ni.t, typeOfValue(v, av.exact))
	}
}

type child struct {
	n  ast.Node
	av aval
}

// visit resolves n and returns what is known of its value. A constant
// child of a node that is not itself constant is evaluated here, once, so
// every maximal constant subexpression is evaluated at load.
func (w *resolver) visit(n ast.Node, sc *scope, ptr *aval) aval {
	w.visits++
	res, kids := w.node(n, sc, ptr)
	if !w.readsBaseline {
		w.readsBaseline = w.isBaseline(res)
	}
	if !res.konst {
		for _, c := range kids {
			if c.av.konst && !isLiteral(c.n) {
				_, _ = w.value(c.n, c.av, sc, ptr)
			}
		}
	}
	switch n.(type) {
	case *ast.MemberNode, *ast.PointerNode, *ast.IdentifierNode:
		w.record(n, res)
	}
	return res
}

// isBaseline reports whether av may be the shape's baseline itself.
func (w *resolver) isBaseline(av aval) bool {
	if w.baseline == 0 {
		return false
	}
	for _, v := range av.vals {
		if m, ok := v.(map[string]any); ok && reflect.ValueOf(m).Pointer() == w.baseline {
			return true
		}
	}
	return false
}

func isLiteral(n ast.Node) bool {
	switch n.(type) {
	case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.StringNode, *ast.ConstantNode:
		return true
	}
	return false
}

func allKonst(kids []child) bool {
	for _, c := range kids {
		if !c.av.konst {
			return false
		}
	}
	return true
}

// pure helpers may be evaluated at load when their arguments are constant.
var pureHelpers = map[string]bool{"ratio": true, "pct": true, "within": true, "distinct": true, "repeat": true}

func (w *resolver) node(n ast.Node, sc *scope, ptr *aval) (aval, []child) {
	switch n := n.(type) {
	case *ast.NilNode:
		return exactVal(nil), nil
	case *ast.IntegerNode:
		return exactVal(n.Value), nil
	case *ast.FloatNode:
		return exactVal(n.Value), nil
	case *ast.BoolNode:
		return exactVal(n.Value), nil
	case *ast.StringNode:
		return exactVal(n.Value), nil
	case *ast.ConstantNode:
		return exactVal(n.Value), nil
	case *ast.BytesNode:
		return exactVal(n.Value), nil

	case *ast.IdentifierNode:
		if v, ok := sc.lookup(n.Value); ok {
			return v, nil
		}
		if n.Value == "$env" {
			return aval{vals: []any{w.shape}}, nil
		}
		if v, ok := w.shape[n.Value]; ok {
			return aval{vals: []any{v}}, nil
		}
		if _, ok := helperTypes[n.Value]; ok {
			return unknownAval, nil
		}
		w.unknownName(n, n.Value, sc)
		return unknownAval, nil

	case *ast.PointerNode:
		if n.Name == "" && ptr != nil {
			return *ptr, nil
		}
		return unknownAval, nil

	case *ast.ChainNode:
		c := w.visit(n.Node, sc, ptr)
		return c, []child{{n.Node, c}}

	case *ast.MemberNode:
		return w.member(n, sc, ptr)

	case *ast.SliceNode:
		kids := []child{{n.Node, w.visit(n.Node, sc, ptr)}}
		for _, x := range []ast.Node{n.From, n.To} {
			if x != nil {
				kids = append(kids, child{x, w.visit(x, sc, ptr)})
			}
		}
		if allKonst(kids) {
			return aval{konst: true}, kids
		}
		base := kids[0].av
		base.konst = false
		return base, kids

	case *ast.UnaryNode:
		c := w.visit(n.Node, sc, ptr)
		return aval{unknown: true, konst: c.konst}, []child{{n.Node, c}}

	case *ast.BinaryNode:
		l := w.visit(n.Left, sc, ptr)
		r := w.visit(n.Right, sc, ptr)
		kids := []child{{n.Left, l}, {n.Right, r}}
		switch n.Operator {
		case "/", "%":
			w.checkDivisor(n.Right, r, sc, ptr, n.Operator)
		case "??":
			if l.konst && r.konst {
				return aval{konst: true}, kids
			}
			return union(l, r), kids
		}
		return aval{unknown: true, konst: l.konst && r.konst}, kids

	case *ast.ConditionalNode:
		c := w.visit(n.Cond, sc, ptr)
		a := w.visit(n.Exp1, sc, ptr)
		b := w.visit(n.Exp2, sc, ptr)
		kids := []child{{n.Cond, c}, {n.Exp1, a}, {n.Exp2, b}}
		if allKonst(kids) {
			return aval{konst: true}, kids
		}
		u := union(a, b)
		u.konst = false
		return u, kids

	case *ast.ArrayNode:
		kids := make([]child, 0, len(n.Nodes))
		list := []any{}
		unknown := false
		for _, e := range n.Nodes {
			av := w.visit(e, sc, ptr)
			kids = append(kids, child{e, av})
			unknown = unknown || av.unknown || len(av.vals) == 0
			list = append(list, av.vals...)
		}
		if allKonst(kids) {
			return aval{konst: true}, kids
		}
		if unknown {
			return unknownAval, kids
		}
		return aval{vals: []any{list}}, kids

	case *ast.MapNode:
		var kids []child
		for _, p := range n.Pairs {
			pair := p.(*ast.PairNode)
			kids = append(kids, child{pair.Key, w.visit(pair.Key, sc, ptr)}, child{pair.Value, w.visit(pair.Value, sc, ptr)})
		}
		return aval{unknown: true, konst: allKonst(kids)}, kids

	case *ast.PairNode:
		k := w.visit(n.Key, sc, ptr)
		v := w.visit(n.Value, sc, ptr)
		return aval{unknown: true, konst: k.konst && v.konst}, []child{{n.Key, k}, {n.Value, v}}

	case *ast.VariableDeclaratorNode:
		v := w.visit(n.Value, sc, ptr)
		if v.konst {
			if x, err := w.value(n.Value, v, sc, ptr); err == nil {
				v = exactVal(x)
			} else {
				v = unknownAval
			}
		}
		body := w.visit(n.Expr, &scope{name: n.Name, val: v, next: sc}, ptr)
		return body, []child{{n.Value, v}, {n.Expr, body}}

	case *ast.SequenceNode:
		var kids []child
		last := unknownAval
		for _, x := range n.Nodes {
			last = w.visit(x, sc, ptr)
			kids = append(kids, child{x, last})
		}
		if allKonst(kids) {
			return aval{konst: true}, kids
		}
		last.konst = false
		return last, kids

	case *ast.PredicateNode:
		c := w.visit(n.Node, sc, ptr)
		return c, []child{{n.Node, c}}

	case *ast.CallNode:
		return w.call(n, sc, ptr)

	case *ast.BuiltinNode:
		return w.builtin(n, sc, ptr)
	}
	return unknownAval, nil
}

func (w *resolver) unknownName(n ast.Node, name string, sc *scope) {
	// In order of preference, since the first of equally close names wins:
	// the report's own names, then variables, helpers and builtins.
	var known []string
	for _, group := range [][]string{keysOf(w.shape), nil, keysOf(helperTypes), builtin.Names} {
		known = append(known, group...)
	}
	for s := sc; s != nil; s = s.next {
		known = append(known, s.name)
	}
	kind, hint := ErrUnknownName, closest(name, known)
	switch name {
	case "baseline":
		kind = ErrNoBaseline
	case "repetitions":
		kind, hint = ErrNoRepetitions, " (a report has repetitions only when run with --repeat-runs N, N ≥ 2; give the same flag to validate)"
	}
	w.problem(n, kind, "unknown name "+name+hint)
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func union(a, b aval) aval {
	return aval{
		vals:    append(append([]any{}, a.vals...), b.vals...),
		exact:   a.exact && b.exact,
		unknown: a.unknown || b.unknown,
	}
}

// keysOf returns the exact keys a property may be, or ok=false when the key
// is computed from something only known at run time.
func (w *resolver) keysOf(prop ast.Node, av aval, sc *scope, ptr *aval) ([]any, bool, error) {
	if av.konst {
		v, err := w.value(prop, av, sc, ptr)
		if err != nil {
			return nil, false, err
		}
		return []any{v}, true, nil
	}
	if av.exact && !av.unknown {
		return av.vals, true, nil
	}
	return nil, false, nil
}

func (w *resolver) member(n *ast.MemberNode, sc *scope, ptr *aval) (aval, []child) {
	base := w.visit(n.Node, sc, ptr)
	prop := w.visit(n.Property, sc, ptr)
	kids := []child{{n.Node, base}, {n.Property, prop}}
	if base.konst && prop.konst {
		return aval{konst: true}, kids
	}
	if base.konst {
		v, err := w.value(n.Node, base, sc, ptr)
		if err != nil {
			return unknownAval, kids
		}
		base = exactVal(v)
		base.konst = false
	}
	keys, known, err := w.keysOf(n.Property, prop, sc, ptr)
	if err != nil {
		return unknownAval, kids
	}
	out := aval{exact: base.exact, unknown: base.unknown}
	var maps []map[string]any
	missing := map[string]int{}
	for _, b := range base.vals {
		switch m := b.(type) {
		case map[string]any:
			maps = append(maps, m)
			if !known {
				if len(m) == 0 {
					out.unknown = true
				}
				for _, v := range m {
					out.vals = append(out.vals, v)
				}
				continue
			}
			for _, k := range keys {
				ks, ok := k.(string)
				if !ok {
					out.unknown = true // a non-string key: an error at run time
					continue
				}
				if v, ok := m[ks]; ok {
					out.vals = append(out.vals, v)
				} else if star, ok := m["*"]; ok {
					// An open map (server metrics, metadata): any key may exist.
					out.vals = append(out.vals, star)
					out.exact = false
				} else {
					missing[ks]++
				}
			}
		case []any:
			if len(m) == 0 {
				out.unknown = true
			}
			out.vals = append(out.vals, m...)
		case nil:
			out.unknown = true
		default:
			// A member of a number, string or bool: the checker reports it,
			// with the type the placeholder gives.
		}
	}
	if len(missing) > 0 {
		if n.Optional {
			out.unknown = true // absence allowed; what is there is not known
		} else if !base.unknown {
			// Missing in every mapping it may be: it can never be read.
			for _, k := range keys {
				ks, _ := k.(string)
				if c := missing[ks]; c > 0 && c == len(maps) {
					w.problem(n, ErrMissingKey, staticMissingMessage(n.Node.String(), ks, maps[0]))
				}
			}
		}
	}
	return out, kids
}

func (w *resolver) checkDivisor(n ast.Node, av aval, sc *scope, ptr *aval, op string) {
	if !av.konst {
		return
	}
	v, err := w.value(n, av, sc, ptr)
	if err != nil {
		return
	}
	if f, ok := toFloat(v); ok && f == 0 {
		what := "division"
		if op == "%" {
			what = "modulo"
		}
		w.problem(n, ErrConstant, fmt.Sprintf("%s by zero: %s is always 0", what, n.String()))
	}
}

func toFloat(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

func (w *resolver) call(n *ast.CallNode, sc *scope, ptr *aval) (aval, []child) {
	var kids []child
	name := ""
	if id, ok := n.Callee.(*ast.IdentifierNode); ok {
		name = id.Value
		if _, isVar := sc.lookup(name); !isVar {
			if _, ok := helperTypes[name]; !ok {
				if _, inShape := w.shape[name]; !inShape {
					w.unknownName(id, name, sc)
				}
			}
		}
	} else {
		kids = append(kids, child{n.Callee, w.visit(n.Callee, sc, ptr)})
	}
	args := make([]aval, len(n.Arguments))
	for i, a := range n.Arguments {
		args[i] = w.visit(a, sc, ptr)
		kids = append(kids, child{a, args[i]})
	}
	if pureHelpers[name] && allKonst(kids) {
		return aval{konst: true}, kids
	}
	switch name {
	case "ratio", "pct":
		if len(args) == 2 && args[1].konst {
			if v, err := w.value(n.Arguments[1], args[1], sc, ptr); err == nil {
				if f, ok := toFloat(v); ok && f == 0 {
					w.problem(n.Arguments[1], ErrConstant, fmt.Sprintf("%s by zero: %s is always 0", name, n.Arguments[1].String()))
				}
			}
		}
	case "run":
		runs, _ := w.shape["runs"].(map[string]any)
		if len(args) == 1 && args[0].konst {
			v, err := w.value(n.Arguments[0], args[0], sc, ptr)
			if params, ok := v.(map[string]any); err == nil && ok {
				r, err := findRun(w.shape, params)
				if err != nil {
					w.problem(n, ErrMissingKey, err.Error())
					return unknownAval, kids
				}
				return aval{vals: []any{r}}, kids
			}
		}
		out := aval{}
		for _, r := range runs {
			out.vals = append(out.vals, r)
		}
		if len(out.vals) == 0 {
			out.unknown = true
		}
		return out, kids
	case "no_regression":
		w.noRegressionCall(n, args, sc, ptr)
		return unknownAval, kids
	case "samples":
		if len(args) != 1 {
			return unknownAval, kids
		}
		var all []any
		var errs []error
		for _, r := range args[0].vals {
			s, err := samples(r)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			all = append(all, s...)
		}
		if len(errs) > 0 && len(errs) == len(args[0].vals) && !args[0].unknown {
			w.problem(n, ErrMissingKey, errs[0].Error())
		}
		if args[0].unknown || len(all) == 0 {
			return unknownAval, kids
		}
		return aval{vals: []any{all}}, kids
	}
	return unknownAval, kids
}

// noRegressionCall checks no_regression's threshold at load, as
// --fail-on's are checked at the command line, and marks the gate as
// reading baseline: it compares against one.
func (w *resolver) noRegressionCall(n *ast.CallNode, args []aval, sc *scope, ptr *aval) {
	w.readsBaseline = true
	if len(args) != 1 {
		w.problem(n, ErrThreshold, fmt.Sprintf("no_regression takes one threshold, e.g. no_regression(\"ttft_ms.p50:+10%%\"); got %d arguments", len(args)))
		return
	}
	if !args[0].konst {
		w.problem(n.Arguments[0], ErrThreshold, "no_regression's threshold must be a constant string, e.g. \"ttft_ms.p50:+10%\", so it is checked at load")
		return
	}
	v, err := w.value(n.Arguments[0], args[0], sc, ptr)
	if err != nil {
		return // the constant's own problem is reported
	}
	str, ok := v.(string)
	if !ok {
		w.problem(n.Arguments[0], ErrThreshold, fmt.Sprintf("no_regression's threshold must be a string such as \"ttft_ms.p50:+10%%\", got %s", show(v)))
		return
	}
	if _, err := compare.ParseThreshold(str); err != nil {
		w.problem(n.Arguments[0], ErrThreshold, strings.TrimPrefix(err.Error(), "--fail-on "))
	}
}

// elements returns what the elements of a list may be, one aval per exact
// element when the list is known exactly (so each is checked on its own),
// or one aval for them all.
func (w *resolver) elements(n ast.Node, av aval, sc *scope, ptr *aval) []aval {
	if av.konst {
		v, err := w.value(n, av, sc, ptr)
		if err != nil {
			return []aval{unknownAval}
		}
		av = exactVal(v)
	}
	var elems []any
	unknown := av.unknown
	for _, l := range av.vals {
		rv := reflect.ValueOf(l)
		switch {
		case l == nil:
			unknown = true
		case rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array:
			if rv.Len() == 0 && !av.exact {
				unknown = true // a placeholder list with no placeholder element
			}
			for i := 0; i < rv.Len() && len(elems) <= maxConstElems; i++ {
				elems = append(elems, rv.Index(i).Interface())
			}
		case rv.Kind() == reflect.Map:
			// A predicate over a map ranges over its values.
			if m, ok := l.(map[string]any); ok {
				for _, v := range m {
					elems = append(elems, v)
				}
			} else {
				unknown = true
			}
		default:
			unknown = true
		}
	}
	switch {
	case av.exact && !unknown && len(elems) <= maxConstElems && w.visits < maxVisits:
		out := make([]aval, 0, len(elems))
		for _, e := range elems {
			out = append(out, exactVal(e))
		}
		if len(out) == 0 {
			return []aval{unknownAval} // never evaluated; still resolved
		}
		return out
	case av.exact:
		return []aval{unknownAval}
	}
	return []aval{{vals: elems, unknown: unknown || len(elems) == 0}}
}

var predicateBuiltins = map[string]bool{
	"all": true, "none": true, "any": true, "one": true, "filter": true, "map": true,
	"count": true, "sum": true, "find": true, "findIndex": true, "findLast": true,
	"findLastIndex": true, "groupBy": true, "sortBy": true, "reduce": true,
}

func (w *resolver) builtin(n *ast.BuiltinNode, sc *scope, ptr *aval) (aval, []child) {
	if len(n.Arguments) == 0 {
		return aval{unknown: true, konst: true}, nil
	}
	if predicateBuiltins[n.Name] {
		coll := w.visit(n.Arguments[0], sc, ptr)
		kids := []child{{n.Arguments[0], coll}}
		konst := coll.konst
		var body aval
		var elems []aval
		for i, a := range n.Arguments[1:] {
			pred, ok := a.(*ast.PredicateNode)
			if !ok {
				av := w.visit(a, sc, ptr)
				kids = append(kids, child{a, av})
				konst = konst && av.konst
				continue
			}
			if elems == nil {
				elems = w.elements(n.Arguments[0], coll, sc, ptr)
			}
			bodies := make([]aval, 0, len(elems))
			for _, e := range elems {
				e := e
				b := w.visit(pred.Node, sc, &e)
				if !b.konst {
					// The body depends on more than the element: evaluate its
					// constant parts for this element.
					bodies = append(bodies, b)
					konst = false
					continue
				}
				if !e.konst || len(e.vals) == 0 {
					konst = false
				}
				bodies = append(bodies, b)
			}
			if i == 0 {
				body = aval{}
				for _, b := range bodies {
					body = union(body, b)
				}
				if len(bodies) > 0 {
					body.exact = bodies[0].exact
					for _, b := range bodies {
						body.exact = body.exact && b.exact
					}
				}
			}
		}
		if konst {
			return aval{konst: true}, kids
		}
		switch n.Name {
		case "filter", "sortBy":
			out := coll
			out.konst = false
			if coll.konst {
				if v, err := w.value(n.Arguments[0], coll, sc, ptr); err == nil {
					out = aval{vals: []any{v}, exact: true}
				}
			}
			return out, kids
		case "map":
			if body.unknown || len(body.vals) == 0 {
				return unknownAval, kids
			}
			return aval{vals: []any{body.vals}, exact: body.exact}, kids
		case "find", "findLast":
			out := aval{exact: true}
			for _, e := range elems {
				out = union(out, e)
			}
			out.konst = false
			return out, kids
		}
		return unknownAval, kids
	}

	args := make([]aval, len(n.Arguments))
	kids := make([]child, len(n.Arguments))
	for i, a := range n.Arguments {
		args[i] = w.visit(a, sc, ptr)
		kids[i] = child{a, args[i]}
	}
	if allKonst(kids) {
		return aval{konst: true}, kids
	}
	a := args[0]
	switch n.Name {
	case "values", "keys":
		if a.unknown || len(a.vals) == 0 {
			return unknownAval, kids
		}
		var list []any
		exact := n.Name == "keys"
		for _, v := range a.vals {
			m, ok := v.(map[string]any)
			if !ok {
				return unknownAval, kids
			}
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if k == "*" {
					exact = false
				}
				if n.Name == "keys" {
					list = append(list, k)
				} else {
					list = append(list, m[k])
				}
			}
		}
		return aval{vals: []any{list}, exact: exact && a.exact || exact && n.Name == "keys"}, kids
	case "first", "last":
		els := w.elements(n.Arguments[0], a, sc, ptr)
		out := aval{exact: true}
		for _, e := range els {
			out = union(out, e)
		}
		return out, kids
	case "take", "reverse", "uniq", "sort":
		a.konst = false
		return a, kids
	}
	return unknownAval, kids
}

// value evaluates a constant node with the exact values it depends on.
func (w *resolver) value(n ast.Node, av aval, sc *scope, ptr *aval) (any, error) {
	if av.exact && len(av.vals) == 1 && (isLiteral(n) || !av.konst) {
		return av.vals[0], nil
	}
	if av.exact && len(av.vals) == 1 {
		if _, ok := n.(*ast.PointerNode); ok {
			return av.vals[0], nil
		}
		if _, ok := n.(*ast.IdentifierNode); ok {
			return av.vals[0], nil
		}
	}
	env := map[string]any{}
	for s := sc; s != nil; s = s.next {
		if _, shadowed := env[s.name]; shadowed {
			continue
		}
		if s.val.exact && len(s.val.vals) == 1 {
			env[s.name] = s.val.vals[0]
		}
	}
	text := n.String()
	if ptr != nil && ptr.exact && len(ptr.vals) == 1 {
		// # is the element of the predicate being checked: put the text in
		// a one-element map(), where # means that element.
		env["__elem"] = ptr.vals[0]
		text = "map([__elem], " + text + ")[0]"
	}
	if w.exhausted {
		return nil, errBudget
	}
	v, err := evalConst(text, env, w.deadline, &w.bytesLeft)
	if errors.Is(err, errBudget) {
		w.exhausted = true
	}
	if err != nil {
		w.problem(n, ErrConstant, fmt.Sprintf("%s cannot be evaluated: %s", n.String(), cleanRuntimeError(err)))
		return nil, err
	}
	return v, nil
}

// evalConst compiles and runs a constant expression under the same bounds
// as a gate, and with the same strict operators.
func evalConst(text string, bindings map[string]any, deadline time.Time, bytesLeft *int) (any, error) {
	rec := newRecorder(deadline)
	rec.bytesLeft = *bytesLeft
	defer func() { *bytesLeft = rec.bytesLeft }()
	env := withHelpers(bindings, rec)
	src := &sources{text: map[ast.Node]string{}}
	prog, err := expr.Compile(text, append([]expr.Option{expr.Env(env), expr.Patch(src), expr.Patch(&strict{src: src}),
		expr.Optimize(false), expr.MaxNodes(maxNodes)}, inKeyOrder...)...)
	if err != nil {
		return nil, err
	}
	return runBounded(prog, env)
}

// vtype is the type of a value, as much as the checker needs of it.
type vtype struct {
	kind reflect.Kind // Float64, Int, String, Bool, Map, Slice; Interface: any
}

func join(a, b *vtype) *vtype {
	if a == nil {
		return b
	}
	if a.kind == b.kind {
		return a
	}
	return &vtype{kind: reflect.Interface}
}

// typeOfValue is the type of a shape value. A placeholder number is a
// float64 whatever its Go type, because the report reaches gates through
// JSON (see Env), where every number is a float64; an exact value (a
// constant) keeps its own type.
func typeOfValue(v any, exact bool) *vtype {
	switch v.(type) {
	case map[string]any:
		return &vtype{kind: reflect.Map}
	case []any:
		return &vtype{kind: reflect.Slice}
	case string:
		return &vtype{kind: reflect.String}
	case bool:
		return &vtype{kind: reflect.Bool}
	case nil:
		return &vtype{kind: reflect.Interface}
	}
	if _, ok := toFloat(v); ok {
		if exact {
			switch reflect.ValueOf(v).Kind() {
			case reflect.Float32, reflect.Float64:
				return &vtype{kind: reflect.Float64}
			}
			return &vtype{kind: reflect.Int}
		}
		return &vtype{kind: reflect.Float64}
	}
	return &vtype{kind: reflect.Interface}
}

func (t *vtype) exprType() types.Type {
	if t == nil {
		return types.Any
	}
	switch t.kind {
	case reflect.Float64:
		return types.Float64
	case reflect.Int:
		return types.Int
	case reflect.String:
		return types.String
	case reflect.Bool:
		return types.Bool
	case reflect.Map:
		// Not strict: keys are the resolver's business, and its messages
		// are better; the checker only needs to know it is a mapping.
		return types.Map{types.Extra: types.Any}
	case reflect.Slice:
		return types.Array(types.Any)
	}
	return types.Any
}

// helperTypes are the signatures of the helpers, for the checker.
var helperTypes = map[string]any{
	"run":      func(map[string]any) (any, error) { return nil, nil },
	"ratio":    ratio,
	"pct":      pct,
	"within":   within,
	"samples":  samples,
	"distinct": distinct,
	"repeat":   func(string, int) (string, error) { return "", nil },
	// no_regression reads baseline: call reads it so (noRegressionCall).
	"no_regression": func(any) (bool, error) { return false, nil },
}

// typeCheck runs expr's checker over tree, with every node the resolver
// resolved fully replaced by a typed placeholder, so that the checker
// infers types through member accesses it could not follow in a
// map[string]any (dynamic keys, # over report lists).
// typeCheck checks tree over env (the shape's types; the placeholders of
// the gate's resolved accesses are added to it).
func typeCheck(tree *parser.Tree, info map[ast.Node]*nodeInfo, env types.Map) error {
	p := &placeholders{info: info, env: env}
	ast.Walk(&tree.Node, p)
	cfg := conf.CreateNew()
	for _, op := range []expr.Option{expr.Env(env), expr.AsBool(), expr.Optimize(false)} {
		op(cfg)
	}
	_, err := checker.Check(tree, cfg)
	return err
}

type placeholders struct {
	info map[ast.Node]*nodeInfo
	env  types.Map
	n    int
}

func (p *placeholders) Visit(node *ast.Node) {
	switch (*node).(type) {
	case *ast.MemberNode, *ast.PointerNode:
	default:
		return
	}
	if pn, ok := (*node).(*ast.PointerNode); ok && pn.Name != "" {
		return
	}
	ni := p.info[*node]
	if ni == nil || ni.partial || ni.t == nil || ni.t.kind == reflect.Interface {
		return
	}
	p.n++
	name := "__t" + strconv.Itoa(p.n)
	p.env[name] = ni.t.exprType()
	ast.Patch(node, &ast.IdentifierNode{Value: name})
}

// staticEnv is what checking a gate needs of the shape, built once for all
// the gates of a scenario: building the parse environment's nature and the
// type map for every gate walked the whole shape each time.
type staticEnv struct {
	shape map[string]any
	// baseline is the address of the shape's baseline map (0: none).
	baseline    uintptr
	parse       map[string]any
	parseNature nature.Nature
	types       types.Map
}

func newStaticEnv(shape map[string]any) *staticEnv {
	e := &staticEnv{shape: shape, parse: map[string]any{}, types: types.Map{}}
	if b, ok := shape["baseline"].(map[string]any); ok {
		e.baseline = reflect.ValueOf(b).Pointer()
	}
	// As at run time: a shape key shadows a helper when parsing, a helper's
	// type wins when type checking.
	for k, v := range shape {
		e.parse[k] = v
		e.types[k] = typeOfValue(v, false).exprType()
	}
	for k, fn := range helperTypes {
		if _, ok := e.parse[k]; !ok {
			e.parse[k] = fn
		}
		e.types[k] = types.TypeOf(fn)
	}
	var cache nature.Cache
	e.parseNature = conf.EnvWithCache(&cache, e.parse)
	return e
}

// check parses a gate and checks it without evaluating it over the
// report. It returns every problem found, and whether the gate reads the
// shape's baseline.
func (e *staticEnv) check(s Spec) (readsBaseline bool, problems []Problem) {
	shape := e.shape
	cfg := conf.CreateNew()
	// The environment makes helper names (repeat) parse as calls of the
	// helpers, as they will at run time, not as expr's builtins.
	cfg.EnvObject, cfg.Env, cfg.Strict = e.parse, e.parseNature, e.parseNature.Strict
	expr.MaxNodes(maxNodes)(cfg)
	tree, err := parser.ParseWithConfig(s.Expr, cfg)
	if err != nil {
		return false, []Problem{compileProblem(s, err, ErrSyntax)}
	}
	w := &resolver{spec: s, shape: shape, seen: map[string]bool{}, info: map[ast.Node]*nodeInfo{},
		deadline: time.Now().Add(loadTimeout), bytesLeft: maxBytes, baseline: e.baseline}
	root := w.visit(tree.Node, nil, nil)
	if root.konst && !isLiteral(tree.Node) {
		_, _ = w.value(tree.Node, root, nil, nil)
	}
	if len(w.problems) > 0 {
		return w.readsBaseline, w.problems
	}
	if err := typeCheck(tree, w.info, maps.Clone(e.types)); err != nil {
		p := compileProblem(s, err, ErrType)
		p.Msg = strings.TrimSpace(p.Msg)
		return w.readsBaseline, []Problem{p}
	}
	return w.readsBaseline, w.constants
}

// staticMissingMessage is missingMessage at load: a statistic the shape
// holds with 0 samples is one the phase never measures, in any run.
func staticMissingMessage(parent, key string, m map[string]any) string {
	if c, ok := m["count"].(float64); ok && c == 0 && slices.Contains(statKeys, key) {
		metric := parent[strings.LastIndex(parent, ".")+1:]
		why := ""
		switch metric {
		case "tpot_ms", "itl_ms", "decode_tokens_per_s":
			why = " (a prefill phase stops at max_tokens 1, and a 1-token answer has no decode interval)"
		case "ttft_ms", "prefill_tokens_per_s":
			why = " (a non-streamed request has no first token to time)"
		}
		return fmt.Sprintf("%s has no %s: this phase never measures %s, so a gate on it could never be judged%s", parent, key, metric, why)
	}
	return missingMessage(parent, key, m)
}
