package scenarios

import (
	"bufio"
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/workload"
)

var (
	transports   = []string{"direct", "relay"}
	cacheModes   = []string{"cached", "stateless"}
	compressions = []string{"none", "zlib"}
	arrivals     = []string{"poisson", "constant", "gamma"}
	distKinds    = []string{"uniform", "normal"}
	endpoints    = []string{"chat", "completions"}
)

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
	for _, key := range []string{"include", "profiles"} {
		if doc.Has(key) {
			e.add(doc.Keys[key], "%s: allowed only at the top level of a scenario file, not inside a profile", key)
		}
	}
	if !doc.Has("targets") {
		// No server named: the embedded simulator, so a new user sees real results.
		doc.Targets = []*Target{{Meta: Meta{Pos: doc.Pos}, Name: KindEmbedded, Kind: KindEmbedded, OpenAI: &OpenAITarget{}}}
		doc.Targets[0].OpenAI.Kind = KindEmbedded
	} else if len(doc.Targets) == 0 && !d.nullBodies["targets"] {
		e.add(doc.At("targets"), "no targets: name at least one, or leave targets out to use the embedded simulator")
	}
	for _, t := range doc.Targets {
		if t.Seam != nil {
			checkSeam(e, t)
		}
		if t.OpenAI != nil {
			checkOpenAI(e, t)
		}
	}
	if len(doc.Phases) == 0 && !d.nullBodies["phases"] {
		e.add(doc.At("phases"), "no phases: add a phases mapping, e.g. phases: {prefill: {}, decode: {}}")
	}
	for _, p := range doc.Phases {
		checkPhase(d, doc, p)
	}
	checkGates(e, doc)
}

// checkPhase resolves a phase's kind, then checks its keys against each
// target and, on a live target, applies the kind's defaults and checks.
func checkPhase(d *decoder, doc *document, p *Phase) {
	e := d.errs
	if p.Kind == "" {
		if !oneOf(p.Name, phaseKinds) {
			e.add(p.Pos, "phases.%s: missing kind (one of %s)", p.Name, strings.Join(phaseKinds, ", "))
			return
		}
		p.Kind = p.Name
	}
	kind, known := kindOf(p.Kind)
	if !known {
		e.add(p.At("kind"), "phases.%s.kind: unknown phase kind %q (one of %s)%s", p.Name, p.Kind, strings.Join(phaseKinds, ", "), suggest(p.Kind, phaseKinds))
		return
	}
	if p.Tokens < 0 {
		e.add(p.At("tokens"), "phases.%s.tokens: must be positive, got %d", p.Name, p.Tokens)
	}
	for _, t := range doc.Targets {
		checkPhaseKeys(e, kind, p, t)
	}
	if anyLive(doc.Targets) {
		checkLivePhase(d, kind, p)
		checkContext(e, p, doc.Targets)
		if kind.targets != nil {
			kind.targets(e, p, doc.Targets)
		}
	}
}

// checkPhaseKeys refuses the keys written that mean nothing to the
// phase's kind on target t.
func checkPhaseKeys(e *errs, kind KindSpec, p *Phase, t *Target) {
	allowed := kind.keys
	what := "an openai or embedded"
	if t.Kind == KindSeam {
		allowed, what = kind.seamKeys, "a seam"
		if allowed == nil {
			e.add(p.At("kind"), "phases.%s: a %s phase cannot run on a seam target (target %q runs prefill and decode)", p.Name, p.Kind, t.Name)
			return
		}
	}
	for key, kp := range p.Keys {
		if !oneOf(key, allowed) {
			e.add(kp, "phases.%s.%s: does not apply to a %s phase on %s target (target %q)", p.Name, key, p.Kind, what, t.Name)
		}
	}
	if t.Kind == KindSeam && p.Kind == PhaseDecode && len(t.Seam.OutputTokens) == 0 {
		e.add(t.Pos, "targets.%s: a decode phase needs output_tokens on the seam target", t.Name)
	}
}

// checkGates checks that every gate has a name, unique, and an expr.
func checkGates(e *errs, doc *document) {
	names := map[string]bool{}
	for i, g := range doc.Gates {
		if g == nil {
			e.add(doc.ItemAt("gates", i), "gates[%d]: expected a mapping {name, expr}, got null", i)
			continue
		}
		if g.Keys == nil {
			continue // not a mapping: the decoder said so at its position
		}
		if strings.TrimSpace(g.Name) == "" {
			e.add(g.At("name"), "gates[%d]: missing name", i)
		} else if names[g.Name] {
			e.add(g.At("name"), "gates[%d]: duplicate gate name %q", i, g.Name)
		}
		names[g.Name] = true
		if strings.TrimSpace(g.Expr) == "" {
			e.add(g.At("expr"), "gates[%d] (%s): missing expr", i, g.Name)
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
	for i, n := range s.Route {
		if n == "" || seen[n] {
			e.add(s.ItemAt("route", i), "%s.route: node names must be non-empty and unique, got %q twice or empty", path, n)
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
	if f := s.Faults; f != nil && f.LeakConnections < 0 {
		e.add(f.At("leak_connections"), "%s.faults.leak_connections: must not be negative, got %d", path, f.LeakConnections)
	}
	if s.Costs.LinkBytesPerS < 0 {
		e.add(s.Costs.At("link_bytes_per_s"), "%s.costs.link_bytes_per_s: must not be negative", path)
	}
	if s.Endpoint != nil {
		checkSeamEndpoint(e, t)
	}
}

// checkSeamEndpoint: what a seam captured on a live endpoint can and cannot
// be asked to do. The client is the head node and the endpoint the tail, so
// only a two-node route is captured; bytes, compression and costs are what
// the wire measures, not settings.
func checkSeamEndpoint(e *errs, t *Target) {
	s, ep := t.Seam, t.Seam.Endpoint
	path := "targets." + t.Name
	checkLiveSeamSettings(e, s, path)
	epPath := path + ".endpoint"
	if !ep.Embedded() {
		u, err := url.Parse(ep.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e.add(ep.At("base_url"), "%s.base_url: %q is not an http(s)://host[:port] URL (or embedded)", epPath, redact.URL(ep.BaseURL))
		}
		// sim and tls apply only to the embedded simulator; a scenario may
		// keep them and be pointed at a server with --set, as an openai
		// target may keep its sim.
		ep.Sim, ep.TLS = nil, false
	} else if ep.Sim == nil {
		ep.Sim = &SimConfig{}
	}
	if ep.APIKeyEnv != "" && !isEnvName(ep.APIKeyEnv) {
		e.add(hideValue(ep.At("api_key_env")), "%s.api_key_env %s", epPath, envNameMsg)
	}
	if ep.SessionHeader == "" {
		ep.SessionHeader = DefaultSessionHeader
	}
	for _, name := range sortedKeys(ep.Headers) {
		switch {
		case !isToken(name):
			e.add(ep.At("headers"), "%s.headers: %q is not a valid header name (letters, digits and !#$%%&'*+-.^_`|~ only; no spaces, colons, CR or LF)", epPath, name)
		case !validFieldValue(ep.Headers[name]):
			e.add(hideValue(ep.At("headers")), "%s.headers.%s: the value contains a CR, LF or other control character (the value was not printed)", epPath, name)
		case strings.EqualFold(name, ep.SessionHeader):
			e.add(ep.At("headers"), "%s.headers.%s: the session header carries session_id; set session_id (and session_header) instead", epPath, name)
		}
	}
	for _, name := range ep.SecretHeaders {
		if !isToken(name) {
			e.add(ep.At("secret_headers"), "%s.secret_headers: %q is not a valid header name", epPath, name)
		}
	}
	if !isToken(ep.SessionHeader) {
		e.add(ep.At("session_header"), "%s.session_header: %q is not a valid header name", epPath, ep.SessionHeader)
	}
	if !validFieldValue(s.SessionID) {
		e.add(s.At("session_id"), "%s.session_id: the session header's value cannot hold a CR, LF or other control character", path)
	}
	if ep.Prompt == "" {
		ep.Prompt = DefaultSeamPrompt
	}
	if !ep.Has("timeout") || ep.Timeout.Duration == 0 {
		ep.Timeout.Duration = time.Minute
	}
	if ep.Timeout.Duration < 0 {
		e.add(ep.At("timeout"), "%s.timeout: must be positive", epPath)
	}
	if !ep.Has("ready_timeout") {
		ep.ReadyTimeout.Duration = 30 * time.Second
	}
}

// checkLiveSeamSettings refuses the settings of a stub seam that a seam
// captured on a live endpoint measures instead, or cannot reach.
func checkLiveSeamSettings(e *errs, s *SeamTarget, path string) {
	if len(s.Route) > 2 {
		e.add(s.At("route"), "%s.route: a live seam captures one seam, head -> tail (the client is the head, the endpoint the tail); a route of %d nodes has seams between nodes tollgate cannot reach: use route: [%s, %s] or a stub seam", path, len(s.Route), s.Route[0], s.Route[len(s.Route)-1])
	}
	if s.Compression.Algorithm != "none" {
		e.add(s.At("compression"), "%s.compression: a live seam sends what the endpoint speaks (HTTP and JSON) and cannot compress it; remove compression (wire_bytes and compression_ratio are measured)", path)
	}
	if s.Has("activation_bytes") {
		e.add(s.At("activation_bytes"), "%s.activation_bytes: a live seam sends real requests; their size is measured (payload_bytes, wire_bytes), not set", path)
	}
	if s.Has("costs") {
		e.add(s.At("costs"), "%s.costs: costs are a stub seam's virtual milliseconds; a live seam measures latency at the client (remove costs, or the endpoint)", path)
	}
}

func gotOrMissing(v string) string {
	if v == "" {
		return "missing"
	}
	return "unknown value " + quote(v)
}

func quote(s string) string { return "\"" + s + "\"" }

func checkOpenAI(e *errs, t *Target) {
	o := t.OpenAI
	path := "targets." + t.Name
	checkOpenAIAddress(e, t, path)
	checkOpenAIHeaders(e, o, path)
	defaultOpenAIOptions(o)
	checkOpenAISim(e, t, path)
	if o.Has("retries") {
		checkRetries(e, &o.Retries, path)
	}
	checkOpenAITransport(e, o, path)
}

// checkOpenAIAddress checks where the target's requests go: its base_url
// and its endpoint, which a kind may narrow (LiveKind.Endpoints).
func checkOpenAIAddress(e *errs, t *Target, path string) {
	o := t.OpenAI
	if t.Kind == KindEmbedded && o.Has("base_url") {
		e.add(o.At("base_url"), "%s.base_url: an embedded target is tollgate's own simulator; use kind: openai to name a server", path)
	}
	if o.BaseURL != "" && o.BaseURL != "embedded" {
		u, err := url.Parse(o.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e.add(o.At("base_url"), "%s.base_url: %q is not an http(s)://host[:port] URL", path, redact.URL(o.BaseURL))
		}
	}
	if o.Endpoint == "" {
		o.Endpoint = "chat"
	}
	if k, _ := liveKind(t.Kind); k.Endpoints != nil && !oneOf(o.Endpoint, k.Endpoints) {
		e.add(o.At("endpoint"), "%s.endpoint: %s (kind: %s) has the %s endpoint only, got %q", path, k.Speaks, k.Kind, strings.Join(k.Endpoints, ", "), o.Endpoint)
	} else if !oneOf(o.Endpoint, endpoints) {
		e.add(o.At("endpoint"), "%s.endpoint: unknown %q (one of %s)%s", path, o.Endpoint, strings.Join(endpoints, ", "), suggest(o.Endpoint, endpoints))
	}
}

// checkOpenAIHeaders checks the names given for credentials and headers.
func checkOpenAIHeaders(e *errs, o *OpenAITarget, path string) {
	if o.APIKeyEnv != "" && !isEnvName(o.APIKeyEnv) {
		e.add(hideValue(o.At("api_key_env")), "%s.api_key_env %s", path, envNameMsg)
	}
	// A CR or LF in a header would split the request; net/http refuses it
	// on every attempt, which used to look like a server that never
	// became ready. Values may be secrets, so they are never echoed.
	for _, name := range sortedKeys(o.Headers) {
		switch {
		case !isToken(name):
			e.add(o.At("headers"), "%s.headers: %q is not a valid header name (letters, digits and !#$%%&'*+-.^_`|~ only; no spaces, colons, CR or LF)", path, name)
		case !validFieldValue(o.Headers[name]):
			e.add(hideValue(o.At("headers")), "%s.headers.%s: the value contains a CR, LF or other control character (the value was not printed)", path, name)
		}
	}
	for _, name := range o.SecretHeaders {
		if !isToken(name) {
			e.add(o.At("secret_headers"), "%s.secret_headers: %q is not a valid header name", path, name)
		}
	}
}

// defaultOpenAIOptions fills in the switches, ready_timeout and request
// timeouts left unset.
func defaultOpenAIOptions(o *OpenAITarget) {
	if o.Stream == nil {
		o.Stream = boolPtr(true)
	}
	if o.Metadata == nil {
		o.Metadata = boolPtr(true)
	}
	if o.Metrics == nil {
		o.Metrics = boolPtr(true)
	}
	if !o.Has("ready_timeout") {
		o.ReadyTimeout.Duration = 30 * time.Second
	}
	// Defaults that keep a hung server from hanging the run; a long prefill
	// on a slow server still fits in ten minutes.
	if !o.Timeouts.Has("connect") || o.Timeouts.Connect.Duration == 0 {
		// The client's own default, written out so the report's effective
		// config says what was used (it said "0s", which reads as none).
		o.Timeouts.Connect.Duration = 10 * time.Second
	}
	if !o.Timeouts.Has("first_token") {
		o.Timeouts.FirstToken.Duration = 10 * time.Minute
	}
	if !o.Timeouts.Has("idle") {
		o.Timeouts.Idle.Duration = 2 * time.Minute
	}
	// A finite total ends an endless stream that keeps the idle clock fed.
	if !o.Timeouts.Has("total") {
		o.Timeouts.Total.Duration = 30 * time.Minute
	}
}

// checkOpenAISim keeps the sim block for an embedded target only.
func checkOpenAISim(e *errs, t *Target, path string) {
	o := t.OpenAI
	if !t.Embedded() && o.Has("sim") {
		// A latency model for a simulator that is not started would be
		// ignored without a word, and the report would not say so. (A
		// base_url from --set or --var drops the block at load, with a
		// warning: see dropSimForSetURL.)
		e.add(o.Keys["sim"], "%s.sim: configures the embedded simulator, and base_url names a server; drop sim, or base_url to measure the simulator", path)
	}
	if o.Sim == nil {
		o.Sim = &SimConfig{}
	}
	if !t.Embedded() {
		o.Sim = nil
	}
}

// checkRetries defaults the backoff of a retries block and checks it.
func checkRetries(e *errs, r *Retries, path string) {
	if r.Max < 0 {
		e.add(r.At("max"), "%s.retries.max: must not be negative, got %d", path, r.Max)
	}
	if r.Backoff.Duration == 0 {
		r.Backoff.Duration = 100 * time.Millisecond
	}
	if r.MaxBackoff.Duration == 0 {
		r.MaxBackoff.Duration = 10 * time.Second
	}
	if r.MaxBackoff.Duration < r.Backoff.Duration {
		e.add(r.At("max_backoff"), "%s.retries.max_backoff: %s is below backoff %s", path, r.MaxBackoff.Duration, r.Backoff.Duration)
	}
}

// checkOpenAITransport defaults and checks how responses are read: the
// arrival clock, redirects, line size and CA file.
func checkOpenAITransport(e *errs, o *OpenAITarget, path string) {
	if o.ArrivalClock == "" {
		o.ArrivalClock = "kernel"
	}
	if !oneOf(o.ArrivalClock, []string{"kernel", "read"}) {
		e.add(o.At("arrival_clock"), "%s.arrival_clock: unknown %q (kernel or read)", path, o.ArrivalClock)
	}
	if o.FollowRedirects == "" {
		o.FollowRedirects = "never"
	}
	if !oneOf(o.FollowRedirects, []string{"never", "same_origin"}) {
		e.add(o.At("follow_redirects"), "%s.follow_redirects: unknown %q (never or same_origin)", path, o.FollowRedirects)
	}
	if o.MaxLineBytes < 0 {
		e.add(o.At("max_line_bytes"), "%s.max_line_bytes: must be positive", path)
	}
	if o.CAFile != "" {
		if err := checkCAFile(o.CAFile); err != nil {
			e.add(o.At("ca_file"), "%s.ca_file: %v", path, err)
		}
	}
}

func boolPtr(b bool) *bool { return &b }

func anyLive(ts []*Target) bool {
	for _, t := range ts {
		if t.OpenAI != nil {
			return true
		}
	}
	return false
}

// checkLivePhase applies the defaults of live phase kinds and checks their values.
func checkLivePhase(d *decoder, kind KindSpec, p *Phase) {
	e := d.errs
	path := "phases." + p.Name
	if p.Repeat == 0 {
		p.Repeat = 1
	}
	if p.Repeat < 0 {
		e.add(p.At("repeat"), "%s.repeat: must be at least 1, got %d", path, p.Repeat)
	}
	if !kind.dists {
		for key, dist := range map[string]*Dist{"prompt_tokens": p.PromptDist, "max_tokens": p.MaxTokensDist} {
			if dist != nil {
				e.add(p.At(key), "%s.%s: a distribution applies only to load phases; give a number", path, key)
			}
		}
	}
	kind.check(d, p, path)
	checkRequestBounds(e, p, path)
	checkPhaseSizes(e, p, path)
	checkFixedPrompt(d, p, path)
	checkDataset(d, p, path)
}

// checkPhaseSizes checks the token counts and error budget common to
// every live phase kind, once the kind's defaults are in.
func checkPhaseSizes(e *errs, p *Phase, path string) {
	for i, n := range p.PromptTokens {
		if n < 1 {
			e.add(p.ItemAt("prompt_tokens", i), "%s.prompt_tokens[%d]: must be at least 1, got %d", path, i, n)
		}
	}
	if p.MaxTokens < 0 {
		e.add(p.At("max_tokens"), "%s.max_tokens: must be at least 1, got %d", path, p.MaxTokens)
	}
	if r := p.MaxErrorRate; r != nil && (*r < 0 || *r > 1) {
		e.add(p.At("max_error_rate"), "%s.max_error_rate: a fraction from 0 to 1, got %v", path, *r)
	}
}

// checkFixedPrompt checks prompt.text and prompt.file against the phase,
// and reads the file.
func checkFixedPrompt(d *decoder, p *Phase, path string) {
	e, pr := d.errs, &p.Prompt
	if pr.Text != "" && pr.File != "" {
		e.add(pr.Pos, "%s.prompt: give text or file, not both", path)
	}
	if (pr.Text != "" || pr.File != "") && (p.Kind == PhasePrefill || p.Kind == PhasePrefixCache) {
		e.add(pr.Pos, "%s.prompt: a %s phase uses synthetic prompts calibrated to prompt_tokens; only prompt.calibrate applies", path, p.Kind)
	}
	if (pr.Text != "" || pr.File != "") && p.Has("prompt_tokens") {
		e.add(p.At("prompt_tokens"), "%s.prompt_tokens: does not apply with a fixed prompt text or file", path)
	}
	if pr.File != "" {
		p.FilePrompts = readPromptFile(d, pr.At("file"), pr.File, path)
	}
}

func defMax(p *Phase, def int) {
	if p.MaxTokens == 0 {
		p.MaxTokens = def
	}
}

// readPromptFile reads a JSONL file of {"messages": [...]} or {"prompt": "..."}
// lines, relative to the scenario file.
func readPromptFile(d *decoder, at Pos, name, path string) []*RequestSpec {
	e, full := d.errs, resolve(d.file, name)
	f, err := d.openNamed(at, full, "prompt file", MaxDataBytes)
	if err != nil {
		e.add(at, "%s.prompt.file: %v", path, err)
		return nil
	}
	defer f.Close()
	var out []*RequestSpec
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), workload.MaxLineBytes)
	for i := 0; sc.Scan(); i++ {
		if bad := workload.InvalidUTF8(sc.Bytes()); bad != nil {
			// JSON would send U+FFFD in its place: another prompt.
			e.add(at, "%s.prompt.file: %s:%d:%d: byte 0x%02x is not valid UTF-8 (prompts are UTF-8 text)", path, full, i+1, bad.Col, bad.Byte)
			return nil
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r struct {
			Messages []MessageSpec `json:"messages"`
			Prompt   string        `json:"prompt"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			e.add(at, "%s.prompt.file: %s:%d: %v", path, full, i+1, err)
			return nil
		}
		if (len(r.Messages) == 0) == (r.Prompt == "") {
			e.add(at, "%s.prompt.file: %s:%d: each line needs \"messages\" or \"prompt\"", path, full, i+1)
			return nil
		}
		for j, m := range r.Messages {
			if err := workload.CheckRole(m.Role); err != nil {
				e.add(at, "%s.prompt.file: %s:%d: field \"messages[%d].role\": %v", path, full, i+1, j, err)
				return nil
			}
		}
		out = append(out, &RequestSpec{Meta: Meta{Pos: Pos{File: full, Line: i + 1, Col: 1}}, Messages: r.Messages, Prompt: r.Prompt})
	}
	if err := sc.Err(); err != nil {
		e.add(at, "%s.prompt.file: %s: %v", path, full, err)
		return nil
	}
	if len(out) == 0 {
		e.add(at, "%s.prompt.file: %s holds no prompts", path, full)
	}
	return out
}

func checkDist(e *errs, d *Dist, path string) {
	if d == nil {
		return
	}
	switch d.Distribution {
	case "uniform":
		if d.Min < 1 || d.Max < d.Min {
			e.add(d.Pos, "%s: uniform needs 1 <= min <= max, got min %d max %d", path, d.Min, d.Max)
		}
		if d.Has("mean") || d.Has("stddev") {
			e.add(d.Pos, "%s: uniform takes min and max (mean and stddev are for normal)", path)
		}
	case "normal":
		if !d.Has("mean") || d.Mean < 1 || d.StdDev < 0 {
			e.add(d.Pos, "%s: normal needs mean >= 1 and stddev >= 0", path)
		}
		if d.Min == 0 {
			d.Min = 1
		}
		if d.Max == 0 {
			d.Max = int(d.Mean + 4*d.StdDev + 1)
		}
		if d.Max < d.Min {
			e.add(d.Pos, "%s: max %d is below min %d", path, d.Max, d.Min)
		}
	default:
		e.add(d.At("distribution"), "%s.distribution: unknown %q (one of %s)%s", path, d.Distribution, strings.Join(distKinds, ", "), suggest(d.Distribution, distKinds))
	}
}
