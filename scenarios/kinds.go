package scenarios

// KindFields are the phase keys of kinds that declare them in their own
// file, as one embedded struct each of a type from that file (inline, so
// its keys sit at the phase's top level, as Conversation's, or hold a
// block, as TraceFields' trace). Phase embeds it, so a new kind with keys
// of its own adds one line here, beside its row in phaseKindTable.
type KindFields struct {
	// Sessions and agent phases (sessions.go).
	Conversation `yaml:",inline"`
	// Trace phases (trace.go).
	TraceFields `yaml:",inline"`
	// Capacity phases (capacity.go).
	CapacityFields `yaml:",inline"`
}

// KindSpec is what loading a scenario knows of one phase kind: its name,
// keys, defaults and checks. A kind declares it in its own file (as
// TraceKind in trace.go), next to its checks; its fields are unexported so
// only this package builds one and no caller can change a kind's rules.
type KindSpec struct {
	name string
	// keys are the phase keys that mean something on an openai, embedded
	// or anthropic target; any other key written is an error rather than
	// silently ignored.
	keys []string
	// seamKeys are those on a seam target; nil when the kind cannot run
	// on one.
	seamKeys []string
	// dists: prompt_tokens and max_tokens may be distributions.
	dists bool
	// check applies the kind's defaults and checks its values, on a
	// scenario with a live target.
	check func(d *decoder, p *Phase, path string)
	// targets, when set, checks the phase against each live target (what
	// a target can serve of it).
	targets func(e *errs, p *Phase, targets []*Target)
}

// phaseKindTable is every phase kind, in the order messages list them: the
// one registry of phase kinds. engine/live's Kinds is generated from it (go
// generate ./engine): a kind named "prefix_cache" is run by live's
// prefixCacheKind.
var phaseKindTable = []KindSpec{
	{name: PhaseWarmup, keys: warmupKeys, check: onErrs(checkWarmup)},
	{name: PhasePrefill, keys: prefillKeys, seamKeys: prefillSeamKeys, check: onErrs(checkPrefill)},
	{name: PhaseDecode, keys: decodeKeys, seamKeys: decodeSeamKeys, check: onErrs(checkDecode)},
	{name: PhasePrefixCache, keys: prefixCacheKeys, check: onErrs(checkPrefixCache)},
	{name: PhaseRequests, keys: requestsKeys, check: onErrs(checkRequestsPhase)},
	{name: PhaseLoad, keys: loadKeys, dists: true, check: onErrs(checkLoad)},
	TraceKind(),
	{name: PhaseSessions, keys: sessionsKeys, check: onErrs(checkConversation), targets: checkConversationContext},
	{name: PhaseAgent, keys: agentKeys, check: onErrs(checkConversation), targets: checkConversationContext},
	CapacityKind(),
}

// Name is the kind's name, as a phase's kind: key writes it.
func (k KindSpec) Name() string { return k.name }

// PhaseKinds are the phase kinds' names, in the table's order.
func PhaseKinds() []string { return append([]string(nil), phaseKinds...) }

// phaseKinds are the kinds' names, in the table's order.
var phaseKinds = func() []string {
	out := make([]string, len(phaseKindTable))
	for i, k := range phaseKindTable {
		out[i] = k.name
	}
	return out
}()

// kindOf is the table's row for a kind; false for an unknown kind.
func kindOf(name string) (KindSpec, bool) {
	for _, k := range phaseKindTable {
		if k.name == name {
			return k, true
		}
	}
	return KindSpec{}, false
}

// onErrs adapts a check that needs only the error list.
func onErrs(f func(e *errs, p *Phase, path string)) func(d *decoder, p *Phase, path string) {
	return func(d *decoder, p *Phase, path string) { f(d.errs, p, path) }
}
