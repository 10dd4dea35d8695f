package live

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
)

// notes is what a conversation phase counts besides its requests: the
// anomalies of the tool calls it received and the sessions (tasks) it
// ended at a byte bound, by kind (report.Note*). The counts are the
// report's (AgentStats, SessionStats); the first few of each kind are
// kept, each told of its request, and each kind is one warning. Under
// conversation.mu; a shape's placeholders note nothing.
type notes struct {
	off   bool
	count map[string]int
	kept  []report.ConversationNote
	order []string // kinds, first seen first
}

// add counts one note of kind about request.
func (n *notes) add(kind, request, format string, a ...any) {
	if n.off {
		return
	}
	if n.count == nil {
		n.count = map[string]int{}
	}
	if n.count[kind] == 0 {
		n.order = append(n.order, kind)
	}
	n.count[kind]++
	if n.count[kind] <= fold.MaxErrorExamples {
		n.kept = append(n.kept, report.ConversationNote{Kind: kind, Request: request, Message: fmt.Sprintf(format, a...)})
	}
}

// ended counts the sessions (tasks) ended at a byte bound.
func (n *notes) ended() int {
	return n.count[report.NoteMaxReplyBytes] + n.count[report.NoteMaxHistoryBytes]
}

// noteWhat says what n notes of kind are, for their warning; unit is
// "session" or "task", stats the report key of the phase's figures.
func noteWhat(kind string, n int, unit, stats string) string {
	calls, units := "tool calls", unit+"s"
	if n == 1 {
		calls, units = "tool call", unit
	}
	switch kind {
	case report.NoteInvalidArguments:
		return calls + " had arguments that are not JSON or do not match their tool's parameters (agent.invalid_arguments); answered all the same"
	case report.NoteUnknownTool:
		return calls + " named a tool the request did not offer (agent.unknown_tool); answered with a synthetic result, as any call"
	case report.NoteDuplicateID:
		return calls + " repeated the id of an earlier call of the same reply (agent.duplicate_id); answered in order, each tool message under that id"
	case report.NoteMissingID:
		return calls + " had no id (agent.missing_id): no tool message can name such a call, so the reply was not answered and its task ended unanswerable"
	case report.NoteMaxReplyBytes:
		return units + " ended at max_reply_bytes: a reply too long to keep in the history was not kept (" + stats + ".history_limit)"
	case report.NoteMaxHistoryBytes:
		return units + " ended at max_history_bytes: the next request's history would have passed it, so it was not sent (" + stats + ".history_limit)"
	}
	return kind
}

// warnings are one line per kind: how many, what was done, the first.
func (n *notes) warnings(phase, unit, stats string) []string {
	var out []string
	for _, kind := range n.order {
		first := report.ConversationNote{}
		for _, k := range n.kept {
			if k.Kind == kind {
				first = k
				break
			}
		}
		out = append(out, fmt.Sprintf("%s: %d %s; first: %s: %s", phase, n.count[kind], noteWhat(kind, n.count[kind], unit, stats), first.Request, first.Message))
	}
	return out
}

// messageBytes is what a message adds to a history: its text, its tool
// calls' ids, names and arguments, and the id of the call it answers.
func messageBytes(m measure.Message) int {
	return measure.ReplyBytes(m.Content, m.ToolCalls) + len(m.ToolCallID)
}
