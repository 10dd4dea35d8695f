// Package openai speaks the OpenAI wire format (streamed chat and
// completions) to OpenAI-compatible servers (vLLM, SGLang, llama.cpp,
// FreeToken, Ollama, ...): it builds the requests and records each answer
// into a measure.Timeline. The transport (connections, clocks, timeouts,
// retries, errors, calibration, metadata, /metrics) is engine/transport's.
package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

// Config is the transport's: base URL, key, headers, body fields,
// timeouts, pool.
type Config = transport.Config

// Client is an OpenAI-compatible target.
type Client struct {
	*transport.Client
}

var _ measure.Client = (*Client)(nil)

// New builds a client; the API key goes in "Authorization: Bearer".
func New(cfg Config) (*Client, error) {
	c, err := transport.New(cfg, wire{})
	if err != nil {
		return nil, err
	}
	return &Client{c}, nil
}

// Protocol is the OpenAI wire format (chat, completions) as the live
// executor needs it; the openai and embedded kinds speak it (their
// scenarios.LiveKinds entries name this package).
func Protocol() transport.Protocol { return transport.Protocol{Client: transport.ClientOf(New)} }

// wire is the OpenAI format's side of a request (transport.Wire).
type wire struct{}

func (wire) Name() string { return "openai" }

func (wire) Header(h http.Header, apiKey string) {
	if apiKey != "" {
		h.Set("Authorization", "Bearer "+apiKey)
	}
}

// NewStream reads a stream with an Accumulator and, when req asks for its
// transcript, keeps the reply.
func (wire) NewStream(req Request) transport.Stream {
	s := &stream{}
	s.acc.Reset(req.MaxTokens)
	if req.Transcript {
		s.tr = &transcript{limit: replyLimit(req.MaxReplyBytes)}
	}
	return s
}

// stream is one streamed answer: its accounting and, if asked, its reply.
type stream struct {
	acc Accumulator
	tr  *transcript
}

func (s *stream) Event(ev *sse.Event) error {
	if err := s.acc.Event(ev); err != nil {
		return err
	}
	if s.tr != nil {
		return s.tr.event(ev)
	}
	return nil
}

func (s *stream) Timeline() *measure.Timeline { return &s.acc.tl }

func (s *stream) Finished() error { return s.acc.Finished() }

func (s *stream) End(res *Result) {
	if s.tr != nil {
		res.Reply = s.tr.reply()
	}
}

// The nested defaults of every body, shared by all of them and never
// written: MergeBody copies a nested map before it merges into it.
var (
	thinkingOff         = map[string]any{"type": "disabled"}
	templateThinkingOff = map[string]any{"enable_thinking": false}
	includeUsage        = map[string]any{"include_usage": true}
)

// Body assembles the JSON body: defaults, then the target's body fields
// (extra), then Request.ExtraBody, then the request's own fields.
func (wire) Body(req Request, extra map[string]any) (path string, body []byte, err error) {
	defaults := []transport.BodyField{
		{Key: "temperature", Value: 0},
		{Key: "top_p", Value: 1},
		{Key: "stream", Value: req.Stream},
		{Key: "ignore_eos", Value: true},
		// FreeToken and vLLM/SGLang spell "thinking off" differently.
		{Key: "thinking", Value: thinkingOff},
		{Key: "chat_template_kwargs", Value: templateThinkingOff},
		// vLLM rejects stream_options on non-streamed requests.
		{Key: "stream_options", Value: includeUsage},
	}
	if !req.Stream {
		defaults = defaults[:len(defaults)-1]
	}
	var ownArr [4]transport.BodyField
	own := ownArr[:0]
	if req.Model != "" {
		own = append(own, transport.BodyField{Key: "model", Value: req.Model})
	}
	if req.MaxTokens > 0 {
		own = append(own, transport.BodyField{Key: "max_tokens", Value: req.MaxTokens})
	}
	switch req.Endpoint {
	case "", EndpointChat:
		path = "/v1/chat/completions"
		own = append(own, transport.BodyField{Key: "messages", Value: req.Messages})
		if len(req.Tools) > 0 {
			own = append(own, transport.BodyField{Key: "tools", Value: req.Tools})
		}
	case EndpointCompletions:
		path = "/v1/completions"
		own = append(own, transport.BodyField{Key: "prompt", Value: req.Prompt})
	default:
		return "", nil, fmt.Errorf("openai: unknown endpoint %q (want %q or %q)", req.Endpoint, EndpointChat, EndpointCompletions)
	}
	body, err = transport.BuildBody(defaults, extra, req.ExtraBody, own)
	if err != nil {
		return "", nil, fmt.Errorf("openai: encode request body: %w", err)
	}
	return path, body, nil
}

// nonStreamBody is the part of a non-streamed response we account.
type nonStreamBody struct {
	Choices []struct {
		Message *struct {
			Content          *string           `json:"content"`
			ReasoningContent *string           `json:"reasoning_content"`
			Reasoning        *string           `json:"reasoning"`
			ToolCalls        []json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage   *usageJSON      `json:"usage"`
	Timings json.RawMessage `json:"timings"`
	Error   json.RawMessage `json:"error"`
}

// DecodeJSON records a non-streamed answer: an undecodable body or an
// error object reports no status, a bad count or an empty answer the
// response's.
func (wire) DecodeJSON(data []byte, status int, req Request, tl *measure.Timeline, res *Result) (int, error) {
	var b nonStreamBody
	if err := transport.UnmarshalAnswer(data, &b); err != nil {
		if errors.Is(err, ErrTruncated) {
			return status, err
		}
		return 0, err
	}
	if len(b.Error) > 0 && string(b.Error) != "null" {
		return 0, decodeStreamError(b.Error)
	}
	if req.Transcript {
		res.Reply = replyJSON(data, replyLimit(req.MaxReplyBytes))
	}
	for _, ch := range b.Choices {
		if m := ch.Message; m != nil {
			if m.Content != nil {
				tl.OutputTextBytes += len(*m.Content)
			}
			for _, r := range []*string{m.ReasoningContent, m.Reasoning} {
				if r != nil {
					tl.ReasoningTextBytes += len(*r)
				}
			}
		}
		if ch.Text != nil {
			tl.OutputTextBytes += len(*ch.Text)
		}
		if ch.FinishReason != nil {
			tl.FinishReason = *ch.FinishReason
		}
	}
	var timings *timingsJSON
	if len(b.Timings) > 0 && string(b.Timings) != "null" {
		var t timingsJSON
		if json.Unmarshal(b.Timings, &t) == nil {
			timings = &t
			// Checked even beside usage, as the streamed path does.
			if _, _, _, _, err := t.counts(); err != nil {
				return status, err
			}
			st, err := serverTimings(b.Timings)
			if err != nil {
				return status, err
			}
			tl.Server = st
		}
	}
	switch {
	case b.Usage != nil:
		prompt, compl, cached, cachedSet, err := b.Usage.counts()
		if err == nil && cachedSet && cached > prompt {
			err = fmt.Errorf("%w: usage.prompt_tokens_details.cached_tokens %d exceeds usage.prompt_tokens %d", ErrBadCount, cached, prompt)
		}
		if err != nil {
			return status, err
		}
		reasoning, reasoningSet, err := b.Usage.reasoningCount()
		if err != nil {
			return status, err
		}
		tl.UsageSeen = true
		tl.Usage = measure.Usage{Source: SourceUsage, Prompt: prompt, Completion: compl, Cached: cached, Reasoning: reasoning,
			PromptSet: true, CompletionSet: true, CachedSet: cachedSet, ReasonSet: reasoningSet}
	case timings != nil:
		promptN, predN, cacheN, cacheNSet, err := timings.counts()
		if err != nil {
			return status, err
		}
		tl.Usage = timingsUsage(promptN, predN, cacheN, cacheNSet)
	}
	tools := false
	for _, ch := range b.Choices {
		if ch.Message != nil && len(ch.Message.ToolCalls) > 0 {
			tools = true
		}
	}
	if tl.OutputTextBytes+tl.ReasoningTextBytes == 0 && !tools && (!tl.Usage.CompletionSet || tl.Usage.Completion == 0) {
		return status, fmt.Errorf("%w: the answer has %d choices and no text, reasoning or tool call", ErrNoOutput, len(b.Choices))
	}
	// A whole body is still no finished answer without a finish_reason:
	// the stream's rule, for the choices a server sends at the end.
	if tl.FinishReason == "" {
		return status, fmt.Errorf("%w: the answer's %d choices carry no finish_reason", ErrTruncated, len(b.Choices))
	}
	return 0, nil
}
