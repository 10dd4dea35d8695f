package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
)

// chunkInfo is everything accounting needs from one streamed JSON chunk.
// Decoding only these fields keeps the per-token client CPU small.
type chunkInfo struct {
	tokens         bool // non-empty content, reasoning, tool_calls or text
	contentBytes   int  // decoded bytes of delta.content and text
	reasoningBytes int  // decoded bytes of delta.reasoning_content / reasoning
	finish         []byte

	usage              bool
	prompt, completion int
	cachedSet          bool
	cached             int
	// reasoning is usage.completion_tokens_details.reasoning_tokens.
	reasoningSet bool
	reasoning    int

	timings             bool
	promptN, predictedN int
	cacheNSet           bool
	cacheN              int
	// timingsRaw is the timings object as sent, decoded once per request
	// (its float figures are not on the hot path).
	timingsRaw []byte

	// errRaw is the raw "error" member, or the whole chunk for the
	// {"object":"error","message":...} form; decoded on the rare error path.
	errRaw    []byte
	errObject bool
}

func (c *chunkInfo) reset() { *c = chunkInfo{} }

// parseChunk fills ci from data with a byte scanner and falls back to
// encoding/json for anything the scanner does not accept; it errors only when
// encoding/json also rejects the chunk.
func parseChunk(data []byte, ci *chunkInfo) error {
	ci.reset()
	s := scanner{b: data}
	if s.topLevel(ci) {
		s.ws()
		if s.i == len(s.b) {
			return ci.check()
		}
	}
	ci.reset()
	if err := parseChunkSlow(data, ci); err != nil {
		return err
	}
	return ci.check()
}

// check refuses counts that cannot be true together; each count alone was
// range-checked where it was read.
func (c *chunkInfo) check() error {
	if c.usage && c.cachedSet && c.cached > c.prompt {
		return fmt.Errorf("%w: usage.prompt_tokens_details.cached_tokens %d exceeds usage.prompt_tokens %d", ErrBadCount, c.cached, c.prompt)
	}
	return c.checkReasoning()
}

// maxCount bounds a token count: far above any context window, and exact in
// a float64 so that sums and means stay integers.
const maxCount = 1 << 40

// parseCount reads one count as sent; set is false when absent or null.
func parseCount(field string, raw json.RawMessage) (n int, set bool, err error) {
	v := string(bytes.TrimSpace(raw))
	if v == "" || v == "null" {
		return 0, false, nil
	}
	if i, perr := strconv.ParseInt(v, 10, 64); perr == nil {
		if i < 0 || i > maxCount {
			return 0, false, fmt.Errorf("%w: %s is %s", ErrBadCount, field, v)
		}
		return int(i), true, nil
	}
	// An integral value written as a float (12.0, 1e3) is still a count.
	f, perr := strconv.ParseFloat(v, 64)
	if perr != nil || v[0] == '"' || f != math.Trunc(f) || f < 0 || f > maxCount {
		return 0, false, fmt.Errorf("%w: %s is %s", ErrBadCount, field, transport.Snippet(raw, 40))
	}
	return int(f), true, nil
}

// counts reads a usage object's counts.
func (u *usageJSON) counts() (prompt, completion, cached int, cachedSet bool, err error) {
	var e1, e2, e3 error
	prompt, _, e1 = parseCount("usage.prompt_tokens", u.PromptTokens)
	completion, _, e2 = parseCount("usage.completion_tokens", u.CompletionTokens)
	if d := u.PromptTokensDetails; d != nil {
		cached, cachedSet, e3 = parseCount("usage.prompt_tokens_details.cached_tokens", d.CachedTokens)
	}
	return prompt, completion, cached, cachedSet, errors.Join(e1, e2, e3)
}

// counts reads a llama.cpp timings object's counts.
func (t *timingsJSON) counts() (promptN, predictedN, cacheN int, cacheNSet bool, err error) {
	var e1, e2, e3 error
	promptN, _, e1 = parseCount("timings.prompt_n", t.PromptN)
	predictedN, _, e2 = parseCount("timings.predicted_n", t.PredictedN)
	cacheN, cacheNSet, e3 = parseCount("timings.cache_n", t.CacheN)
	return promptN, predictedN, cacheN, cacheNSet, errors.Join(e1, e2, e3)
}

// scanner is a small, non-allocating JSON walker. It validates structure only
// as far as it needs to find the fields; odd input makes it fail, never panic,
// and the caller then uses encoding/json.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) lit(l string) bool {
	if len(s.b)-s.i >= len(l) && string(s.b[s.i:s.i+len(l)]) == l {
		s.i += len(l)
		return true
	}
	return false
}

// str reads a string, returning its raw (still escaped) contents.
func (s *scanner) str() (raw []byte, esc, ok bool) {
	if s.peek() != '"' {
		return nil, false, false
	}
	s.i++
	start := s.i
	rest := s.b[start:]
	if q := bytes.IndexByte(rest, '"'); q >= 0 && bytes.IndexByte(rest[:q], '\\') < 0 {
		s.i += q + 1
		return rest[:q], false, true
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, true, true
		case '\\':
			s.i += 2
		default:
			s.i++
		}
	}
	return nil, false, false
}

// skip consumes any value.
func (s *scanner) skip() bool {
	switch s.peek() {
	case 0:
		return false
	case '"':
		_, _, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	case '}', ']', ',', ':':
		return false
	default:
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}

// object walks an object's members; f must consume the value. null is an
// empty object.
func (s *scanner) object(f func(key []byte) bool) bool {
	if s.peek() == 'n' {
		return s.lit("null")
	}
	if !s.expect('{') {
		return false
	}
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		key, _, ok := s.str()
		if !ok || !s.expect(':') || !f(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// array walks an array's elements; f must consume each. null is empty.
func (s *scanner) array(f func() bool) bool {
	if s.peek() == 'n' {
		return s.lit("null")
	}
	if !s.expect('[') {
		return false
	}
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		if !f() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// strLen reads a string or null and returns its decoded length in bytes.
func (s *scanner) strLen() (int, bool) {
	if s.peek() == 'n' {
		return 0, s.lit("null")
	}
	raw, esc, ok := s.str()
	if !ok {
		return 0, false
	}
	if !esc {
		return len(raw), true
	}
	return unescapedLen(raw)
}

// nonEmptyArray reads an array or null, reporting whether it had elements.
func (s *scanner) nonEmptyArray() (nonEmpty, ok bool) {
	switch s.peek() {
	case 'n':
		return false, s.lit("null")
	case '[':
		s.i++
		nonEmpty = s.peek() != ']'
		s.i--
		return nonEmpty, s.skip()
	}
	return false, false
}

// int reads a plain non-negative integer of at most 12 digits, or null; set
// is false for null. Anything else (a sign, a fraction, an exponent, a huge
// value) is left to the encoding/json path, which names the bad field.
func (s *scanner) int() (n int, set, ok bool) {
	c := s.peek()
	if c == 'n' {
		return 0, false, s.lit("null")
	}
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits <= 0 || digits > 12 {
		return 0, false, false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false, false
	}
	return n, true, true
}

func (s *scanner) topLevel(ci *chunkInfo) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "choices":
			return s.array(func() bool { return s.choice(ci) })
		case "usage":
			if s.peek() == 'n' {
				return s.lit("null")
			}
			ci.usage = true
			return s.object(func(k []byte) bool {
				var ok bool
				switch string(k) {
				case "prompt_tokens":
					ci.prompt, _, ok = s.int()
				case "completion_tokens":
					ci.completion, _, ok = s.int()
				case "prompt_tokens_details":
					ok = s.object(func(k []byte) bool {
						if string(k) == "cached_tokens" {
							var ok bool
							ci.cached, ci.cachedSet, ok = s.int()
							return ok
						}
						return s.skip()
					})
				case "completion_tokens_details":
					ok = s.completionDetails(ci)
				default:
					ok = s.skip()
				}
				return ok
			})
		case "timings":
			if s.peek() == 'n' {
				return s.lit("null")
			}
			ci.timings = true
			start := s.i
			defer func() {
				if s.i > start && s.i <= len(s.b) {
					ci.timingsRaw = s.b[start:s.i]
				}
			}()
			return s.object(func(k []byte) bool {
				var ok bool
				switch string(k) {
				case "prompt_n":
					ci.promptN, _, ok = s.int()
				case "predicted_n":
					ci.predictedN, _, ok = s.int()
				case "cache_n":
					ci.cacheN, ci.cacheNSet, ok = s.int()
				default:
					ok = s.skip()
				}
				return ok
			})
		case "error":
			if s.peek() == 'n' {
				return s.lit("null")
			}
			start := s.i
			if !s.skip() {
				return false
			}
			ci.errRaw = s.b[start:s.i]
			return true
		case "object":
			raw, _, ok := s.str()
			if ok && string(raw) == "error" {
				ci.errObject = true
				ci.errRaw = s.b
			}
			return ok
		}
		return s.skip()
	})
}

func (s *scanner) choice(ci *chunkInfo) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "delta":
			return s.object(func(k []byte) bool {
				switch string(k) {
				case "content":
					n, ok := s.strLen()
					ci.contentBytes += n
					ci.tokens = ci.tokens || n > 0
					return ok
				case "reasoning_content", "reasoning":
					n, ok := s.strLen()
					ci.reasoningBytes += n
					ci.tokens = ci.tokens || n > 0
					return ok
				case "tool_calls":
					ne, ok := s.nonEmptyArray()
					ci.tokens = ci.tokens || ne
					return ok
				}
				return s.skip()
			})
		case "text":
			n, ok := s.strLen()
			ci.contentBytes += n
			ci.tokens = ci.tokens || n > 0
			return ok
		case "finish_reason":
			if s.peek() == 'n' {
				return s.lit("null")
			}
			raw, _, ok := s.str()
			ci.finish = raw
			return ok
		}
		return s.skip()
	})
}

// unescapedLen is the decoded UTF-8 length of a JSON string body.
func unescapedLen(raw []byte) (int, bool) {
	n := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			n++
			continue
		}
		i++
		if i >= len(raw) {
			return 0, false
		}
		if raw[i] != 'u' {
			n++
			continue
		}
		r, ok := hex4(raw, i+1)
		if !ok {
			return 0, false
		}
		i += 4
		if r >= 0xD800 && r < 0xDC00 {
			// A high surrogate followed by a low one is one 4-byte rune;
			// alone it decodes to U+FFFD (3 bytes), as encoding/json does.
			if i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if r2, ok := hex4(raw, i+3); ok && r2 >= 0xDC00 && r2 < 0xE000 {
					n += 4
					i += 6
					continue
				}
			}
			n += 3
			continue
		}
		if r >= 0xDC00 && r < 0xE000 {
			n += 3
			continue
		}
		n += utf8.RuneLen(r)
	}
	return n, true
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Slow path: encoding/json into the same fields.

// The counts are raw so that a bad one is named (parseCount), not a bare
// decoding error or a silently truncated float.
type usageJSON struct {
	PromptTokens        json.RawMessage `json:"prompt_tokens"`
	CompletionTokens    json.RawMessage `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens json.RawMessage `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *completionDetailsJSON `json:"completion_tokens_details"`
}

type timingsJSON struct {
	PromptN    json.RawMessage `json:"prompt_n"`
	PredictedN json.RawMessage `json:"predicted_n"`
	CacheN     json.RawMessage `json:"cache_n"`
}

// serverTimings decodes a llama.cpp timings object; nil when it is not one,
// an ErrBadCount error when a figure is negative (a count not an integer
// fails the decoding, and was named by timingsJSON.counts already).
func serverTimings(raw []byte) (*ServerTimings, error) {
	var t ServerTimings
	if len(raw) == 0 || json.Unmarshal(raw, &t) != nil {
		return nil, nil
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"timings.prompt_n", t.PromptN}, {"timings.cache_n", t.CacheN}, {"timings.predicted_n", t.PredictedN}} {
		if f.v != nil && (*f.v < 0 || *f.v > maxCount) {
			return nil, fmt.Errorf("%w: %s is %d", ErrBadCount, f.name, *f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"timings.prompt_ms", t.PromptMs}, {"timings.prompt_per_second", t.PromptPerSecond}, {"timings.predicted_ms", t.PredictedMs},
		{"timings.predicted_per_token_ms", t.PredictedPerTokenMs}, {"timings.predicted_per_second", t.PredictedPerSecond}} {
		// encoding/json refuses NaN, Inf and overflow, so only the sign and
		// absurd magnitudes are left to check.
		if f.v != nil && (*f.v < 0 || *f.v > 1e15) {
			return nil, fmt.Errorf("%w: %s is %g", ErrBadCount, f.name, *f.v)
		}
	}
	t.Source = measure.ServerLlamaCppTimings
	// A rate over one generated token (or none) is no rate: llama.cpp sends
	// predicted_per_second 0 for a 1-token answer. Absent, never 0, as the
	// client's own decode figures are; the same for a fully cached prompt.
	if t.PredictedN == nil || *t.PredictedN < 2 {
		t.PredictedPerSecond, t.PredictedPerTokenMs = nil, nil
	}
	if t.PromptN == nil || *t.PromptN < 1 {
		t.PromptPerSecond = nil
	}
	return &t, nil
}

type slowChunk struct {
	Choices []struct {
		Delta *struct {
			Content          *string           `json:"content"`
			ReasoningContent *string           `json:"reasoning_content"`
			Reasoning        *string           `json:"reasoning"`
			ToolCalls        []json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage   *usageJSON      `json:"usage"`
	Timings json.RawMessage `json:"timings"`
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
}

func parseChunkSlow(data []byte, ci *chunkInfo) error {
	var c slowChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("decode chunk %q: %w", transport.Cut(data, 120), err)
	}
	for _, ch := range c.Choices {
		if d := ch.Delta; d != nil {
			for _, p := range []*string{d.Content, d.ReasoningContent, d.Reasoning} {
				if p != nil && *p != "" {
					ci.tokens = true
				}
			}
			if d.Content != nil {
				ci.contentBytes += len(*d.Content)
			}
			if d.ReasoningContent != nil {
				ci.reasoningBytes += len(*d.ReasoningContent)
			}
			if d.Reasoning != nil {
				ci.reasoningBytes += len(*d.Reasoning)
			}
			if len(d.ToolCalls) > 0 {
				ci.tokens = true
			}
		}
		if ch.Text != nil {
			ci.contentBytes += len(*ch.Text)
			ci.tokens = ci.tokens || *ch.Text != ""
		}
		if ch.FinishReason != nil {
			ci.finish = []byte(*ch.FinishReason)
		}
	}
	if u := c.Usage; u != nil {
		ci.usage = true
		var err error
		if ci.prompt, ci.completion, ci.cached, ci.cachedSet, err = u.counts(); err != nil {
			return err
		}
		if ci.reasoning, ci.reasoningSet, err = u.reasoningCount(); err != nil {
			return err
		}
	}
	var t timingsJSON
	if len(c.Timings) > 0 && string(c.Timings) != "null" && json.Unmarshal(c.Timings, &t) == nil {
		ci.timings = true
		ci.timingsRaw = c.Timings
		var err error
		if ci.promptN, ci.predictedN, ci.cacheN, ci.cacheNSet, err = t.counts(); err != nil {
			return err
		}
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		ci.errRaw = c.Error
	} else if c.Object == "error" {
		ci.errObject, ci.errRaw = true, data
	}
	return nil
}

// decodeStreamError turns an error payload into a *StreamError. raw is the
// "error" member (object or string), the whole {"object":"error"} chunk, or,
// for "event: error" with non-JSON data, plain text.
func decodeStreamError(raw []byte) *StreamError {
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &obj); err == nil {
		if obj.Message == "" && len(obj.Error) > 0 {
			return decodeStreamError(obj.Error)
		}
		se := &StreamError{Message: obj.Message, Type: obj.Type}
		if len(obj.Code) > 0 && string(obj.Code) != "null" {
			var s string
			if json.Unmarshal(obj.Code, &s) != nil {
				s = string(obj.Code)
			}
			se.Code = s
		}
		if se.Message == "" {
			se.Message = transport.Snippet(raw, 512)
		}
		return se
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &StreamError{Message: s}
	}
	return &StreamError{Message: transport.Snippet(raw, 512)}
}
