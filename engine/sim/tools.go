package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ToolCalls makes the simulator answer requests that offer tools with
// tool calls, whose arguments it streams in pieces (one token each), as
// servers do. A request's tool_choice "required" (or naming a function)
// always gets calls and "none" never does; otherwise Probability decides,
// deterministically from the seed and the prompt.
type ToolCalls struct {
	// Probability that an answer to a request offering tools calls them.
	Probability float64
	// ArgumentTokens is the size of each call's arguments, in tokens
	// (a JSON object {"input": "..."} around them); bounded by max_tokens.
	ArgumentTokens int
	// PerReply is the calls in one answer, streamed one after another,
	// told apart by index.
	PerReply int
}

// DefaultToolCalls are the tool-call defaults: half the answers call one tool
// with 16 tokens of arguments.
func DefaultToolCalls() ToolCalls {
	return ToolCalls{Probability: 0.5, ArgumentTokens: 16, PerReply: 1}
}

// maxToolCallsPerReply bounds PerReply.
const maxToolCallsPerReply = 16

func (t *ToolCalls) validate() error {
	var errs []error
	if !(t.Probability >= 0 && t.Probability <= 1) {
		errs = append(errs, fmt.Errorf("sim: tool call probability must be from 0 to 1, got %v", t.Probability))
	}
	if t.ArgumentTokens < 1 {
		errs = append(errs, fmt.Errorf("sim: tool call argument tokens must be at least 1, got %d", t.ArgumentTokens))
	}
	if t.PerReply < 1 || t.PerReply > maxToolCallsPerReply {
		errs = append(errs, fmt.Errorf("sim: tool calls per reply must be from 1 to %d, got %d", maxToolCallsPerReply, t.PerReply))
	}
	return errors.Join(errs...)
}

// wireTool is an offered tool as requests send it.
type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// plannedCall is one tool call an answer will make: its id, its function,
// and how many of the answer's tokens its arguments take.
type plannedCall struct {
	id, name string
	tokens   int
}

// planToolCalls decides whether g answers with tool calls and which.
func (s *Server) planToolCalls(g *generation, req *genRequest, promptHash uint64) *httpError {
	if g.kind != kindChat || len(req.Tools) == 0 {
		return nil
	}
	names := make([]string, 0, len(req.Tools))
	for i, t := range req.Tools {
		if t.Function.Name == "" {
			return badRequest("tools[%d].function.name is required", i)
		}
		names = append(names, t.Function.Name)
	}
	tc := s.cfg.ToolCalls
	if tc == nil {
		d := DefaultToolCalls()
		tc = &d
	}
	h := mix64(uint64(s.cfg.Seed)^0x2545f4914f6cdd1d, promptHash)
	u := float64(h>>11) / (1 << 53) // in [0, 1)
	call := u < tc.Probability
	var choice any
	_ = json.Unmarshal(req.ToolChoice, &choice)
	switch c := choice.(type) {
	case string:
		switch c {
		case "none":
			call = false
		case "required":
			call = true
		}
	case map[string]any:
		if f, ok := c["function"].(map[string]any); ok {
			if n, ok := f["name"].(string); ok {
				names, call = []string{n}, true
			}
		}
	}
	if !call {
		return nil
	}
	n := min(tc.PerReply, g.target)
	g.target = min(g.target, n*tc.ArgumentTokens)
	g.finish = "tool_calls"
	for k := range n {
		tokens := g.target / n
		if k < g.target%n {
			tokens++
		}
		g.calls = append(g.calls, plannedCall{id: g.id + "-call" + strconv.Itoa(k), name: names[(int(h>>7)+k)%len(names)], tokens: tokens})
	}
	return nil
}

// toolPieces turns an answer's tokens into argument pieces: call k's
// first piece opens its JSON object, its last closes it.
type toolPieces struct {
	calls []plannedCall
	call  int // the call the next token belongs to
	used  int // tokens of that call already sent
}

// next is the tool_calls delta for one token, JSON-encoded.
func (tp *toolPieces) next(word string) []byte {
	c := tp.calls[tp.call]
	piece := ""
	if tp.used == 0 {
		piece = `{"input": "`
	}
	piece += word
	tp.used++
	if tp.used == c.tokens {
		piece += `"}`
	}
	args, _ := json.Marshal(piece)
	var b []byte
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(tp.call), 10)
	if tp.used == 1 {
		b = append(b, `,"id":"`...)
		b = append(b, c.id...)
		b = append(b, `","type":"function","function":{"name":`...)
		name, _ := json.Marshal(c.name)
		b = append(b, name...)
		b = append(b, `,"arguments":`...)
	} else {
		b = append(b, `,"function":{"arguments":`...)
	}
	b = append(b, args...)
	b = append(b, "}}"...)
	if tp.used == c.tokens && tp.call < len(tp.calls)-1 {
		tp.call, tp.used = tp.call+1, 0
	}
	return b
}

// streamToolCalls serves a streamed answer that calls tools: a role
// chunk, one tool_calls delta per token, finish_reason tool_calls, usage
// when asked, [DONE]. Faults do not apply to tool-call answers.
func (s *Server) streamToolCalls(ctx context.Context, w http.ResponseWriter, g *generation, includeUsage bool) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	head := fmt.Sprintf(`data: {"id":"%s","object":"chat.completion.chunk","created":%d,"model":%s,"choices":[`, g.id, g.created, s.modelJSON)
	buf := []byte(head + `{"index":0,"delta":{"role":"assistant","content":null},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	if err := s.writeOut(ctx, w, rc, buf, 0); err != nil {
		return err
	}
	tp := &toolPieces{calls: g.calls}
	err := s.run(ctx, g, true, func(toks []*outTok) error {
		buf = buf[:0]
		for _, t := range toks {
			buf = append(buf, head...)
			buf = append(buf, `{"index":0,"delta":{"tool_calls":[`...)
			buf = append(buf, tp.next(t.text)...)
			buf = append(buf, `]},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
		}
		g.stampSend(len(toks))
		return s.writeOut(ctx, w, rc, buf, 0)
	})
	if err != nil {
		return err
	}
	buf = append(buf[:0], head...)
	buf = append(buf, `{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}`+"\n\n"...)
	if includeUsage {
		if buf, err = appendUsageChunk(buf, head, g); err != nil {
			return err
		}
	}
	buf = append(buf, "data: [DONE]\n\n"...)
	return s.writeOut(ctx, w, rc, buf, 0)
}

// respondToolCalls serves a non-streamed answer that calls tools.
func (s *Server) respondToolCalls(ctx context.Context, w http.ResponseWriter, g *generation) error {
	args := make([]strings.Builder, len(g.calls))
	tp := &toolPieces{calls: g.calls}
	err := s.run(ctx, g, false, func(toks []*outTok) error {
		for _, t := range toks {
			k := tp.call
			var d struct {
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			}
			_ = json.Unmarshal(tp.next(t.text), &d)
			args[k].WriteString(d.Function.Arguments)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, errClosed) {
			writeError(w, http.StatusServiceUnavailable, "server_error", "server is shutting down")
		}
		return err
	}
	g.stampSend(g.target)
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	calls := make([]call, len(g.calls))
	for k, c := range g.calls {
		calls[k] = call{ID: c.id, Type: "function", Function: fn{Name: c.name, Arguments: args[k].String()}}
	}
	type message struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		ToolCalls []call  `json:"tool_calls"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		Logprobs     any     `json:"logprobs"`
		FinishReason string  `json:"finish_reason"`
	}
	writeJSON(w, http.StatusOK, struct {
		ID      string          `json:"id"`
		Object  string          `json:"object"`
		Created int64           `json:"created"`
		Model   json.RawMessage `json:"model"`
		Choices []choice        `json:"choices"`
		Usage   usage           `json:"usage"`
	}{g.id, "chat.completion", g.created, s.modelJSON, []choice{{Message: message{Role: "assistant", ToolCalls: calls}, FinishReason: "tool_calls"}}, g.usage()})
	return nil
}

// toolCallText is what an assistant message's tool calls add to its
// text in the chat template, so a history with calls tokenizes whole.
func toolCallText(calls []wireToolCall) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString("\n")
		b.WriteString(c.Function.Name)
		b.WriteString(" ")
		b.WriteString(c.Function.Arguments)
	}
	return b.String()
}

// wireToolCall is an assistant message's tool call as clients send it back.
type wireToolCall struct {
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}
