package report

// Phase kinds, as a report's Phase.Kind carries them. The engine writes them
// and every writer reads them through these names, so a kind is spelt once.
// Seam runs use KindPrefill and KindDecode for their two phases.
const (
	KindWarmup      = "warmup"
	KindPrefill     = "prefill"
	KindDecode      = "decode"
	KindPrefixCache = "prefix_cache"
	KindRequests    = "requests"
	KindLoad        = "load"
	KindTrace       = "trace"
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

// Target kinds, as Run.Target.Kind carries them.
const (
	TargetSeam     = "seam"
	TargetOpenAI   = "openai"
	TargetEmbedded = "embedded"
	// TargetAnthropic is a Messages API target (also on the simulator).
	TargetAnthropic = "anthropic"
)

// Run statuses, as Run.Status carries them (the overall report statuses are
// the Status* constants).
const (
	RunOK    = "ok"
	RunError = "error"
)
