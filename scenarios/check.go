package scenarios

import (
	"strings"
)

var (
	transports   = []string{"direct", "relay"}
	cacheModes   = []string{"cached", "stateless"}
	compressions = []string{"none", "zlib"}
	phaseKinds   = []string{PhasePrefill, PhaseDecode}
)

// phaseKeys lists, per target kind and phase kind, the phase keys that mean
// something there; any other key written is an error rather than ignored.
var seamPhaseKeys = map[string][]string{
	PhasePrefill: {"kind", "description"},
	PhaseDecode:  {"kind", "description", "tokens"},
}

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}

// check applies defaults and the rules a schema cannot express.
func check(d *decoder, doc *document) {
	e := d.errs
	if len(doc.Targets) == 0 {
		e.add(doc.Pos, "no targets: add a targets mapping, e.g. targets: {route: {kind: seam, transport: direct, cache: cached}}")
	}
	for _, t := range doc.Targets {
		if t.Seam != nil {
			checkSeam(e, t)
		}
	}
	if len(doc.Phases) == 0 {
		e.add(doc.Pos, "no phases: add a phases mapping, e.g. phases: {prefill: {}, decode: {}}")
	}
	for _, p := range doc.Phases {
		if p.Kind == "" {
			if oneOf(p.Name, phaseKinds) {
				p.Kind = p.Name
			} else {
				e.add(p.Pos, "phases.%s: missing kind (one of %s)", p.Name, strings.Join(phaseKinds, ", "))
				continue
			}
		}
		if !oneOf(p.Kind, phaseKinds) {
			e.add(p.At("kind"), "phases.%s.kind: unknown phase kind %q (one of %s)%s", p.Name, p.Kind, strings.Join(phaseKinds, ", "), suggest(p.Kind, phaseKinds))
			continue
		}
		if p.Tokens < 0 {
			e.add(p.At("tokens"), "phases.%s.tokens: must be positive, got %d", p.Name, p.Tokens)
		}
		for _, t := range doc.Targets {
			if t.Kind != KindSeam {
				continue
			}
			allowed := seamPhaseKeys[p.Kind]
			for key, kp := range p.Keys {
				if !oneOf(key, allowed) {
					e.add(kp, "phases.%s.%s: does not apply to a %s phase on a seam target (target %q)", p.Name, key, p.Kind, t.Name)
				}
			}
			if p.Kind == PhaseDecode && len(t.Seam.OutputTokens) == 0 {
				e.add(t.Pos, "targets.%s: a decode phase needs output_tokens on the seam target", t.Name)
			}
		}
	}
	names := map[string]bool{}
	for i, g := range doc.Gates {
		if strings.TrimSpace(g.Name) == "" {
			e.add(g.Pos, "gates[%d]: missing name", i)
		} else if names[g.Name] {
			e.add(g.At("name"), "gates[%d]: duplicate gate name %q", i, g.Name)
		}
		names[g.Name] = true
		if strings.TrimSpace(g.Expr) == "" {
			e.add(g.Pos, "gates[%d] (%s): missing expr", i, g.Name)
		}
	}
}

func checkSeam(e *errs, t *Target) {
	s := t.Seam
	path := "targets." + t.Name
	if !oneOf(s.Transport, transports) {
		e.add(s.At("transport"), "%s.transport: %s (one of %s)%s", path, gotOrMissing(s.Transport), strings.Join(transports, ", "), suggest(s.Transport, transports))
	}
	if !oneOf(s.Cache, cacheModes) {
		e.add(s.At("cache"), "%s.cache: %s (one of %s)%s", path, gotOrMissing(s.Cache), strings.Join(cacheModes, ", "), suggest(s.Cache, cacheModes))
	}
	if !s.Has("route") {
		s.Route = []string{"head", "tail"}
	}
	if len(s.Route) < 2 {
		e.add(s.At("route"), "%s.route: a route needs at least two nodes, got %d", path, len(s.Route))
	}
	seen := map[string]bool{}
	for _, n := range s.Route {
		if n == "" || seen[n] {
			e.add(s.At("route"), "%s.route: node names must be non-empty and unique, got %q twice or empty", path, n)
		}
		seen[n] = true
	}
	if !s.Has("activation_bytes") {
		s.ActivationBytes = 4096
	}
	if s.ActivationBytes <= 0 {
		e.add(s.At("activation_bytes"), "%s.activation_bytes: must be positive, got %d", path, s.ActivationBytes)
	}
	c := &s.Compression
	if c.Algorithm == "" {
		c.Algorithm = "none"
	}
	if !oneOf(c.Algorithm, compressions) {
		e.add(c.At("algorithm"), "%s.compression.algorithm: unknown %q (one of %s)%s", path, c.Algorithm, strings.Join(compressions, ", "), suggest(c.Algorithm, compressions))
	}
	if c.Level != nil {
		if c.Algorithm != "zlib" {
			e.add(c.At("level"), "%s.compression.level: only zlib has a level", path)
		} else if *c.Level < 1 || *c.Level > 9 {
			e.add(c.At("level"), "%s.compression.level: must be 1 (fastest) to 9 (smallest), got %d", path, *c.Level)
		}
	} else if c.Algorithm == "zlib" {
		lvl := 6 // zlib's own default
		c.Level = &lvl
	}
	if s.SessionID == "" {
		s.SessionID = "route-session"
	}
	if s.Costs.LinkBytesPerS < 0 {
		e.add(s.Costs.At("link_bytes_per_s"), "%s.costs.link_bytes_per_s: must not be negative", path)
	}
}

func gotOrMissing(v string) string {
	if v == "" {
		return "missing"
	}
	return "unknown value " + quote(v)
}

func quote(s string) string { return "\"" + s + "\"" }
