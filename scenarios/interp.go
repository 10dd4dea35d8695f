package scenarios

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/workload"
)

// interp expands ${vars.x}, ${env.X}, ${env.X:-default} and ${matrix.k} in
// scalar values. It runs twice: once for vars and env (matrix references are
// left as written), and once per matrix combination (final), which also turns
// the escape $${ into a literal ${.
type interp struct {
	d      *decoder
	vars   map[string]*yaml.Node
	order  []string
	env    func(string) (string, bool)
	matrix map[string]string
	final  bool
	// pending are the vars declared below the one being defined, so a
	// forward reference is told apart from a misspelt one.
	pending map[string]bool
	// budget bounds what var references expand to; shared by both passes.
	budget *expansion
	// depth is how deep the var being defined nests other vars (1: it
	// uses none), raised by each reference it makes.
	depth int
}

// MaxVarExpansionBytes bounds the text var references expand to, in all:
// each reference costs the size of the value it copies (its text, and
// nodeCost bytes per node of a list or mapping). Without it 40 vars that
// each double the one above reach terabytes from a file of 2 KB.
const MaxVarExpansionBytes = 16 << 20

// MaxVarDepth bounds how deep vars nest: a var using one that uses
// another is 3 deep. A chain of 20,000 vars each adding a character to
// the one above is quadratic in time and memory.
const MaxVarDepth = 64

// nodeCost is what one node of a copied value counts towards
// MaxVarExpansionBytes besides its text: a node is a few hundred bytes
// in memory and a line of the effective scenario.
const nodeCost = 128

// expansion is the account of var expansion during one load.
type expansion struct {
	spent int
	// over: a reference has passed a bound since it was last cleared.
	over bool
	// vars are the size and depth of each var defined so far.
	vars map[string]varCost
}

type varCost struct {
	size, depth int
	// over: the var's own value passed a bound (reported there), so a
	// reference to it fails without another message.
	over bool
}

// charge accounts for one reference to vars.name; it reports through errf
// and returns false when the reference would pass a bound.
func (in *interp) charge(name string, errf func(string, ...any)) bool {
	b := in.budget
	if b == nil {
		return true
	}
	c := b.vars[name]
	if c.over {
		b.over = true
		return false
	}
	if in.pending != nil && c.depth+1 > MaxVarDepth {
		errf("${vars.%s}: vars nest more than %d deep here (vars.%s is %d deep); at most %d: define the value directly instead of through a chain of vars",
			name, MaxVarDepth, name, c.depth, MaxVarDepth)
		b.over = true
		return false
	}
	if c.size > MaxVarExpansionBytes-b.spent {
		errf("${vars.%s}: expanding it (%d bytes) would take var expansion past %d MiB in all (%d bytes so far); at most %d MiB: a large var referenced in many places, or vars that double each other, expand beyond what any scenario needs",
			name, c.size, MaxVarExpansionBytes>>20, b.spent, MaxVarExpansionBytes>>20)
		b.over = true
		return false
	}
	b.spent += c.size
	in.depth = max(in.depth, c.depth+1)
	return true
}

// sizeOf is the cost of n as a copied value. Every node under n was
// charged when it was copied in, so walking it is bounded too.
func sizeOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	size := nodeCost + len(n.Value)
	for _, c := range n.Content {
		size += sizeOf(c)
	}
	return size
}

type ref struct {
	ns, name string
	def      *string
}

// parseRefs splits s into literal text and references. It reports malformed
// references through errf and returns ok=false.
func parseRefs(s string, errf func(string, ...any)) (parts []any, ok bool) {
	ok = true
	var lit strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			parts = append(parts, lit.String(), escape{})
			lit.Reset()
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			lit.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			errf("unterminated ${ in %q (close it with }, or write $${ for a literal ${)", s)
			return nil, false
		}
		body := s[i+2 : i+end]
		var r ref
		expr := body
		if k := strings.Index(body, ":-"); k >= 0 {
			def := body[k+2:]
			r.def = &def
			expr = body[:k]
		}
		ns, name, found := strings.Cut(expr, ".")
		if !found || name == "" {
			errf("bad reference ${%s}: write ${vars.NAME}, ${env.NAME}, ${env.NAME:-default} or ${matrix.KEY}", body)
			ok = false
		} else {
			r.ns, r.name = ns, name
			parts = append(parts, lit.String(), r)
			lit.Reset()
		}
		i += end + 1
	}
	parts = append(parts, lit.String())
	return parts, ok
}

type escape struct{}

// walk interpolates every scalar under n, in place. Mapping keys are not
// interpolated: a key is a name, not a value.
func (in *interp) walk(n *yaml.Node) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			in.walk(c)
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			in.key(n.Content[i-1])
			in.walk(n.Content[i])
		}
	case yaml.ScalarNode:
		if strings.Contains(n.Value, "${") {
			in.scalar(n)
		}
	}
}

// key refuses a reference in a mapping key: keys are not expanded, so it
// would stay as written and name a target, phase or header "${vars.x}".
// Told once, in the first pass.
func (in *interp) key(k *yaml.Node) {
	if in.final || k.Kind != yaml.ScalarNode || !strings.Contains(strings.ReplaceAll(k.Value, "$${", ""), "${") {
		return
	}
	in.d.errorf(k, "mapping key %q: ${...} is not expanded in a key (a key is a name, not a value); write the name itself, or $${ for a literal ${", k.Value)
}

func (in *interp) scalar(n *yaml.Node) {
	errf := func(format string, args ...any) { in.d.errorf(n, format, args...) }
	parts, ok := parseRefs(n.Value, errf)
	if !ok {
		return
	}
	// A scalar that is exactly one reference takes the referenced value's
	// type (and, for vars, its whole structure), so ${vars.size} stays an
	// integer and ${vars.tokens} can be a list.
	if len(parts) == 3 && parts[0] == "" && parts[2] == "" {
		if r, isRef := parts[1].(ref); isRef {
			if rep, resolved, ok := in.resolve(r, errf); ok {
				if resolved != nil {
					line, col := n.Line, n.Column
					*n = *cloneNode(resolved)
					// A value from --var or --set keeps the flag as its
					// position (the error then names what the user typed);
					// a value from the file points at where it is used.
					if n.Kind == yaml.ScalarNode && resolved.Line >= 0 {
						n.Line, n.Column = line, col
					}
				} else if rep != nil {
					style := n.Style
					n.Value = *rep
					switch {
					case *rep == "":
						n.Tag = "!!str" // an empty value is an empty string, not null
					case style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0:
						n.Tag = "" // let YAML 1.2 resolve the type of the substituted text
						resolveCore(n)
					}
				}
			}
			return
		}
	}
	var b strings.Builder
	changed := false
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			b.WriteString(p)
		case escape:
			if in.final {
				b.WriteString("${")
				changed = true
			} else {
				b.WriteString("$${")
			}
		case ref:
			rep, resolved, ok := in.resolve(p, errf)
			if !ok {
				return
			}
			switch {
			case resolved != nil:
				if resolved.Kind != yaml.ScalarNode {
					errf("${%s.%s} is %s and cannot be part of a longer string", p.ns, p.name, describe(resolved))
					return
				}
				b.WriteString(resolved.Value)
				changed = true
			case rep != nil:
				b.WriteString(*rep)
				changed = true
			default:
				b.WriteString(refText(p))
			}
		}
	}
	if changed {
		n.Value = b.String()
		n.Tag = "!!str"
	}
}

func refText(r ref) string {
	s := "${" + r.ns + "." + r.name
	if r.def != nil {
		s += ":-" + *r.def
	}
	return s + "}"
}

// resolve returns either a replacement string, a node (vars), or neither when
// the reference is left for a later pass.
func (in *interp) resolve(r ref, errf func(string, ...any)) (*string, *yaml.Node, bool) {
	switch r.ns {
	case "vars":
		if v, ok := in.vars[r.name]; ok {
			if !in.charge(r.name, errf) {
				return nil, nil, false
			}
			return nil, v, true
		}
		if r.def != nil {
			return r.def, nil, true
		}
		if in.pending[r.name] {
			errf("vars.%s is defined later in vars; a var may use only the vars defined above it (move %s above this one)", r.name, r.name)
			return nil, nil, false
		}
		if in.d.errs.full() {
			in.d.errs.dropped++
			return nil, nil, false // the message, with its suggestion, would only be counted
		}
		errf("undefined variable vars.%s%s", r.name, knownList("defined vars", in.order, r.name))
		return nil, nil, false
	case "env":
		if !isEnvName(r.name) {
			errf("${env.NAME}: NAME %s", envNameMsg)
			return nil, nil, false
		}
		if v, ok := in.env(r.name); ok {
			if bad := workload.InvalidUTF8([]byte(v)); bad != nil {
				// YAML holds text only; the value may be a secret, so only
				// the place and the byte are said.
				errf("environment variable %s is not valid UTF-8 (byte 0x%02x; the value is not shown)", r.name, bad.Byte)
				return nil, nil, false
			}
			return &v, nil, true
		}
		if r.def != nil {
			return r.def, nil, true
		}
		errf("environment variable %s is not set (export it, or write ${env.%s:-default})", r.name, r.name)
		return nil, nil, false
	case "matrix":
		if !in.final {
			return nil, nil, true
		}
		if v, ok := in.matrix[r.name]; ok {
			return &v, nil, true
		}
		keys := sortedKeys(in.matrix)
		if len(keys) == 0 {
			errf("${matrix.%s} is used but the scenario has no matrix", r.name)
		} else {
			errf("unknown matrix key %q%s", r.name, knownList("matrix keys", keys, r.name))
		}
		return nil, nil, false
	}
	errf("unknown namespace %q in ${%s.%s} (use vars, env or matrix)", r.ns, r.ns, r.name)
	return nil, nil, false
}

func knownList(what string, names []string, got string) string {
	if len(names) == 0 {
		return " (no " + what + ")"
	}
	// A message names a bounded number of choices, so thousands of
	// undefined references cost linear, not quadratic, time and memory.
	const shown = 20
	list := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		list += fmt.Sprintf(", … %d more", len(names)-shown)
	}
	return suggest(got, names) + " (" + what + ": " + list + ")"
}

// defineVars resolves the vars mapping in order: a var may use env and any
// var defined above it.
func (in *interp) defineVars(n *yaml.Node) {
	if n == nil {
		return
	}
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		if n.ShortTag() != "!!null" {
			in.d.errorf(n, "vars: expected a mapping of names to values, got %s", describe(n))
		}
		return
	}
	in.pending = map[string]bool{}
	defer func() { in.pending = nil }()
	for i := 0; i+1 < len(n.Content); i += 2 {
		in.pending[n.Content[i].Value] = true
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		delete(in.pending, k.Value)
		in.key(k)
		if _, dup := in.vars[k.Value]; dup {
			in.d.errorf(k, "vars: duplicate variable %q", k.Value)
			continue
		}
		in.depth = 1
		if in.budget != nil {
			in.budget.over = false
		}
		in.walk(v)
		in.vars[k.Value] = v
		in.order = append(in.order, k.Value)
		if b := in.budget; b != nil {
			b.vars[k.Value] = varCost{size: sizeOf(v), depth: in.depth, over: b.over}
		}
	}
}

func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	if n.Content != nil {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, x := range n.Content {
			c.Content[i] = cloneNode(x)
		}
	}
	return &c
}
