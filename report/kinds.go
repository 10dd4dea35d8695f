package report

// Phase kinds, as a report's Phase.Kind carries them, that the engine or a
// writer special-cases; each is spelt once, here. A kind no writer names
// (trace, capacity) spells its name in its own scenarios file instead
// (scenarios.PhaseTrace). Seam runs use KindPrefill and
// KindDecode for their two phases.
const (
	KindWarmup      = "warmup"
	KindPrefill     = "prefill"
	KindDecode      = "decode"
	KindPrefixCache = "prefix_cache"
	KindRequests    = "requests"
	KindLoad        = "load"
)

// Conversation phase kinds: multi-turn sessions and agentic tool-call loops.
const (
	KindSessions = "sessions"
	KindAgent    = "agent"
)

// Prefix-cache variants: the keys of Phase.Variants, in the order they run
// (a fresh prompt, the same prompt again, the same prefix with a new suffix).
const (
	VariantFresh       = "fresh"
	VariantIdentical   = "identical"
	VariantSmallSuffix = "small_suffix"
)

// VariantOrder is the order writers list a prefix_cache phase's variants in;
// a function, not a variable, so no caller can reorder it for everyone.
func VariantOrder() []string {
	return []string{VariantFresh, VariantIdentical, VariantSmallSuffix}
}

// Target kinds, as Run.Target.Kind carries them, that a writer or the
// engine special-cases; a live kind no writer names spells its name in
// scenarios (scenarios.KindAnthropic).
const (
	TargetSeam     = "seam"
	TargetOpenAI   = "openai"
	TargetEmbedded = "embedded"
)

// Run statuses, as Run.Status carries them (the overall report statuses are
// the Status* constants).
const (
	RunOK    = "ok"
	RunError = "error"
)
