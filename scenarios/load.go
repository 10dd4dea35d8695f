package scenarios

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/internal/safefile"
	"github.com/tollgate-dev/tollgate/schema"
)

// Options change how a scenario loads.
type Options struct {
	// Profile names an entry of the scenario's profiles, merged over it.
	Profile string
	// Vars are --var NAME=VALUE, applied after the profile, before Sets.
	Vars []string
	// Sets are --set PATH=VALUE overrides, applied before interpolation.
	Sets []string
	// LookupEnv resolves ${env.NAME}; nil means no environment.
	LookupEnv func(string) (string, bool)
	// MaxRuns caps the runs the matrix expands to; 0 means DefaultMaxRuns.
	MaxRuns int
	// AllowOutside are directories (--allow-outside) the files the
	// scenario names may resolve into besides the scenario's own tree.
	AllowOutside []string
}

// DefaultMaxRuns bounds matrix expansion: each run costs time and memory
// at load, and a matrix of a dozen keys would make millions.
const DefaultMaxRuns = 1000

// readScenario reads the scenario file the user named: a regular file of
// at most MaxFileBytes, wherever it is (its includes are held to its tree).
func readScenario(path string) ([]byte, error) {
	return safefile.ReadAll(path, safefile.Rules{Limit: MaxFileBytes, What: "scenario"})
}

// Load reads, interpolates, expands and validates a scenario file. The error,
// when not nil, is an ErrorList with every problem found and its position.
func Load(path string, opts Options) (*Scenario, error) {
	data, err := readScenario(path)
	if err != nil {
		return nil, ErrorList{{Pos: Pos{File: path}, Msg: fmt.Sprintf("cannot read scenario: %v", err)}}
	}
	return Parse(path, data, opts)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse is Load for bytes already read; file names the source in errors.
func Parse(file string, data []byte, opts Options) (*Scenario, error) {
	e := &errs{}
	d := &decoder{file: file, errs: e, sets: setLabels(opts), roots: fileRoots(file, opts.AllowOutside)}
	env := opts.LookupEnv
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}

	if len(data) > MaxFileBytes {
		e.add(Pos{File: file}, "cannot read scenario: %v: over %s", ErrTooLarge, safefile.Size(MaxFileBytes))
		return nil, e.err()
	}
	root := d.tree(file, data, 0, []string{file})
	if root == nil {
		return nil, e.err()
	}
	applyProfile(d, root, opts.Profile)
	applyOverrides(d, root, opts)
	templated := templatedBaseURLs(root)
	in := interpolateVars(d, root, env)
	// Values whose interpolation failed stay as written; later errors at the
	// same place would only repeat the first one, so they are dropped.
	failed := map[Pos]bool{}
	for _, x := range e.list {
		failed[x.Pos] = true
	}
	firstPass := len(e.list)

	warnings := dropSimForSetURL(d, root, templated)

	effective, err := yaml.Marshal(&yaml.Node{Kind: yaml.DocumentNode, HeadComment: d.header, Content: []*yaml.Node{root}})
	if err != nil {
		e.add(Pos{File: file, Line: 1, Col: 1}, "cannot re-encode the effective scenario: %v", err)
		return nil, e.err()
	}
	// The hash identifies what is measured (see identity): tightening a
	// threshold or moving the server keeps a baseline comparable.
	// A document that cannot be decoded (a duplicate key, an alias that
	// contains itself) is reported by the decoder below, with its place;
	// this error is the last resort, should it find nothing.
	sum, fields, identErr := identity(root)

	axes := readMatrix(d, mapValue(root, "matrix"))
	if !capRuns(d, root, axes, opts.MaxRuns) {
		return nil, e.err()
	}

	sc := &Scenario{
		File:      file,
		SHA256:    sum,
		Identity:  fields,
		Effective: effective,
		Matrix:    axes,
		Vars:      scenarioVars(in),
		Warnings:  warnings,
	}
	expandRuns(d, sc, root, in, axes)
	setGateIndents(sc.Gates, data)
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	dropRepeated(e, firstPass, failed)
	if identErr != nil && len(e.list) == 0 {
		e.add(Pos{File: file, Line: 1, Col: 1}, "cannot encode the scenario's identity: %v", identErr)
	}
	if err := e.err(); err != nil {
		return nil, err
	}
	return sc, nil
}

// setLabels are the --var and --set flags as errors name them, in the
// order they are applied.
func setLabels(opts Options) []string {
	var sets []string
	for _, v := range opts.Vars {
		sets = append(sets, "--var "+v)
	}
	for _, s := range opts.Sets {
		sets = append(sets, "--set "+s)
	}
	return sets
}

// applyOverrides applies --var then --set to the tree, before anything is
// interpolated; a --var sets a declared var only.
func applyOverrides(d *decoder, root *yaml.Node, opts Options) {
	e, file := d.errs, d.file
	var sch *setSchema
	if len(opts.Vars)+len(opts.Sets) > 0 {
		var err error
		if sch, err = loadSetSchema(); err != nil {
			e.add(Pos{File: file}, "internal: %v", err)
		}
	}
	for i, v := range opts.Vars {
		name, value, ok := strings.Cut(v, "=")
		if !ok || name == "" || strings.Contains(name, ".") {
			e.add(Pos{Set: "--var " + v}, "expected NAME=VALUE, e.g. --var base_url=http://127.0.0.1:8000")
			continue
		}
		if mapValue(root, "vars") == nil {
			e.add(Pos{Set: "--var " + v}, "the scenario has no vars to set; declare it in the file (vars: {%s: ...})", name)
			continue
		}
		applySet(d, sch, root, i, "vars."+name+"="+value)
	}
	for i, s := range opts.Sets {
		applySet(d, sch, root, len(opts.Vars)+i, s)
	}
}

// interpolateVars defines the scenario's vars and interpolates the rest of
// the tree once, before the matrix is expanded.
func interpolateVars(d *decoder, root *yaml.Node, env func(string) (string, bool)) *interp {
	in := &interp{d: d, vars: map[string]*yaml.Node{}, env: env, budget: &expansion{vars: map[string]varCost{}}}
	varsNode := mapValue(root, "vars")
	in.defineVars(varsNode)
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i+1] != varsNode {
			in.walk(root.Content[i+1])
		}
	}
	return in
}

// scenarioVars are the vars' final values, in the form gates see them.
func scenarioVars(in *interp) map[string]any {
	vars := map[string]any{}
	for _, name := range in.order {
		var v any
		n := cloneNode(in.vars[name])
		unescape(n) // the value gates see is the value the scenario used
		if err := n.Decode(&v); err == nil {
			vars[name] = v
		}
	}
	return vars
}

// expandRuns decodes and checks the tree once per matrix combination, and
// adds a run per target; the first combination gives the scenario's own
// name, targets, phases and gates.
func expandRuns(d *decoder, sc *Scenario, root *yaml.Node, in *interp, axes []MatrixAxis) {
	e, env := d.errs, in.env
	for ci, combo := range combinations(axes) {
		n := cloneNode(root)
		fin := &interp{d: d, vars: in.vars, order: in.order, env: env, matrix: map[string]string{}, final: true, budget: in.budget}
		for _, p := range combo {
			fin.matrix[p.Key] = p.Value
		}
		fin.walk(n)
		var doc document
		before := len(e.list)
		d.decode(n, reflectValue(&doc), "")
		// Semantic checks run even after decode errors, so one pass shows
		// everything. The schema is checked last: when the loader's own,
		// more specific messages found nothing, the schema must agree.
		check(d, &doc)
		if len(e.list) == before {
			validateSchema(d, n)
		}
		if ci == 0 {
			sc.Name = doc.Name
			sc.Description = doc.Description
			sc.Targets = doc.Targets
			sc.Phases = doc.Phases
			sc.Gates = doc.Gates
			sc.Samples = doc.Report.Samples == nil || *doc.Report.Samples
		}
		for _, t := range doc.Targets {
			names := make([]string, 0, len(combo)+1)
			if len(doc.Targets) > 1 || len(combo) == 0 {
				names = append(names, t.Name)
			}
			for _, p := range combo {
				names = append(names, p.Value)
			}
			sc.Runs = append(sc.Runs, &Run{Name: strings.Join(names, "/"), Params: combo, Target: t, Phases: doc.Phases})
		}
	}
}

// setGateIndents records the indentation of each block-scalar gate
// expression, read from the source text.
func setGateIndents(gates []*Gate, data []byte) {
	lines := strings.Split(string(data), "\n")
	for _, g := range gates {
		if g == nil {
			continue
		}
		if g.ExprBlock && g.ExprPos.Line > 0 && g.ExprPos.Line < len(lines) {
			text := lines[g.ExprPos.Line] // the line after the | or > indicator
			g.ExprIndent = len(text) - len(strings.TrimLeft(text, " "))
		}
	}
}

// dropRepeated drops the errors after the first pass that fall where an
// interpolation already failed.
func dropRepeated(e *errs, firstPass int, failed map[Pos]bool) {
	kept := e.list[:firstPass]
	for _, x := range e.list[firstPass:] {
		if !failed[x.Pos] {
			kept = append(kept, x)
		}
	}
	e.list = kept
}

// syntaxError turns a yaml.v3 parse error into a positioned Error. yaml.v3
// reports only a line, and for some errors the line where the enclosing
// block starts or none at all, so the common causes are looked for in the
// text: a tab in the indentation, a key indented to no enclosing level, a
// control character, an unknown alias; any other error is found where the
// file cut short first fails with it (locateSyntaxError).
func syntaxError(file string, data []byte, err error) *Error {
	msg := strings.TrimPrefix(strings.SplitN(err.Error(), "\n", 2)[0], "yaml: ")
	lines := strings.Split(string(data), "\n")
	line := 1
	if m := yamlLineRE.FindStringSubmatch("yaml: " + msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	at := func(l, c int, text string) *Error {
		return &Error{Pos: Pos{File: file, Line: l, Col: c}, Msg: "YAML syntax error: " + text}
	}
	// yaml.v3 may name the line before the one at fault.
	from := max(line-1, 1)
	switch {
	case strings.Contains(msg, "tab") || strings.Contains(msg, "cannot start any token"):
		for i := from - 1; i < len(lines) && i <= line; i++ {
			indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
			if k := strings.IndexByte(indent, '\t'); k >= 0 {
				return at(i+1, k+1, "a tab in the indentation; YAML indents with spaces only ("+msg+")")
			}
		}
	case strings.HasPrefix(msg, "did not find expected key"), strings.HasPrefix(msg, "did not find expected '-' indicator"):
		if l, c, why, ok := misindented(lines); ok && l >= from {
			return at(l, c, fmt.Sprintf("this line is indented to column %d, %s (%s)", c, why, msg))
		}
	case strings.HasPrefix(msg, "control characters are not allowed"):
		for i, text := range lines {
			if k := strings.IndexFunc(text, func(r rune) bool { return r < ' ' && r != '\t' && r != '\r' || r == 0x7f }); k >= 0 {
				return at(i+1, k+1, msg)
			}
		}
	case strings.HasPrefix(msg, "unknown anchor '"):
		name, _, _ := strings.Cut(strings.TrimPrefix(msg, "unknown anchor '"), "'")
		for i, text := range lines {
			if k := strings.Index(text, "*"+name); k >= 0 {
				return at(i+1, k+1, msg+" (define it with &"+name+" before it is used)")
			}
		}
	}
	if l, c, ok := locateSyntaxError(data, msg); ok {
		return at(l, c, msg)
	}
	col := 1
	if line-1 < len(lines) {
		text := lines[line-1]
		col = len(text) - len(strings.TrimLeft(text, " \t")) + 1
	}
	return at(line, col, msg)
}

// templatedBaseURLs are the targets' base_url values written as a
// reference (${vars.base_url}, ${env.URL:-}), as written: the file leaves
// the choice of server to whoever runs it.
func templatedBaseURLs(root *yaml.Node) map[*yaml.Node]string {
	out := map[*yaml.Node]string{}
	targets := mapValue(root, "targets")
	if targets == nil || targets.Kind != yaml.MappingNode {
		return out
	}
	for i := 1; i < len(targets.Content); i += 2 {
		if u := mapValue(targets.Content[i], "base_url"); u != nil && u.Kind == yaml.ScalarNode && strings.Contains(u.Value, "${") {
			out[u] = u.Value
		}
	}
	return out
}

// dropSimForSetURL removes the sim block of every target whose base_url
// came from a --set or --var flag, or from a reference the file leaves to
// the run (templated: ${vars.base_url}, ${env.URL}), and names a server:
// the runner points a simulator scenario at a server on purpose
// (examples/load-sweep.yaml says to), and the block would configure
// nothing. A server written literally beside sim is an error (check), as
// the schema says.
func dropSimForSetURL(d *decoder, root *yaml.Node, templated map[*yaml.Node]string) []string {
	targets := mapValue(root, "targets")
	if targets == nil || targets.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(targets.Content); i += 2 {
		t := targets.Content[i+1]
		u := mapValue(t, "base_url")
		raw, fromRef := templated[u]
		if u == nil || u.Kind != yaml.ScalarNode || (u.Line >= 0 && !fromRef) || u.Value == "" || u.Value == "embedded" || mapValue(t, "sim") == nil {
			continue
		}
		from := d.pos(u).String()
		if fromRef && u.Line >= 0 {
			from = fmt.Sprintf("%s at %s, %s", raw, from, u.Value)
		}
		for j := 0; j+1 < len(t.Content); j += 2 {
			if t.Content[j].Value == "sim" {
				out = append(out, fmt.Sprintf("%s: targets.%s.sim is ignored: base_url (%s) names a server",
					d.pos(t.Content[j]), targets.Content[i].Value, from))
				t.Content = append(t.Content[:j:j], t.Content[j+2:]...)
				break
			}
		}
	}
	return out
}

// misindented finds the first line indented to a column no enclosing
// block starts at, the usual cause of yaml.v3's "did not find expected
// key" (which names the line where the block starts): a key dedented to
// no level, a key inside a list item left of the item's content, or a key
// aligned with the "- " of a list that belongs to the key above.
func misindented(lines []string) (line, col int, why string, ok bool) {
	type level struct {
		col  int
		dash bool // the "- " column of a list indented under its key
	}
	var levels []level
	for i, text := range lines {
		trimmed := strings.TrimLeft(text, " ")
		if strings.TrimSpace(trimmed) == "" || trimmed[0] == '#' {
			continue
		}
		ind := len(text) - len(trimmed)
		isDash := trimmed == "-" || strings.HasPrefix(trimmed, "- ")
		popped := false
		for len(levels) > 0 && levels[len(levels)-1].col > ind {
			levels = levels[:len(levels)-1]
			popped = true
		}
		switch top := len(levels) - 1; {
		case top < 0 && popped, top >= 0 && levels[top].col < ind && popped:
			return i + 1, ind + 1, "which matches no enclosing key", true
		case top < 0 || levels[top].col < ind:
			levels = append(levels, level{col: ind, dash: isDash})
		case levels[top].dash && !isDash:
			parent := 1
			if top > 0 {
				parent = levels[top-1].col + 1
			}
			return i + 1, ind + 1, fmt.Sprintf(`the column of the "- " of the list above: a key of the mapping that holds the list goes at column %d, a key of a list item right of its "- "`, parent), true
		}
		if isDash {
			// The item's content is a level of its own: "- name: a" puts
			// the item's keys at the column of "name".
			rest := trimmed
			c := ind
			for rest == "-" || strings.HasPrefix(rest, "- ") {
				after := strings.TrimLeft(rest[1:], " ")
				c += len(rest) - len(after)
				rest = after
			}
			if rest != "" && rest[0] != '#' {
				levels = append(levels, level{col: c})
			}
		}
	}
	return 0, 0, "", false
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func readMatrix(d *decoder, n *yaml.Node) []MatrixAxis {
	if n == nil || n.ShortTag() == "!!null" {
		return nil
	}
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "matrix: expected a mapping of keys to lists of values, got %s", describe(n))
		return nil
	}
	var axes []MatrixAxis
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolveAlias(n.Content[i+1])
		ax := MatrixAxis{Key: k.Value, Pos: d.pos(k)}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			d.errorf(v, "matrix.%s: expected a non-empty list of values, got %s", k.Value, describe(v))
			continue
		}
		seen := map[string]bool{}
		for _, c := range v.Content {
			c = resolveAlias(c)
			if c.Kind != yaml.ScalarNode || c.ShortTag() == "!!null" || c.ShortTag() == "!!bool" {
				d.errorf(c, "matrix.%s: values must be strings or numbers, got %s", k.Value, describe(c))
				continue
			}
			if strings.Contains(c.Value, "/") || c.Value == "" {
				d.errorf(c, "matrix.%s: value %q must be non-empty and must not contain / (run names join values with /)", k.Value, c.Value)
				continue
			}
			if seen[c.Value] {
				d.errorf(c, "matrix.%s: duplicate value %q", k.Value, c.Value)
				continue
			}
			seen[c.Value] = true
			ax.Values = append(ax.Values, c.Value)
		}
		axes = append(axes, ax)
	}
	return axes
}

// capRuns refuses a matrix that expands to more than max runs, before
// any is built: expansion costs time and memory per run.
func capRuns(d *decoder, root *yaml.Node, axes []MatrixAxis, max int) bool {
	if max <= 0 {
		max = DefaultMaxRuns
	}
	targets := 1
	if t := resolveAlias(mapValue(root, "targets")); t != nil && t.Kind == yaml.MappingNode && len(t.Content) > 2 {
		targets = len(t.Content) / 2
	}
	runs, exact := targets, true
	var sizes []string
	for _, ax := range axes {
		sizes = append(sizes, fmt.Sprintf("%s: %d", ax.Key, len(ax.Values)))
		if k := len(ax.Values); k > 0 && exact {
			if runs > math.MaxInt/k {
				exact = false // the count itself would overflow
				continue
			}
			runs *= k
		}
	}
	if exact && runs <= max {
		return true
	}
	n := mapValue(root, "matrix")
	what := strconv.Itoa(runs)
	if !exact {
		what = "more than " + strconv.Itoa(math.MaxInt)
	}
	d.errorf(n, "matrix: expands to %s runs (%s values × %d target(s)); at most %d: drop values or keys, or split the scenario into several files",
		what, strings.Join(sizes, ", "), targets, max)
	return false
}

// combinations expands the matrix with the first key outermost, so
// {transport: [direct, relay], cache: [cached, stateless]} gives
// direct/cached, direct/stateless, relay/cached, relay/stateless.
func combinations(axes []MatrixAxis) [][]Param {
	out := [][]Param{nil}
	for _, ax := range axes {
		var next [][]Param
		for _, prefix := range out {
			for _, v := range ax.Values {
				c := append(append([]Param{}, prefix...), Param{Key: ax.Key, Value: v})
				next = append(next, c)
			}
		}
		out = next
	}
	return out
}

// validateSchema checks the expanded document against the published
// scenario schema, so the schema editors use and the loader never disagree.
func validateSchema(d *decoder, n *yaml.Node) {
	// The schema asks of vars only that it is a mapping, and yaml.v3
	// decodes a mapping in time quadratic in its keys (40,000 vars took
	// 23 s), so an empty mapping stands in for it.
	if n.Kind == yaml.MappingNode {
		c := *n
		c.Content = append([]*yaml.Node{}, n.Content...)
		for i := 0; i+1 < len(c.Content); i += 2 {
			if c.Content[i].Value == "vars" && resolveAlias(c.Content[i+1]).Kind == yaml.MappingNode {
				c.Content[i+1] = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: c.Content[i+1].Line, Column: c.Content[i+1].Column}
			}
		}
		n = &c
	}
	var v any
	if err := n.Decode(&v); err != nil {
		d.errorf(n, "%v", err)
		return
	}
	for _, p := range schema.ValidateScenario(normalize(v)) {
		at := nodeAt(n, p.Path)
		d.errorf(at, "%s: %s", pathString(p.Path), p.Message)
	}
}

// normalize turns YAML-decoded values into the JSON shapes the schema
// validator expects (map[string]any, []any, float64/int).
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	}
	return v
}

func nodeAt(n *yaml.Node, path []string) *yaml.Node {
	cur := n
	for _, seg := range path {
		cur = resolveAlias(cur)
		switch cur.Kind {
		case yaml.MappingNode:
			next := (*yaml.Node)(nil)
			for j := 0; j+1 < len(cur.Content); j += 2 {
				if cur.Content[j].Value == seg {
					next = cur.Content[j+1]
				}
			}
			if next == nil {
				return cur
			}
			cur = next
		case yaml.SequenceNode:
			k, err := strconv.Atoi(seg)
			if err != nil || k >= len(cur.Content) {
				return cur
			}
			cur = cur.Content[k]
		default:
			return cur
		}
	}
	return cur
}

func pathString(p []string) string {
	if len(p) == 0 {
		return "scenario"
	}
	var b strings.Builder
	for i, s := range p {
		if _, err := strconv.Atoi(s); err == nil {
			b.WriteString("[" + s + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// unescape turns the escape $${ into ${ in every string under n.
func unescape(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode {
		n.Value = strings.ReplaceAll(n.Value, "$${", "${")
	}
	for _, c := range n.Content {
		unescape(c)
	}
}
