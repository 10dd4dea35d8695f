package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxBodyBytes bounds request bodies; long-context prompts stay well under it.
const maxBodyBytes = 32 << 20

// apiError is the OpenAI error object.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// httpError is an error that knows its HTTP status and OpenAI error fields.
type httpError struct {
	status int
	api    apiError
}

func (e *httpError) Error() string { return e.api.Message }

func badRequest(format string, args ...any) *httpError {
	return &httpError{status: http.StatusBadRequest, api: apiError{Message: fmt.Sprintf(format, args...), Type: "invalid_request_error"}}
}

func modelNotFound(model string) *httpError {
	param, code := "model", "model_not_found"
	return &httpError{status: http.StatusNotFound, api: apiError{
		Message: fmt.Sprintf("The model `%s` does not exist.", model),
		Type:    "invalid_request_error", Param: &param, Code: &code,
	}}
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeHTTPError(w, &httpError{status: status, api: apiError{Message: msg, Type: typ}})
}

func writeHTTPError(w http.ResponseWriter, e *httpError) {
	writeJSON(w, e.status, struct {
		Error apiError `json:"error"`
	}{e.api})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only our own types are encoded; a failure is a bug
		http.Error(w, `{"error":{"message":"encode response","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// decodeFor decodes a request body into req and checks the model it names
// (*model, a field of req); on failure it has written the error answer and
// returns false.
func (s *Server) decodeFor(w http.ResponseWriter, r *http.Request, req any, model *string) bool {
	e := decodeBody(w, r, req)
	if e == nil {
		e = s.checkModel(*model)
	}
	if e != nil {
		writeHTTPError(w, e)
		return false
	}
	return true
}

// decodeBody reads a JSON request body into v, mapping failures to 400/413.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) *httpError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return &httpError{status: http.StatusRequestEntityTooLarge, api: apiError{
				Message: fmt.Sprintf("request body over %d bytes", maxBodyBytes), Type: "invalid_request_error"}}
		}
		return badRequest("read request body: %v", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("invalid JSON body: %v", err)
	}
	return nil
}

// checkModel accepts the served model, or an empty name meaning it.
func (s *Server) checkModel(model string) *httpError {
	if model != "" && model != s.cfg.Model {
		return modelNotFound(model)
	}
	return nil
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": Version})
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		Created     int64  `json:"created"`
		OwnedBy     string `json:"owned_by"`
		Root        string `json:"root"`
		MaxModelLen int    `json:"max_model_len"`
	}
	writeJSON(w, http.StatusOK, struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{{
		ID: s.cfg.Model, Object: "model", Created: s.startedAt.Unix(),
		OwnedBy: "tollgate", Root: s.cfg.Model, MaxModelLen: s.cfg.MaxModelLen,
	}}})
}

// textBlock is an OpenAI content part or an Anthropic text block.
type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// contentText flattens a message content (string, null, or an array of
// parts) to its text. Non-text parts (images, audio) contribute nothing.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []textBlock
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or an array of content parts")
	}
	var text []byte
	for _, p := range parts {
		if p.Type == "text" || p.Type == "input_text" || p.Type == "" {
			if len(text) > 0 {
				text = append(text, '\n')
			}
			text = append(text, p.Text...)
		}
	}
	return string(text), nil
}

// wireMessage is a chat message as clients send it (OpenAI or Anthropic).
type wireMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []wireToolCall  `json:"tool_calls"`
}

func parseMessages(system json.RawMessage, in []wireMessage) ([]message, *httpError) {
	msgs := make([]message, 0, len(in)+1)
	if len(system) > 0 && string(system) != "null" {
		text, err := contentText(system)
		if err != nil {
			return nil, badRequest("system: %v", err)
		}
		msgs = append(msgs, message{Role: "system", Text: text})
	}
	for i, m := range in {
		if m.Role == "" {
			return nil, badRequest("messages[%d].role is required", i)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return nil, badRequest("messages[%d]: %v", i, err)
		}
		msgs = append(msgs, message{Role: m.Role, Text: text + toolCallText(m.ToolCalls)})
	}
	if len(msgs) == 0 {
		return nil, badRequest("messages must not be empty")
	}
	return msgs, nil
}

// parsePrompt reads a completions prompt: a string, an array of token ids,
// or a one-element array of either (the simulator serves one prompt per request).
func parsePrompt(raw json.RawMessage) ([]int, *httpError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt is required")
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return appendTokens(nil, text), nil
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err == nil {
		return ids, checkIDs(ids)
	}
	var texts []string
	if err := json.Unmarshal(raw, &texts); err == nil {
		if len(texts) != 1 {
			return nil, badRequest("the simulator serves one prompt per request; got %d", len(texts))
		}
		return appendTokens(nil, texts[0]), nil
	}
	var idLists [][]int
	if err := json.Unmarshal(raw, &idLists); err == nil {
		if len(idLists) != 1 {
			return nil, badRequest("the simulator serves one prompt per request; got %d", len(idLists))
		}
		return idLists[0], checkIDs(idLists[0])
	}
	return nil, badRequest("prompt must be a string, an array of token ids, or a one-element array of either")
}

func checkIDs(ids []int) *httpError {
	for i, id := range ids {
		if id < 0 || id >= vocabSize {
			return badRequest("prompt token %d is %d, outside the vocabulary [0, %d)", i, id, vocabSize)
		}
	}
	return nil
}

// handleCountTokens is Anthropic's POST /v1/messages/count_tokens.
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Messages []wireMessage   `json:"messages"`
	}
	if !s.decodeFor(w, r, &req, &req.Model) {
		return
	}
	msgs, e := parseMessages(req.System, req.Messages)
	if e != nil {
		writeHTTPError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": len(chatTemplate(nil, msgs, true))})
}

// handleTokenize is vLLM's POST /tokenize (also accepting llama.cpp's "content").
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model               string          `json:"model"`
		Prompt              json.RawMessage `json:"prompt"`
		Content             *string         `json:"content"`
		Messages            []wireMessage   `json:"messages"`
		AddGenerationPrompt *bool           `json:"add_generation_prompt"`
	}
	if !s.decodeFor(w, r, &req, &req.Model) {
		return
	}
	var ids []int
	var e *httpError
	switch {
	case req.Messages != nil:
		var msgs []message
		if msgs, e = parseMessages(nil, req.Messages); e == nil {
			ids = chatTemplate(nil, msgs, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt)
		}
	case len(req.Prompt) > 0:
		ids, e = parsePrompt(req.Prompt)
	case req.Content != nil:
		ids = appendTokens(nil, *req.Content)
	default:
		e = badRequest("give one of prompt, messages or content")
	}
	if e != nil {
		writeHTTPError(w, e)
		return
	}
	if ids == nil {
		ids = []int{}
	}
	writeJSON(w, http.StatusOK, struct {
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
	}{len(ids), s.cfg.MaxModelLen, ids})
}

func (s *Server) handleCacheStatus(w http.ResponseWriter, _ *http.Request) {
	st := s.Stats()
	hitRate := 0.0
	if st.CacheQueryTokens > 0 {
		hitRate = float64(st.CacheHitTokens) / float64(st.CacheQueryTokens)
	}
	writeJSON(w, http.StatusOK, struct {
		Enabled        bool    `json:"enabled"`
		BlockTokens    int     `json:"block_tokens"`
		CapacityTokens int     `json:"capacity_tokens"`
		CapacityBlocks int     `json:"capacity_blocks"`
		UsedTokens     int     `json:"used_tokens"`
		Blocks         int     `json:"blocks"`
		EvictedBlocks  int64   `json:"evicted_blocks_total"`
		QueryTokens    int64   `json:"query_tokens_total"`
		HitTokens      int64   `json:"hit_tokens_total"`
		MissTokens     int64   `json:"miss_tokens_total"`
		HitRate        float64 `json:"hit_rate"`
	}{
		Enabled: s.cache != nil, BlockTokens: s.cfg.BlockTokens,
		CapacityTokens: st.CacheCapacityTokens, CapacityBlocks: st.CacheCapacityTokens / s.cfg.BlockTokens,
		UsedTokens: st.CacheUsedTokens, Blocks: st.CacheBlocks, EvictedBlocks: st.CacheEvictedBlocks,
		QueryTokens: st.CacheQueryTokens, HitTokens: st.CacheHitTokens, MissTokens: st.CacheMissTokens,
		HitRate: hitRate,
	})
}

func (s *Server) handleResetCache(w http.ResponseWriter, _ *http.Request) {
	s.ResetPrefixCache()
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Stats())
}
