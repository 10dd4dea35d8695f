package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tollgate-dev/tollgate/internal/safefile"
)

// Conversation holds the keys of the conversation phase kinds: sessions
// (multi-turn chats, each turn sending the whole history back) and agent
// (tasks whose answers call tools until the model answers or max_steps).
type Conversation struct {
	// Sessions is how many sessions (agent: tasks) the phase runs.
	Sessions int `yaml:"sessions" json:"sessions,omitempty"`
	// Turns is the user messages per session.
	Turns int `yaml:"turns" json:"turns,omitempty"`
	// ThinkTimeMS is the user's pause between a reply and the next turn, in ms.
	ThinkTimeMS *Dist `yaml:"think_time_ms" json:"think_time_ms,omitempty"`
	// Tools are the tools an agent task offers the model.
	Tools []*ToolSpec `yaml:"tools" json:"tools,omitempty"`
	// MaxSteps bounds the requests of one agent task.
	MaxSteps int `yaml:"max_steps" json:"max_steps,omitempty"`
	// ToolLatencyMS is how long a simulated tool takes to answer, in ms.
	ToolLatencyMS *Dist `yaml:"tool_latency_ms" json:"tool_latency_ms,omitempty"`
	// ToolResultTokens is the size of each tool result sent back.
	ToolResultTokens int `yaml:"tool_result_tokens" json:"tool_result_tokens,omitempty"`
	// MaxHistoryBytes bounds the text one session's (task's) history may
	// hold: a turn (step) that would send more is not sent, and the
	// session ends at the bound. Its default, set at load, follows the
	// phase (DefaultMaxHistoryBytes).
	MaxHistoryBytes Size `yaml:"max_history_bytes" json:"max_history_bytes,omitempty"`
	// MaxReplyBytes bounds one reply kept in the history (its text and
	// its tool calls): a longer one is not kept, and its session ends.
	// Its default, set at load, follows max_tokens (DefaultMaxReplyBytes).
	MaxReplyBytes Size `yaml:"max_reply_bytes" json:"max_reply_bytes,omitempty"`
}

// ToolSpec is one tool: a function name and the JSON Schema of its arguments.
type ToolSpec struct {
	Meta        `json:"-"`
	Name        string         `yaml:"name" json:"name"`
	Description string         `yaml:"description" json:"description,omitempty"`
	Parameters  map[string]any `yaml:"parameters" json:"parameters,omitempty"`
	// Definition is the tool as sent in a request's tools, set at load.
	Definition json.RawMessage `yaml:"-" json:"-"`
	// Schema is Parameters compiled, to check the arguments of each call.
	Schema *jsonschema.Schema `yaml:"-" json:"-"`
}

var (
	sessionsKeys = []string{"kind", "description", "sessions", "turns", "concurrency", "rate", "arrival", "max_dispatch_lag", "think_time_ms",
		"prompt_tokens", "max_tokens", "max_history_bytes", "max_reply_bytes", "seed", "max_error_rate"}
	agentKeys = []string{"kind", "description", "sessions", "concurrency", "rate", "arrival", "max_dispatch_lag", "tools", "max_steps",
		"tool_latency_ms", "tool_result_tokens", "prompt_tokens", "max_tokens", "max_history_bytes", "max_reply_bytes", "seed", "max_error_rate"}
	toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// MaxConversationTurns and MaxAgentSteps bound what one session or task
// may send, so a history cannot grow without bound.
const (
	MaxConversationTurns = 1000
	MaxAgentSteps        = 100
)

// Bounds on the bytes a conversation keeps. A session's history is sent
// whole every turn, so it is held in memory several times over while a
// turn is in flight (the messages, the encoded request body, the copy
// kept for a retry): its bytes are bounded, as is one reply kept in it
// and the size of a tool result.
const (
	// MaxSessionHistoryBytes is the most max_history_bytes may be.
	MaxSessionHistoryBytes = 256 << 20
	// MaxKeptReplyBytes is the most max_reply_bytes may be: what the
	// OpenAI transcript keeps of any answer (engine/openai.MaxReplyBytes;
	// a test holds the two together).
	MaxKeptReplyBytes = 4 << 20
	// MaxToolResultTokens bounds tool_result_tokens.
	MaxToolResultTokens = 1_000_000
	// bytesPerToken is the bytes a token may take in the defaults below:
	// text averages about 4 bytes a token, so 64 is room for any
	// tokenizer and script, and a server sending far more per token than
	// it was asked for (a megabyte for 8 tokens) is caught.
	bytesPerToken = 64
	// minDefaultHistoryBytes and minDefaultReplyBytes are the defaults'
	// floors, for phases whose token counts are small.
	minDefaultHistoryBytes = 1 << 20
	minDefaultReplyBytes   = 64 << 10
)

// DefaultMaxHistoryBytes is max_history_bytes when the phase does not set
// it: bytesPerToken × the context its last request asks for
// (ConversationContextTokens), at least 1 MiB and at most
// MaxSessionHistoryBytes.
func DefaultMaxHistoryBytes(p *Phase) Size {
	return clampBytes(float64(ConversationContextTokens(p))*bytesPerToken, minDefaultHistoryBytes, MaxSessionHistoryBytes)
}

// DefaultMaxReplyBytes is max_reply_bytes when the phase does not set it:
// bytesPerToken × max_tokens, at least 64 KiB and at most
// MaxKeptReplyBytes.
func DefaultMaxReplyBytes(p *Phase) Size {
	return clampBytes(float64(p.MaxTokens)*bytesPerToken, minDefaultReplyBytes, MaxKeptReplyBytes)
}

// clampBytes is v within [lo, hi], in float64 so that no token count
// overflows on the way.
func clampBytes(v float64, lo, hi Size) Size {
	return Size(min(max(v, float64(lo)), float64(hi)))
}

// checkConversationBytes defaults and checks max_history_bytes and
// max_reply_bytes, once the kind's own defaults (turns, max_steps,
// max_tokens) are in.
func checkConversationBytes(e *errs, p *Phase, path string) {
	c := &p.Conversation
	for _, b := range []struct {
		key   string
		v     *Size
		def   Size
		bound Size
	}{
		{"max_history_bytes", &c.MaxHistoryBytes, DefaultMaxHistoryBytes(p), MaxSessionHistoryBytes},
		{"max_reply_bytes", &c.MaxReplyBytes, DefaultMaxReplyBytes(p), MaxKeptReplyBytes},
	} {
		if !p.Has(b.key) {
			*b.v = b.def
			continue
		}
		if *b.v < 1 || *b.v > b.bound {
			e.add(p.At(b.key), "%s.%s: from 1 byte to %s (%d bytes), got %d", path, b.key, safefile.Size(int64(b.bound)), int64(b.bound), int64(*b.v))
		}
	}
}

// checkConversation applies the defaults of sessions and agent phases and
// checks their values.
func checkConversation(e *errs, p *Phase, path string) {
	checkConversationLoad(e, p, path)
	p.Burstiness = 1
	if len(p.PromptTokens) == 0 {
		p.PromptTokens = IntList{64}
	}
	if len(p.PromptTokens) > 1 {
		e.add(p.At("prompt_tokens"), "%s.prompt_tokens: a %s phase takes one size (each user message), got %d", path, p.Kind, len(p.PromptTokens))
	}
	if p.Kind == PhaseSessions {
		checkSessions(e, p, path)
	} else {
		checkAgent(e, p, path)
	}
	checkConversationBytes(e, p, path)
}

// checkConversationLoad defaults and checks how many sessions run and how
// they start: closed loop (concurrency) or open loop (rate, arrival).
func checkConversationLoad(e *errs, p *Phase, path string) {
	c := &p.Conversation
	if !p.Has("sessions") {
		c.Sessions = 8
	}
	if c.Sessions < 1 {
		e.add(p.At("sessions"), "%s.sessions: must be at least 1, got %d", path, c.Sessions)
	}
	if p.Has("concurrency") && p.Has("rate") {
		e.add(p.At("rate"), "%s: give concurrency (sessions at once, closed loop) or rate (session arrivals per second, open loop), not both", path)
	}
	if !p.Has("concurrency") && !p.Has("rate") {
		p.Concurrency = 1
	}
	if p.Has("concurrency") && p.Concurrency < 1 {
		e.add(p.At("concurrency"), "%s.concurrency: must be at least 1, got %d", path, p.Concurrency)
	}
	if p.Has("rate") && !(p.Rate > 0) {
		e.add(p.At("rate"), "%s.rate: must be a positive number of sessions per second, got %v", path, p.Rate)
	}
	if p.Arrival == "" {
		p.Arrival = "poisson"
	} else if !p.Has("rate") {
		e.add(p.At("arrival"), "%s.arrival: applies to open-loop sessions (rate), not to concurrency", path)
	}
	if !oneOf(p.Arrival, arrivals) {
		e.add(p.At("arrival"), "%s.arrival: unknown %q (one of %s)%s", path, p.Arrival, strings.Join(arrivals, ", "), suggest(p.Arrival, arrivals))
	}
}

// checkSessions defaults and checks the keys of a sessions phase.
func checkSessions(e *errs, p *Phase, path string) {
	c := &p.Conversation
	defMax(p, 64)
	if !p.Has("turns") {
		c.Turns = 4
	}
	if c.Turns < 1 || c.Turns > MaxConversationTurns {
		e.add(p.At("turns"), "%s.turns: from 1 to %d, got %d", path, MaxConversationTurns, c.Turns)
	}
	checkDist(e, c.ThinkTimeMS, path+".think_time_ms")
}

// checkAgent defaults and checks the keys of an agent phase, and compiles
// its tools.
func checkAgent(e *errs, p *Phase, path string) {
	c := &p.Conversation
	defMax(p, 64)
	if !p.Has("max_steps") {
		c.MaxSteps = 8
	}
	if c.MaxSteps < 1 || c.MaxSteps > MaxAgentSteps {
		e.add(p.At("max_steps"), "%s.max_steps: from 1 to %d, got %d", path, MaxAgentSteps, c.MaxSteps)
	}
	if !p.Has("tool_result_tokens") {
		c.ToolResultTokens = 32
	}
	if c.ToolResultTokens < 1 || c.ToolResultTokens > MaxToolResultTokens {
		e.add(p.At("tool_result_tokens"), "%s.tool_result_tokens: from 1 to %d, got %d", path, MaxToolResultTokens, c.ToolResultTokens)
	}
	checkDist(e, c.ToolLatencyMS, path+".tool_latency_ms")
	if len(c.Tools) == 0 {
		e.add(p.At("tools"), "%s.tools: an agent phase needs at least one tool, e.g. tools: [{name: search, parameters: {type: object}}]", path)
	}
	seen := map[string]bool{}
	for i, t := range c.Tools {
		checkTool(e, p, path, i, t, seen)
	}
}

// checkTool checks one agent tool, named once in seen, and builds its
// schema and the definition sent to the server.
func checkTool(e *errs, p *Phase, path string, i int, t *ToolSpec, seen map[string]bool) {
	if t == nil {
		e.add(p.ItemAt("tools", i), "%s.tools[%d]: expected a mapping {name, parameters}", path, i)
		return
	}
	tp := fmt.Sprintf("%s.tools[%d]", path, i)
	switch {
	case !toolName.MatchString(t.Name):
		e.add(t.At("name"), "%s.name: %q is not a function name (1 to 64 of A-Z a-z 0-9 _ -)", tp, t.Name)
	case seen[t.Name]:
		e.add(t.At("name"), "%s.name: tool %q is named twice", tp, t.Name)
	}
	seen[t.Name] = true
	if t.Parameters == nil {
		t.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	params, err := json.Marshal(t.Parameters)
	if err != nil {
		e.add(t.At("parameters"), "%s.parameters: %v", tp, err)
		return
	}
	if t.Schema, err = compileToolSchema(params); err != nil {
		e.add(t.At("parameters"), "%s.parameters: not a valid JSON Schema: %v", tp, err)
		return
	}
	fn := map[string]any{"name": t.Name, "parameters": json.RawMessage(params)}
	if t.Description != "" {
		fn["description"] = t.Description
	}
	t.Definition, _ = json.Marshal(map[string]any{"type": "function", "function": fn})
}

// compileToolSchema compiles a tool's parameters as a JSON Schema (draft
// 2020-12 unless it names another), which checks it against its meta-schema.
func compileToolSchema(params []byte) (*jsonschema.Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "tollgate:tool-parameters.json"
	if err := c.AddResource(url, v); err != nil {
		return nil, err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, errors.New(schemaLeaves(err.Error()))
	}
	return sch, nil
}

// schemaLeaves shortens the library's nested report to its deepest lines
// ("at '/type': value must be one of ..."), which say what to fix.
func schemaLeaves(msg string) string {
	lines := strings.Split(msg, "\n")
	deepest, out := -1, []string{}
	for _, l := range lines[1:] {
		t := strings.TrimLeft(l, " ")
		if !strings.HasPrefix(t, "- ") {
			continue
		}
		switch d := len(l) - len(t); {
		case d > deepest:
			deepest, out = d, []string{strings.TrimPrefix(t, "- ")}
		case d == deepest:
			out = append(out, strings.TrimPrefix(t, "- "))
		}
	}
	if len(out) == 0 {
		return strings.ReplaceAll(lines[0], "tollgate:tool-parameters.json", "")
	}
	return strings.Join(out, "; ")
}

// simMaxModelLen is the embedded simulator's context window when its
// sim.max_model_len is not set (engine/sim's DefaultConfig; a test holds
// the two together).
const simMaxModelLen = 32768

// templateTokens is about what a chat template adds per message (start,
// role, end markers).
const templateTokens = 4

// ConversationContextTokens is about the largest context a sessions or
// agent phase asks for: its last request's prompt plus max_tokens.
func ConversationContextTokens(p *Phase) int {
	if len(p.PromptTokens) == 0 {
		return 0
	}
	user := p.PromptTokens[0] + templateTokens
	reply := p.MaxTokens + templateTokens
	switch p.Kind {
	case PhaseSessions:
		return p.Turns*user + (p.Turns-1)*reply + p.MaxTokens
	case PhaseAgent:
		step := reply + p.ToolResultTokens + templateTokens
		return user + (p.MaxSteps-1)*step + p.MaxTokens
	}
	return 0
}

// checkConversationContext refuses, at load, a session whose last turn
// (or a task whose last step) would not fit the embedded simulator's
// context window: the server would refuse it after minutes of traffic. A
// live server's window is unknown until it answers.
func checkConversationContext(e *errs, p *Phase, targets []*Target) {
	need := ConversationContextTokens(p)
	for _, t := range targets {
		if k, _ := liveKind(t.Kind); k.NoReplies {
			// The next turn carries the reply, which this kind's client
			// does not keep.
			e.add(p.At("kind"), "phases.%s: a %s phase runs on %s targets; target %q speaks %s", p.Name, p.Kind, conversationKinds(), t.Name, k.Speaks)
			continue
		}
		if p.Kind == PhaseAgent && t.OpenAI != nil && t.OpenAI.Endpoint == "completions" {
			e.add(p.At("kind"), "phases.%s: an agent phase offers tools, which need endpoint: chat (target %q uses completions)", p.Name, t.Name)
		}
		if t.OpenAI == nil || !t.Embedded() {
			continue
		}
		window := simMaxModelLen
		if t.OpenAI.Sim != nil && t.OpenAI.Sim.MaxModelLen > 0 {
			window = t.OpenAI.Sim.MaxModelLen
		}
		if need <= window {
			continue
		}
		key, what := "turns", fmt.Sprintf("turn %d", p.Turns)
		if p.Kind == PhaseAgent {
			key, what = "max_steps", fmt.Sprintf("step %d", p.MaxSteps)
		}
		e.add(p.At(key), "phases.%s.%s: %s needs about %d tokens of context (history plus max_tokens), over target %q's max_model_len %d; lower %s, prompt_tokens or max_tokens",
			p.Name, key, what, need, t.Name, window, key)
	}
}

// SimToolCalls is the embedded simulator's tool-call behaviour: the chance
// an answer to a request offering tools calls them, the size of each
// call's arguments, and the calls per answer. Unset keys keep the
// simulator's defaults (0.5, 16, 1).
type SimToolCalls struct {
	Meta           `json:"-"`
	Probability    *float64 `yaml:"probability" json:"probability,omitempty"`
	ArgumentTokens int      `yaml:"argument_tokens" json:"argument_tokens,omitempty"`
	PerReply       int      `yaml:"per_reply" json:"per_reply,omitempty"`
}
