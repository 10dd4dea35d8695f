package scenarios

import (
	"strings"
)

// KindAnthropic speaks the Messages API; like every live kind, what the
// loader checks of it is its LiveKinds entry. No writer special-cases it,
// so it is spelt here rather than in report/kinds.go.
const KindAnthropic = "anthropic"

// LiveKind is a target kind the live executor runs: its keys are
// OpenAITarget's, and what the loader checks of it is declared here, not
// in if-statements on its name. This list is the one registry of live
// kinds: engine.Drivers is generated from it (go generate ./engine), each
// kind run by the protocol package its Protocol names.
type LiveKind struct {
	Kind string
	// Protocol is the package under engine/ that speaks its wire protocol
	// and exports Protocol() (engine/openai, engine/anthropic).
	Protocol string
	// Speaks names its wire protocol in messages ("the Messages API");
	// "" for the OpenAI format.
	Speaks string
	// Endpoints it has; nil: every endpoint (chat, completions).
	Endpoints []string
	// NoReplies: its client keeps no streamed reply, which the next turn
	// of a conversation (sessions, agent) carries, so those phases refuse it.
	NoReplies bool
}

// LiveKinds lists the live target kinds, in the order messages name them.
// A new wire protocol is its package under engine/ and one entry here
// (then go generate ./engine writes its driver).
func LiveKinds() []LiveKind {
	return []LiveKind{
		{Kind: KindOpenAI, Protocol: "openai"},
		{Kind: KindEmbedded, Protocol: "openai"},
		{Kind: KindAnthropic, Protocol: "anthropic", Speaks: "the Messages API", Endpoints: []string{"chat"}, NoReplies: true},
	}
}

// liveKind is kind's entry in LiveKinds.
func liveKind(kind string) (LiveKind, bool) {
	for _, k := range LiveKinds() {
		if k.Kind == kind {
			return k, true
		}
	}
	return LiveKind{}, false
}

// targetKinds are every target kind's name, seam first.
func targetKinds() []string {
	out := []string{KindSeam}
	for _, k := range LiveKinds() {
		out = append(out, k.Kind)
	}
	return out
}

// conversationKinds names, for a message, the kinds a conversation phase
// runs on ("openai and embedded").
func conversationKinds() string {
	var names []string
	for _, k := range LiveKinds() {
		if !k.NoReplies {
			names = append(names, k.Kind)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
