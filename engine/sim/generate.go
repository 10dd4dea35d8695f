package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type apiKind int

const (
	kindChat apiKind = iota
	kindCompletion
	kindMessages // Anthropic's /v1/messages (anthropic.go)
)

// genRequest holds the fields of chat and completions requests the
// simulator honours; sampling parameters are accepted and ignored.
type genRequest struct {
	Model         string          `json:"model"`
	Messages      []wireMessage   `json:"messages"`
	System        json.RawMessage `json:"system"` // Anthropic
	Prompt        json.RawMessage `json:"prompt"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	MinTokens           int  `json:"min_tokens"`
	IgnoreEOS           bool `json:"ignore_eos"`
	N                   *int `json:"n"`
	// RequestID names the request (vLLM's field); the X-Request-Id header
	// takes precedence. The response id is the endpoint's prefix + it.
	RequestID string `json:"request_id"`
	// Tools and ToolChoice: see ToolCalls (tools.go).
	Tools      []wireTool      `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// generation is one admitted request on its way through the scheduler.
type generation struct {
	kind         apiKind
	id           string
	created      int64
	prompt       []int // prompt token ids; output ids are appended as produced
	promptTokens int
	cachedTokens int
	target       int    // completion tokens to produce
	finish       string // finish_reason once target is reached
	text         textGen
	arrived      time.Time
	stream       bool
	// reasoning: the first reasoning tokens go on the reasoning channel.
	reasoning int

	// For the request log: filled as the request goes.
	slotWait  time.Duration
	injected  time.Duration
	firstSend time.Time // just before the write of the first token's chunk
	lastSend  time.Time // just before the write of the last token's chunk
	sent      int       // completion tokens written

	// calls are the tool calls the answer makes (none: a text answer).
	calls []plannedCall
}

// stampSend records a write of chunks carrying n more tokens, about to happen.
func (g *generation) stampSend(n int) {
	if n == 0 {
		return
	}
	now := time.Now()
	if g.sent == 0 {
		g.firstSend = now
	}
	g.lastSend = now
	g.sent += n
}

// record is g's request log line, with outcome as its end.
func (g *generation) record(outcome string) *RequestRecord {
	r := &RequestRecord{
		ID: g.id, Endpoint: "chat", Stream: g.stream, ArrivalUnixNs: g.arrived.UnixNano(),
		PromptTokens: g.promptTokens, CachedTokens: g.cachedTokens,
		SlotWaitNs: int64(g.slotWait), InjectedTTFTNs: int64(g.injected),
		Tokens: g.sent, Outcome: outcome,
	}
	if g.kind == kindCompletion {
		r.Endpoint = "completions"
	}
	if g.kind == kindMessages {
		r.Endpoint = "messages"
	}
	if g.sent > 0 {
		r.FirstTokenSendUnixNs, r.LastTokenSendUnixNs = g.firstSend.UnixNano(), g.lastSend.UnixNano()
	}
	return r
}

// maxRequestIDBytes bounds a client-chosen request id.
const maxRequestIDBytes = 128

// validRequestID accepts ids that need no JSON or header escaping, since
// the id is spliced verbatim into pre-encoded chunks.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !isWordByte(c) && c != '-' && c != '.' && c != ':' {
			return false
		}
	}
	return true
}

func (s *Server) handleGenerate(kind apiKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g, req, e := s.admit(w, r, kind)
		if e != nil {
			writeHTTPError(w, e)
			return
		}
		outcome := "fault"
		// Logged after the handler's last write, so the line never delays a token.
		defer func() { s.reqLog.add(g.record(outcome)) }()
		w.Header().Set("X-Request-Id", g.id)
		f := s.faults.pick(s.requests.Add(1), req.Stream)
		if f != nil {
			// Faults that replace the whole response happen at once, before
			// the request takes a slot, as a real overloaded front end does.
			switch f.kind {
			case fkHTTP429, fkHTTP503, fkHTTP500:
				s.faults.count(f.kind)
				writeStatusFault(w, f)
				return
			case fkResetBeforeHeaders:
				s.faults.count(f.kind)
				abortConn(w)
				return
			case fkWrongContentType:
				s.faults.count(f.kind)
				writeWrongContentType(w)
				return
			}
		}
		var err error
		if req.Stream {
			err = s.stream(r.Context(), w, g, req.StreamOptions != nil && req.StreamOptions.IncludeUsage, f)
		} else {
			err = s.respond(r.Context(), w, g, f)
		}
		if errors.Is(err, errFaultEnd) {
			return
		}
		if err != nil {
			outcome = "aborted"
			s.aborted.Add(1)
			return
		}
		outcome = g.finish
		if g.finish == "stop" {
			s.succeededStop.Add(1)
		} else {
			s.succeededLength.Add(1)
		}
	}
}

// admit parses and validates a request; nothing is counted until it passes.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, kind apiKind) (*generation, *genRequest, *httpError) {
	arrived := time.Now()
	var req genRequest
	if e := decodeBody(w, r, &req); e != nil {
		return nil, nil, e
	}
	if h := r.Header.Get("X-Request-Id"); h != "" {
		req.RequestID = h
	}
	if req.RequestID != "" && !validRequestID(req.RequestID) {
		return nil, nil, badRequest("request_id (or X-Request-Id) must be 1 to %d of [A-Za-z0-9_.:-]", maxRequestIDBytes)
	}
	if e := s.checkModel(req.Model); e != nil {
		return nil, nil, e
	}
	if req.N != nil && *req.N != 1 {
		return nil, nil, badRequest("the simulator supports n=1 only; got n=%d", *req.N)
	}
	var prompt []int
	if kind == kindChat || kind == kindMessages {
		var system json.RawMessage
		if kind == kindMessages {
			system = req.System
			if req.MaxTokens == nil {
				return nil, nil, badRequest("max_tokens: Field required")
			}
		}
		msgs, e := parseMessages(system, req.Messages)
		if e != nil {
			return nil, nil, e
		}
		prompt = chatTemplate(nil, msgs, true)
	} else {
		var e *httpError
		if prompt, e = parsePrompt(req.Prompt); e != nil {
			return nil, nil, e
		}
		if len(prompt) == 0 {
			return nil, nil, badRequest("prompt must contain at least one token")
		}
	}

	limit := s.cfg.MaxModelLen - len(prompt)
	maxTokens := req.MaxCompletionTokens
	if maxTokens == nil {
		maxTokens = req.MaxTokens
	}
	var target int
	switch {
	case maxTokens != nil && *maxTokens < 1:
		return nil, nil, badRequest("max_tokens must be at least 1, got %d", *maxTokens)
	case maxTokens != nil && *maxTokens > limit:
		return nil, nil, badRequest("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the prompt, %d in the completion). Please reduce the length of the prompt or completion.",
			s.cfg.MaxModelLen, len(prompt)+*maxTokens, len(prompt), *maxTokens)
	case maxTokens != nil:
		target = *maxTokens
	case limit < 1:
		return nil, nil, badRequest("This model's maximum context length is %d tokens. However, your prompt has %d tokens.", s.cfg.MaxModelLen, len(prompt))
	default:
		target = min(s.cfg.DefaultMaxTokens, limit)
	}
	if req.MinTokens < 0 {
		return nil, nil, badRequest("min_tokens must not be negative, got %d", req.MinTokens)
	}

	promptHash := hashTokens(prompt)
	g := &generation{
		kind:         kind,
		created:      arrived.Unix(),
		prompt:       prompt,
		promptTokens: len(prompt),
		target:       target,
		finish:       "length",
		text:         newTextGen(s.out, s.cfg.Seed, promptHash),
		arrived:      arrived,
		stream:       req.Stream,
	}
	// The Messages API has no ignore_eos: its answers run to max_tokens, as
	// tollgate's OpenAI requests (ignore_eos: true) do.
	if !req.IgnoreEOS && !s.cfg.NoEOS && kind != kindMessages {
		if eos := eosAfter(s.cfg.Seed, promptHash, s.cfg.MeanEOSTokens, req.MinTokens); eos < target {
			g.target, g.finish = eos, "stop"
		}
	}
	g.reasoning = s.reasoningOf(g)
	prefix := "chatcmpl-sim"
	if kind == kindCompletion {
		prefix = "cmpl-sim"
	}
	if kind == kindMessages {
		prefix = "msg_sim"
	}
	if req.RequestID != "" {
		g.id = prefix[:len(prefix)-len("sim")] + req.RequestID
	} else {
		g.id = prefix + strconv.FormatUint(s.nextID.Add(1), 10)
	}
	if e := s.planToolCalls(g, &req, promptHash); e != nil {
		return nil, nil, e
	}
	return g, &req, nil
}

// run takes g through slot, prefix cache, prefill and decode, calling emit
// with each batch of new tokens (the first call carries the first token).
// It returns early, freeing the slot, when ctx ends or the Server closes.
func (s *Server) run(ctx context.Context, g *generation, streaming bool, emit func([]*outTok) error) error {
	queued := time.Now()
	if err := s.sched.acquire(ctx); err != nil {
		return fmt.Errorf("wait for a slot: %w", err)
	}
	defer s.sched.release()
	g.slotWait = time.Since(queued)

	var hashes []uint64
	if s.cache != nil {
		hashes = blockHashes(nil, g.prompt, s.cfg.BlockTokens)
		// Like vLLM, at least one prompt token is always computed, so a fully
		// cached prompt reports its last block as uncached.
		blocks := s.cache.lookup(hashes, (g.promptTokens-1)/s.cfg.BlockTokens)
		g.cachedTokens = blocks * s.cfg.BlockTokens
	}
	s.promptTokens.Add(int64(g.promptTokens))
	s.cacheQueryTokens.Add(int64(g.promptTokens))
	s.cacheHitTokens.Add(int64(g.cachedTokens))

	var err error
	if g.injected, err = s.sched.prefill(ctx, g.promptTokens-g.cachedTokens); err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	if s.cache != nil {
		s.cache.insert(hashes)
		// Generated tokens' full blocks are cached too, so the next turn of a
		// conversation (prompt + this answer + more) hits them.
		defer func() { s.cache.insert(blockHashes(hashes[:0], g.prompt, s.cfg.BlockTokens)) }()
	}

	// The prefill step produces the first token.
	s.sched.genTokens.Add(1)
	s.ttft.observe(time.Since(g.arrived).Seconds())
	pending := make([]*outTok, 0, 8)
	pending = append(pending, g.text.next())
	g.prompt = append(g.prompt, pending[0].id)
	if err := emit(pending); err != nil {
		return err
	}
	s.ttftExactMu.Lock()
	_ = s.ttftExact.Add(float64(time.Since(g.arrived).Nanoseconds()) / 1e6)
	s.ttftExactMu.Unlock()
	if g.target == 1 {
		return nil
	}

	q := &seq{target: int32(g.target), pokeEach: streaming, notify: make(chan struct{}, 1)}
	q.generated.Store(1)
	defer q.left.Store(true)
	if !s.sched.join(q) {
		return errClosed
	}
	written := 1
	for written < g.target {
		select {
		case <-q.notify:
		case <-ctx.Done():
			return fmt.Errorf("decode: %w", ctx.Err())
		case <-s.done:
			return errClosed
		}
		n := int(q.generated.Load())
		pending = pending[:0]
		for ; written < n; written++ {
			t := g.text.next()
			pending = append(pending, t)
			g.prompt = append(g.prompt, t.id)
		}
		if err := emit(pending); err != nil {
			return err
		}
	}
	return nil
}

// usage is the OpenAI usage object with vLLM's cached-token detail.
type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *completionDetails `json:"completion_tokens_details,omitempty"`
}

func (g *generation) usage() usage {
	u := usage{PromptTokens: g.promptTokens, CompletionTokens: g.target, TotalTokens: g.promptTokens + g.target}
	u.PromptTokensDetails.CachedTokens = g.cachedTokens
	u.CompletionTokensDetails = g.completionDetails()
	return u
}

// respond serves a non-streamed request once every token exists.
func (s *Server) respond(ctx context.Context, w http.ResponseWriter, g *generation, f *activeFault) error {
	if g.calls != nil {
		return s.respondToolCalls(ctx, w, g)
	}
	text, reasoning, err := s.collect(ctx, g)
	if err != nil {
		if errors.Is(err, errClosed) {
			writeError(w, http.StatusServiceUnavailable, "server_error", "server is shutting down")
		}
		return err
	}
	type choice struct {
		Index   int `json:"index"`
		Message *struct {
			Role             string `json:"role"`
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content,omitempty"`
		} `json:"message,omitempty"`
		Text         *string `json:"text,omitempty"`
		Logprobs     any     `json:"logprobs"`
		FinishReason string  `json:"finish_reason"`
	}
	c := choice{FinishReason: g.finish}
	object := "chat.completion"
	g.stampSend(g.target) // the body is written whole, right after this
	if g.kind == kindChat {
		c.Message = &struct {
			Role             string `json:"role"`
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content,omitempty"`
		}{"assistant", text.String(), reasoning.String()}
	} else {
		object = "text_completion"
		t := text.String()
		c.Text = &t
	}
	v := struct {
		ID      string          `json:"id"`
		Object  string          `json:"object"`
		Created int64           `json:"created"`
		Model   json.RawMessage `json:"model"`
		Choices []choice        `json:"choices"`
		Usage   usage           `json:"usage"`
	}{g.id, object, g.created, s.modelJSON, []choice{c}, g.usage()}
	if f == nil {
		writeJSON(w, http.StatusOK, v)
		return nil
	}
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	return s.respondFault(ctx, w, append(body, '\n'), f)
}

// respondFault writes a non-streamed body the way fault f asks.
func (s *Server) respondFault(ctx context.Context, w http.ResponseWriter, body []byte, f *activeFault) error {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/json")
	switch f.kind {
	case fkSlowTrickle:
		s.faults.count(f.kind)
		w.WriteHeader(http.StatusOK)
		return s.writeOut(ctx, w, rc, body, f.TrickleInterval)
	case fkResetMidStream:
		// The full length is announced, so the client knows the body is cut.
		s.faults.count(f.kind)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		if err := s.writeOut(ctx, w, rc, body[:len(body)/2], 0); err != nil {
			return err
		}
		abortConn(w)
		return errFaultEnd
	case fkMalformedJSON:
		// A complete response (its own length) whose JSON stops halfway.
		s.faults.count(f.kind)
		body = body[:len(body)/2]
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return errFaultEnd
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// writeOut writes b and flushes it. With trickle > 0 (slow_trickle) it
// writes trickleChunkBytes at a time and waits trickle after each write.
func (s *Server) writeOut(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, b []byte, trickle time.Duration) error {
	for len(b) > 0 {
		n := len(b)
		if trickle > 0 {
			n = min(n, trickleChunkBytes)
		}
		if _, err := w.Write(b[:n]); err != nil {
			return fmt.Errorf("write response: %w", err)
		}
		if err := rc.Flush(); err != nil {
			return fmt.Errorf("flush response: %w", err)
		}
		b = b[n:]
		if trickle > 0 {
			if err := sleepCtx(ctx, s.done, trickle); err != nil {
				return fmt.Errorf("slow trickle: %w", err)
			}
		}
	}
	return nil
}

// stream serves a streamed request as server-sent events. Headers (and, for
// chat, the role-only chunk) go out at once, so time-to-first-byte measures
// the server's responsiveness and time-to-first-token its queue and prefill.
// Every chunk is pre-encoded: a fixed prefix and suffix around token text
// that needs no escaping; each batch of new tokens is one write and one flush.
// f, when not nil, is the fault this response carries.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, g *generation, includeUsage bool, f *activeFault) error {
	if g.calls != nil {
		return s.streamToolCalls(ctx, w, g, includeUsage)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)

	fk := numFaultKinds // no fault
	var trickle time.Duration
	trigger := 0 // the token event a mid-stream fault follows; 0: none
	if f != nil {
		fk = f.kind
		if _, _, _, mid := fk.uses(); mid {
			trigger = min(f.AfterTokens, g.target)
		}
		if fk == fkSlowTrickle {
			trickle = f.TrickleInterval
			s.faults.count(fk)
		}
	}

	object := "chat.completion.chunk"
	if g.kind == kindCompletion {
		object = "text_completion"
	}
	head := make([]byte, 0, 160)
	head = append(head, `data: {"id":"`...)
	head = append(head, g.id...)
	head = append(head, `","object":"`...)
	head = append(head, object...)
	head = append(head, `","created":`...)
	head = strconv.AppendInt(head, g.created, 10)
	head = append(head, `,"model":`...)
	head = append(head, s.modelJSON...)
	head = append(head, `,"choices":[`...)

	var tokOpen, tokClose string
	if g.kind == kindChat {
		tokOpen, tokClose = `{"index":0,"delta":{"content":"`, `"},"logprobs":null,"finish_reason":null}]}`+"\n\n"
	} else {
		tokOpen, tokClose = `{"index":0,"text":"`, `","logprobs":null,"finish_reason":null}]}`+"\n\n"
	}

	buf := make([]byte, 0, 4096)
	flush := func() error {
		err := s.writeOut(ctx, w, rc, buf, trickle)
		buf = buf[:0]
		return err
	}
	unsent := 0 // tokens appended to buf since the last stamp
	// flushToks writes buf, which holds unsent tokens, stamping the send
	// for the request log just before the write.
	flushToks := func() error {
		g.stampSend(unsent)
		unsent = 0
		return flush()
	}
	appendTok := func(h []byte, text string) {
		buf = append(buf, h...)
		buf = append(buf, tokOpen...)
		buf = append(buf, text...)
		buf = append(buf, tokClose...)
	}

	if g.kind == kindChat {
		buf = append(buf, head...)
		buf = append(buf, `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
		if err := flush(); err != nil {
			return err
		}
	} else if err := rc.Flush(); err != nil { // headers now, as for chat
		return fmt.Errorf("flush stream: %w", err)
	}

	sent := 0
	answerOpen := tokOpen
	err := s.run(ctx, g, true, func(toks []*outTok) error {
		for _, t := range toks {
			sent++
			tokOpen = g.channelOpen(sent, answerOpen)
			if sent != trigger {
				appendTok(head, t.text)
				unsent++
				continue
			}
			unsent++
			s.faults.count(fk)
			switch fk {
			case fkMissingDataPrefix:
				appendTok(head[len("data: "):], t.text)
			case fkInvalidUTF8:
				appendTok(head, "\xff\xfe"+t.text) // never valid UTF-8
			default:
				appendTok(head, t.text)
			}
			switch fk {
			case fkMalformedJSON:
				buf = append(buf, head...)
				buf = append(buf, `{"index":0,"delta":{"content": tollgate-sim injected malformed_json`+"\n\n"...)
			case fkHugeLine:
				if err := flushToks(); err != nil {
					return err
				}
				if err := s.writeHugeLine(ctx, w, rc, head, tokOpen, tokClose); err != nil {
					return err
				}
			case fkStall:
				if err := flushToks(); err != nil {
					return err
				}
				if err := sleepCtx(ctx, s.done, f.Stall); err != nil {
					return fmt.Errorf("stall: %w", err)
				}
			case fkResetMidStream:
				if err := flushToks(); err != nil {
					return err
				}
				return errFaultEnd
			}
		}
		return flushToks()
	})
	if errors.Is(err, errFaultEnd) && fk == fkResetMidStream {
		abortConn(w)
		return err
	}
	if err != nil {
		return err
	}

	buf = append(buf, head...)
	if g.kind == kindChat {
		buf = append(buf, `{"index":0,"delta":{},"logprobs":null,"finish_reason":"`...)
	} else {
		buf = append(buf, `{"index":0,"text":"","logprobs":null,"finish_reason":"`...)
	}
	buf = append(buf, g.finish...)
	buf = append(buf, `"}]}`+"\n\n"...)
	if includeUsage && fk == fkMissingUsage {
		s.faults.count(fk)
	} else if includeUsage {
		var err error
		if buf, err = appendUsageChunk(buf, head, g); err != nil {
			return err
		}
	}
	if fk == fkMissingDone {
		s.faults.count(fk)
	} else {
		buf = append(buf, "data: [DONE]\n\n"...)
	}
	return flush()
}

// writeHugeLine writes one token event whose content is hugeLineBytes of
// filler, piece by piece, so it needs no 10 MB buffer and stops promptly
// when the request ends.
func (s *Server) writeHugeLine(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, head []byte, tokOpen, tokClose string) error {
	open := append(append([]byte(nil), head...), tokOpen...)
	if err := s.writeOut(ctx, w, rc, open, 0); err != nil {
		return err
	}
	for left := hugeLineBytes; left > 0; {
		select {
		case <-ctx.Done():
			return fmt.Errorf("huge line: %w", ctx.Err())
		case <-s.done:
			return errClosed
		default:
		}
		n := min(left, len(s.faults.filler))
		if _, err := w.Write(s.faults.filler[:n]); err != nil {
			return fmt.Errorf("huge line: %w", err)
		}
		left -= n
	}
	return s.writeOut(ctx, w, rc, []byte(tokClose), 0)
}

// appendUsageChunk appends the stream's usage-only chunk (stream_options
// include_usage): the chunk head with no choices, then the usage. head is
// the chunk prefix up to and including `"choices":[`.
func appendUsageChunk[H string | []byte](buf []byte, head H, g *generation) ([]byte, error) {
	u, err := json.Marshal(g.usage())
	if err != nil {
		return buf, fmt.Errorf("encode usage: %w", err)
	}
	buf = append(buf, head[:len(head)-len(`"choices":[`)]...)
	buf = append(buf, `"choices":[],"usage":`...)
	buf = append(buf, u...)
	return append(buf, "}\n\n"...), nil
}

// collect runs a non-streamed generation to its end and returns its answer
// text and, apart, its first g.reasoning tokens (the reasoning).
func (s *Server) collect(ctx context.Context, g *generation) (text, reasoning *strings.Builder, err error) {
	text, reasoning = &strings.Builder{}, &strings.Builder{}
	n := 0
	err = s.run(ctx, g, false, func(toks []*outTok) error {
		for _, t := range toks {
			if n++; n <= g.reasoning {
				reasoning.WriteString(t.text)
				continue
			}
			text.WriteString(t.text)
		}
		return nil
	})
	return text, reasoning, err
}
