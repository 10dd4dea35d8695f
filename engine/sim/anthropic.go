package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// The Anthropic Messages API: POST /v1/messages, streamed or not, with the
// same scheduler, prefix cache and latency model as the OpenAI endpoints.
// A streamed answer is message_start, ping, one content block per channel
// (thinking, when Config.ReasoningTokens is set, then text), message_delta
// with the stop reason and usage, message_stop. Answers run to max_tokens
// (stop_reason "max_tokens"): the API has no ignore_eos. Faults apply to the
// OpenAI endpoints only.

// anthropicError writes e in the Messages API's error form.
func writeAnthropicError(w http.ResponseWriter, e *httpError) {
	typ := e.api.Type
	switch e.status {
	case http.StatusNotFound:
		typ = "not_found_error"
	case http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	}
	writeJSON(w, e.status, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": e.api.Message}})
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	g, req, e := s.admit(w, r, kindMessages)
	if e != nil {
		writeAnthropicError(w, e)
		return
	}
	outcome := "aborted"
	defer func() { s.reqLog.add(g.record(outcome)) }()
	w.Header().Set("Request-Id", g.id)
	var err error
	if req.Stream {
		err = s.streamMessages(r.Context(), w, g)
	} else {
		err = s.respondMessages(r.Context(), w, g)
	}
	if err != nil {
		s.aborted.Add(1)
		return
	}
	outcome = g.finish
	s.succeededLength.Add(1)
}

// anthropicUsage is the Messages API usage: input_tokens are the prompt
// tokens neither read from nor written to the cache.
type anthropicUsage struct {
	InputTokens          int `json:"input_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens"`
	OutputTokens         int `json:"output_tokens"`
}

func (g *generation) anthropicUsage(output int) anthropicUsage {
	return anthropicUsage{InputTokens: g.promptTokens - g.cachedTokens, CacheReadInputTokens: g.cachedTokens, OutputTokens: output}
}

const stopMaxTokens = "max_tokens"

func (s *Server) respondMessages(ctx context.Context, w http.ResponseWriter, g *generation) error {
	text, thinking, err := s.collect(ctx, g)
	if err != nil {
		if errors.Is(err, errClosed) {
			writeAnthropicError(w, &httpError{status: http.StatusServiceUnavailable, api: apiError{Type: "overloaded_error", Message: "server is shutting down"}})
		}
		return err
	}
	g.stampSend(g.target)
	content := []map[string]string{}
	if g.reasoning > 0 {
		content = append(content, map[string]string{"type": "thinking", "thinking": thinking.String(), "signature": "sim"})
	}
	if g.target > g.reasoning {
		content = append(content, map[string]string{"type": "text", "text": text.String()})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": g.id, "type": "message", "role": "assistant", "model": s.cfg.Model, "content": content,
		"stop_reason": stopMaxTokens, "stop_sequence": nil, "usage": g.anthropicUsage(g.target),
	})
	return nil
}

// appendEvent appends one SSE event.
func appendEvent(buf []byte, name string, data []byte) []byte {
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}

func (s *Server) streamMessages(ctx context.Context, w http.ResponseWriter, g *generation) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// Headers at once: time to first byte measures the server's
	// responsiveness, time to first token its queue and prefill.
	if err := rc.Flush(); err != nil {
		return fmt.Errorf("flush stream: %w", err)
	}
	buf := make([]byte, 0, 4096)
	block := -1 // the open content block
	openBlock := func(typ string) {
		block++
		field := "text"
		if typ == "thinking" {
			field = "thinking"
		}
		buf = appendEvent(buf, "content_block_start", fmt.Appendf(nil,
			`{"type":"content_block_start","index":%d,"content_block":{"type":"%s","%s":""}}`, block, typ, field))
	}
	closeBlock := func() {
		buf = appendEvent(buf, "content_block_stop", fmt.Appendf(nil, `{"type":"content_block_stop","index":%d}`, block))
	}
	sent := 0
	err := s.run(ctx, g, true, func(toks []*outTok) error {
		if sent == 0 {
			start, err := json.Marshal(map[string]any{"type": "message_start", "message": map[string]any{
				"id": g.id, "type": "message", "role": "assistant", "model": s.cfg.Model, "content": []any{},
				"stop_reason": nil, "stop_sequence": nil, "usage": g.anthropicUsage(1)}})
			if err != nil {
				return fmt.Errorf("encode message_start: %w", err)
			}
			buf = appendEvent(buf, "message_start", start)
			buf = appendEvent(buf, "ping", []byte(`{"type": "ping"}`))
		}
		for _, t := range toks {
			sent++
			switch {
			case sent == 1 && g.reasoning > 0:
				openBlock("thinking")
			case sent == g.reasoning+1:
				if block >= 0 {
					closeBlock()
				}
				openBlock("text")
			}
			delta, field := "text_delta", "text"
			if sent <= g.reasoning {
				delta, field = "thinking_delta", "thinking"
			}
			buf = append(buf, "event: content_block_delta\ndata: "...)
			buf = fmt.Appendf(buf, `{"type":"content_block_delta","index":%d,"delta":{"type":"%s","%s":"`, block, delta, field)
			buf = append(buf, t.text...)
			buf = append(buf, "\"}}\n\n"...)
		}
		g.stampSend(len(toks))
		err := s.writeOut(ctx, w, rc, buf, 0)
		buf = buf[:0]
		return err
	})
	if err != nil {
		return err
	}
	closeBlock()
	buf = appendEvent(buf, "message_delta", fmt.Appendf(nil,
		`{"type":"message_delta","delta":{"stop_reason":"%s","stop_sequence":null},"usage":{"output_tokens":%s}}`,
		stopMaxTokens, strconv.Itoa(g.target)))
	buf = appendEvent(buf, "message_stop", []byte(`{"type":"message_stop"}`))
	return s.writeOut(ctx, w, rc, buf, 0)
}
