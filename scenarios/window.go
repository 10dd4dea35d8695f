package scenarios

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/workload"
)

// The context window: a request whose prompt and max_tokens do not fit
// the model's context is refused by the server, after whatever ran before
// it. The embedded simulator's window is known at load (sim.max_model_len,
// or its default), so such a request is an error there, at the key that
// sized it. A live server's window is unknown until it answers.

// Chat template tokens, as the embedded simulator's template counts them
// (engine/sim chatTemplate): a start and an end marker around each
// message's role and content, and a start marker and the role "assistant"
// to open the reply.
const (
	templateMessageTokens = 2
	templateReplyTokens   = 4
)

// simWindow is the context window of target t when it is the embedded
// simulator; false for any other target.
func simWindow(t *Target) (int, bool) {
	if !t.Embedded() || t.OpenAI == nil || t.OpenAI.Sim == nil {
		return 0, false
	}
	if w := t.OpenAI.Sim.MaxModelLen; w > 0 {
		return w, true
	}
	return simMaxModelLen, true
}

// SmallSuffixTokens is the most tokens the prefix-cache phase's suffix
// of suffix_tokens takes (engine/live sizes it, and a test there holds it
// to this): suffix_tokens, or the few tokens of the tag that makes each
// suffix unique when suffix_tokens is fewer.
func SmallSuffixTokens(suffix int) int { return max(suffix, suffixTagTokens) }

// suffixTagTokens is the size of a synthetic prompt's tag, 13 base-36
// characters at most: 4 tokens.
const suffixTagTokens = 4

// promptTokens is about what a prompt costs on target t's endpoint: the
// text's tokens (workload.EstimateTokens counts them as the simulator's
// tokenizer does), with the chat template's on the chat endpoint.
func promptTokens(t *Target, text int, messages []MessageSpec) int {
	if t.OpenAI.Endpoint == "completions" {
		for _, m := range messages {
			text += workload.EstimateTokens(m.Content)
		}
		return text
	}
	if messages == nil {
		return templateMessageTokens + workload.EstimateTokens("user") + text + templateReplyTokens
	}
	n := templateReplyTokens
	for _, m := range messages {
		n += templateMessageTokens + workload.EstimateTokens(m.Role) + workload.EstimateTokens(m.Content)
	}
	return n
}

// contextNeed is the largest request phase p plans, in prompt and
// max_tokens, with the key that sized it; ok is false when p plans no
// request this check knows the size of (a dataset, a trace and a
// conversation are checked by their own).
type contextNeed struct {
	prompt, maxTokens int
	at                Pos
	what              string // the key or item, for the message
}

// syntheticKinds are the phase kinds whose requests are one synthetic
// prompt of prompt_tokens (a conversation's grow: checkConversationContext).
var syntheticKinds = []string{PhaseWarmup, PhasePrefill, PhaseDecode, PhasePrefixCache, PhaseLoad, PhaseCapacity}

// syntheticNeed is the largest synthetic request of p: its largest prompt
// size (the prefix-cache phase's small_suffix request adds the suffix).
func syntheticNeed(p *Phase, path string) (contextNeed, bool) {
	size, at, what := 0, p.At("prompt_tokens"), path+".prompt_tokens"
	switch {
	case p.PromptDist != nil:
		size = p.PromptDist.Max
	default:
		for i, n := range p.PromptTokens {
			if n > size {
				size, at = n, p.ItemAt("prompt_tokens", i)
				if len(p.PromptTokens) > 1 {
					what = fmt.Sprintf("%s.prompt_tokens[%d]", path, i)
				}
			}
		}
	}
	if size == 0 {
		return contextNeed{}, false
	}
	if p.Kind == PhasePrefixCache {
		size += SmallSuffixTokens(p.SuffixTokens)
	}
	if !p.Has("prompt_tokens") && p.Has("max_tokens") {
		at, what = p.At("max_tokens"), path+".max_tokens"
	}
	maxTokens := p.MaxTokens
	if p.MaxTokensDist != nil {
		maxTokens = p.MaxTokensDist.Max
	}
	return contextNeed{prompt: size, maxTokens: maxTokens, at: at, what: what}, true
}

// checkContext holds the largest request of phase p against the context
// window of each embedded target: its synthetic prompts, its fixed
// prompts (prompt.text, prompt.file, a requests list), the longest
// dataset prompt and the largest trace request.
func checkContext(e *errs, p *Phase, targets []*Target) {
	path := "phases." + p.Name
	for _, t := range targets {
		window, ok := simWindow(t)
		if !ok {
			continue
		}
		over := func(n contextNeed, tokens int) bool {
			if tokens+n.maxTokens <= window {
				return false
			}
			e.add(n.at, "%s: a request of about %d prompt tokens (with the chat template's, on that endpoint) and max_tokens %d needs %d tokens of context, over the window of %d of target %q (sim.max_model_len), which would refuse it: lower the prompt or max_tokens, or raise sim.max_model_len",
				n.what, tokens, n.maxTokens, tokens+n.maxTokens, window, t.Name)
			return true
		}
		checkFixedContext(p, path, t, over)
		if oneOf(p.Kind, syntheticKinds) && p.Prompt.Text == "" && p.FilePrompts == nil && p.Dataset == nil {
			if n, ok := syntheticNeed(p, path); ok {
				over(n, promptTokens(t, n.prompt, nil))
			}
		}
		if d := p.Dataset; d != nil && d.Longest > window {
			e.add(p.Prompt.At("dataset"), "%s.prompt.dataset: %s:%d: about %d prompt + output tokens, over the context window of %d of target %q (filter with prompt.max_prompt_tokens)",
				path, d.Path, d.LongestLine, d.Longest, window, t.Name)
		}
		if ti := p.TraceInfo; ti != nil {
			c, line := ti.MaxContext, ti.MaxContextLine
			if p.MaxTokens > 0 {
				c = ti.MaxInputTokens + p.MaxTokens
			}
			if c > window {
				e.add(p.Trace.At("file"), "%s.trace.file: %s:%d: %d prompt + output tokens, over the context window of %d of target %q (narrow the window with trace.from and trace.to)",
					path, ti.Path, line, c, window, t.Name)
			}
		}
	}
}

// checkFixedContext holds the fixed prompts of p against target t (over
// says so, and whether it did): prompt.text, the lines of prompt.file and
// a requests phase's own list; the first over the window is named.
func checkFixedContext(p *Phase, path string, t *Target, over func(contextNeed, int) bool) {
	if p.Prompt.Text != "" {
		n := contextNeed{maxTokens: p.MaxTokens, at: p.Prompt.At("text"), what: path + ".prompt.text"}
		if over(n, promptTokens(t, workload.EstimateTokens(p.Prompt.Text), nil)) {
			return
		}
	}
	specs, item := p.FilePrompts, func(i int) (Pos, string) {
		return p.Prompt.At("file"), fmt.Sprintf("%s.prompt.file: %s:%d", path, p.FilePrompts[i].Pos.File, p.FilePrompts[i].Pos.Line)
	}
	if p.Kind == PhaseRequests && p.Dataset == nil {
		specs, item = p.Requests.List, func(i int) (Pos, string) {
			return p.Requests.List[i].Pos, fmt.Sprintf("%s.requests[%d]", path, i)
		}
	}
	for i, s := range specs {
		n := contextNeed{maxTokens: p.MaxTokens}
		if s.MaxTokens > 0 {
			n.maxTokens = s.MaxTokens
		}
		n.at, n.what = item(i)
		text := 0
		if s.Messages == nil {
			text = workload.EstimateTokens(s.Prompt)
		}
		if over(n, promptTokens(t, text, s.Messages)) {
			return
		}
	}
}
