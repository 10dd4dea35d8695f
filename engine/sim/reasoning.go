package sim

// A reasoning model's answer streams on two channels: the first
// Config.ReasoningTokens tokens on the reasoning channel, then the answer.
// Every token costs the same decode step; only the field that carries it
// differs. The request's thinking switches (thinking, chat_template_kwargs)
// are not honoured: reasoning is the simulated model's behaviour.

// reasoningOpen opens a chat chunk carrying a reasoning token (vLLM's and
// DeepSeek's field name).
const reasoningOpen = `{"index":0,"delta":{"reasoning_content":"`

// reasoningOf is how many of g's tokens are reasoning: none for plain
// completions (no channels), else ReasoningTokens, at most the answer.
func (s *Server) reasoningOf(g *generation) int {
	if g.kind == kindCompletion {
		return 0
	}
	return min(s.cfg.ReasoningTokens, g.target)
}

// channelOpen is the chunk opening for the sent-th token (1-based).
func (g *generation) channelOpen(sent int, answer string) string {
	if sent <= g.reasoning {
		return reasoningOpen
	}
	return answer
}

// completionDetails is usage.completion_tokens_details, sent by a
// reasoning model only (as OpenAI's reasoning models do).
type completionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

func (g *generation) completionDetails() *completionDetails {
	if g.reasoning == 0 {
		return nil
	}
	return &completionDetails{ReasoningTokens: g.reasoning}
}
