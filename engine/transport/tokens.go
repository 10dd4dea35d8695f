package transport

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/engine/measure"
)

// Token counting methods, in the order CountTokens tries them.
const (
	MethodCountTokens = "count_tokens" // POST /v1/messages/count_tokens
	MethodTokenize    = "tokenize"     // POST /tokenize (vLLM, SGLang, llama.cpp)
	MethodProbe       = "probe"        // a max_tokens=1 completion's usage.prompt_tokens
)

// CountTokens asks the server how many prompt tokens messages make, trying
// /v1/messages/count_tokens, then /tokenize, then a one-token probe
// completion. The method that worked is tried first next time.
//
// The methods can differ by the chat-template overhead: /tokenize with a
// plain prompt and llama.cpp's {content} form count the text only, while
// count_tokens, /tokenize with messages and the probe count what a chat
// request is billed.
func (c *Client) CountTokens(ctx context.Context, model string, messages []measure.Message) (n int, method string, err error) {
	order := []string{MethodCountTokens, MethodTokenize, MethodProbe}
	c.mu.Lock()
	if c.countMethod != "" {
		order = append([]string{c.countMethod}, order...)
	}
	c.mu.Unlock()
	var errs []error
	tried := map[string]bool{}
	c.mu.Lock()
	for m, why := range c.unresponsive {
		tried[m] = true
		errs = append(errs, fmt.Errorf("%s: %s", m, why))
	}
	c.mu.Unlock()
	for _, m := range order {
		if tried[m] {
			continue
		}
		tried[m] = true
		switch m {
		case MethodCountTokens:
			n, err = c.countViaCountTokens(ctx, model, messages)
		case MethodTokenize:
			n, err = c.countViaTokenize(ctx, model, messages)
		case MethodProbe:
			n, err = c.countViaProbe(ctx, model, messages)
		}
		if err == nil {
			c.mu.Lock()
			c.countMethod = m
			c.mu.Unlock()
			return n, m, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", m, err))
		if ctx.Err() != nil {
			break
		}
	}
	return 0, "", fmt.Errorf("openai: count tokens: %w", errors.Join(errs...))
}

// postJSON sends body to path and decodes a 2xx JSON answer into out.
func (c *Client) postJSON(ctx context.Context, path string, body, out any) error {
	d := c.wait(c.waits.aux)
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	req, err := c.newRequest(cctx, http.MethodPost, path, b)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.auxError(ctx, cctx, d, "POST "+path, err)
	}
	defer resp.Body.Close()
	data, err := readCapped(resp, jsonBodyBytes)
	if err != nil {
		return c.auxError(ctx, cctx, d, "POST "+path, err)
	}
	if !ok2xx(resp.StatusCode) {
		return fmt.Errorf("POST %s: HTTP %d: %s", path, resp.StatusCode, c.excerpt(data, 200))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s: decode: %w", path, err)
	}
	return nil
}

func (c *Client) countViaCountTokens(ctx context.Context, model string, messages []measure.Message) (int, error) {
	var out struct {
		InputTokens *int `json:"input_tokens"`
	}
	if err := c.postJSON(ctx, "/v1/messages/count_tokens", map[string]any{"model": model, "messages": messages}, &out); err != nil {
		return 0, err
	}
	if out.InputTokens == nil {
		return 0, errors.New("no input_tokens in answer")
	}
	return *out.InputTokens, nil
}

func (c *Client) countViaTokenize(ctx context.Context, model string, messages []measure.Message) (int, error) {
	text := joinContents(messages)
	// Chat form first: it counts the template like a real request does.
	bodies := []map[string]any{
		{"model": model, "messages": messages},
		{"model": model, "prompt": text},
		{"content": text}, // llama.cpp
	}
	// Start with the form that worked last time.
	c.mu.Lock()
	first := c.tokenizeForm
	c.mu.Unlock()
	bodies = append(bodies[first:], bodies[:first]...)
	var errs []error
	for i, body := range bodies {
		var out struct {
			Count  *int              `json:"count"`
			Tokens []json.RawMessage `json:"tokens"`
		}
		err := c.postJSON(ctx, "/tokenize", body, &out)
		if err == nil {
			switch {
			case out.Count != nil:
				c.rememberTokenizeForm((first + i) % len(bodies))
				return *out.Count, nil
			case out.Tokens != nil:
				c.rememberTokenizeForm((first + i) % len(bodies))
				return len(out.Tokens), nil
			}
			err = errors.New("no count or tokens in answer")
		}
		errs = append(errs, err)
		if strings.Contains(err.Error(), "HTTP 404") || ctx.Err() != nil {
			break // no /tokenize at all
		}
	}
	return 0, errors.Join(errs...)
}

func (c *Client) rememberTokenizeForm(i int) {
	c.mu.Lock()
	c.tokenizeForm = i
	c.mu.Unlock()
}

func (c *Client) countViaProbe(ctx context.Context, model string, messages []measure.Message) (int, error) {
	res, err := c.Stream(ctx, measure.Request{Model: model, Messages: messages, MaxTokens: 1})
	// Only the prompt's count is asked for: a whole body that lacks its
	// finish_reason still counted it.
	if err != nil && (!errors.Is(err, ErrTruncated) || res.Metrics.PromptTokens == nil) {
		return 0, err
	}
	if res.PromptTokens == nil {
		return 0, errors.New("probe completion reported no usage.prompt_tokens")
	}
	return *res.PromptTokens, nil
}

func readCapped(resp *http.Response, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("body over %d bytes", limit)
	}
	return data, nil
}

func joinContents(messages []measure.Message) string {
	parts := make([]string, len(messages))
	for i, m := range messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

// vocabularyText is common English so that tokenizers see ordinary text
// (about 1.3 tokens per word) rather than rare fragments.
const vocabularyText = `
the of and to in a is that for it as was with be by on not he this are or his from at
which but have an had they you were their one all we can her has there been if more when
will would who so no time people year way day man thing woman life child world school
state family student group country problem hand part place case week company system
program question work government number night point home water room mother area money
story fact month lot right study book eye job word business issue side kind head house
service friend father power hour game line end member law car city community name
president team minute idea kid body information back parent face others level office door
health person art war history party result change morning reason research girl guy moment
air teacher force education river garden window market letter music paper road table quiet
green early small large bright simple careful happy strong open clear warm old new long
short good great little young walk read write build carry follow learn find keep hold
bring begin seem help show hear play run move live believe happen slowly often always
never today together again already almost later
`

// vocabulary is vocabularyText's words, split once: per prompt the split
// was 3.3 KB of garbage and a few µs (read only, never written).
var vocabulary = strings.Fields(vocabularyText)

// SyntheticPrompt returns a deterministic prompt of words words (after
// sharedPrefix) made of sentences of common English words. Prompts differ for
// every (seed, index): the first words are a "Ticket seed.index:" tag, placed
// first so that prefix caches share nothing past sharedPrefix.
func SyntheticPrompt(seed int64, index int, words int, sharedPrefix string) string {
	var sb strings.Builder
	sb.Grow(len(sharedPrefix) + words*8)
	sb.WriteString(sharedPrefix)
	if words <= 0 {
		return sb.String()
	}
	if sharedPrefix != "" && !strings.HasSuffix(sharedPrefix, " ") && !strings.HasSuffix(sharedPrefix, "\n") {
		sb.WriteByte(' ')
	}
	// The tag unique to (seed, index) comes first, so two prompts share no
	// token past sharedPrefix and the chat template: a fixed word before it
	// ("Ticket") or the seed's digits would be a common prefix.
	sb.WriteString(promptTag(seed, index))
	if words <= 1 {
		return sb.String()
	}
	sb.WriteByte(':')
	vocab := vocabulary
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(index)*0x9E3779B97F4A7C15+1))
	sentence := 0 // words left in the current sentence
	for w := 1; w < words; w++ {
		word := vocab[rng.IntN(len(vocab))]
		sb.WriteByte(' ')
		if sentence == 0 {
			sentence = 6 + rng.IntN(10)
			sb.WriteString(strings.ToUpper(word[:1]))
			sb.WriteString(word[1:])
		} else {
			sb.WriteString(word)
		}
		sentence--
		if sentence == 0 || w == words-1 {
			sb.WriteByte('.')
		}
	}
	return sb.String()
}

// promptTag is a short base-36 word unique to (seed, index) whose first
// characters already differ between indexes.
func promptTag(seed int64, index int) string {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(seed))
	binary.LittleEndian.PutUint64(b[8:], uint64(index))
	_, _ = h.Write(b[:])
	return strconv.FormatUint(h.Sum64(), 36)
}

// CalibrationTolerance is how far a calibrated prompt may land from the
// target: max(4 tokens, 0.5%).
func CalibrationTolerance(targetTokens int) int {
	return max(4, int(math.Ceil(0.005*float64(targetTokens))))
}

// Calibrate searches the word count whose synthetic prompt (a single user
// message) the server counts within CalibrationTolerance of targetTokens. It
// uses secant steps kept inside the bracket found so far, falling back to
// bisection, for at most MaxIterations counts. When it cannot get close
// enough it returns the closest prompt found and an error.
func (c *Client) Calibrate(ctx context.Context, targetTokens int, seed int64, opt measure.CalibrateOptions) (measure.Calibration, error) {
	if targetTokens <= 0 {
		return measure.Calibration{}, fmt.Errorf("openai: calibrate: target %d tokens must be positive", targetTokens)
	}
	maxIter := opt.MaxIterations
	if maxIter <= 0 {
		maxIter = 16
	}
	tol := CalibrationTolerance(targetTokens)
	type point struct{ words, tokens int }
	var best measure.Calibration
	bestGap := math.MaxInt
	var lo, hi point
	var prev *point
	var w, flat int
	restart := func() {
		lo, hi, prev, flat = point{0, math.MinInt}, point{-1, 0}, nil, 0 // hi.words < 0: no upper bracket yet
		w = max(1, targetTokens*3/4)
		if opt.InitialWords > 0 {
			w = opt.InitialWords
		}
	}
	restart()
	// No tokenizer counts common English at under half a token a word: a
	// count that needs more words than this is not counting the text, and
	// growing the prompt further only burns memory and time.
	maxWords := max(8, 2*targetTokens)
	var notes []string
	for it := 1; it <= maxIter; it++ {
		prompt := SyntheticPrompt(seed, opt.Index, w, opt.SharedPrefix)
		n, method, err := c.CountTokens(ctx, opt.Model, []measure.Message{{Role: "user", Content: prompt}})
		if err != nil {
			best.Note = strings.Join(notes, "; ")
			return best, fmt.Errorf("openai: calibrate to %d tokens: %w", targetTokens, err)
		}
		// A count that stays put while the text grows (twice) does not
		// measure the text: drop the method and go on with the next one.
		if prev != nil && w > prev.words && n <= prev.tokens {
			flat++
		} else {
			flat = 0
		}
		if flat >= 2 || (w >= maxWords && n < targetTokens) {
			from := w
			if prev != nil {
				from = prev.words
			}
			why := fmt.Sprintf("its count stayed at %d tokens for prompts of %d to %d words", n, from, w)
			c.mu.Lock()
			if c.unresponsive == nil {
				c.unresponsive = map[string]string{}
			}
			c.unresponsive[method] = why
			if c.countMethod == method {
				c.countMethod = ""
			}
			c.mu.Unlock()
			notes = append(notes, method+" ignored: "+why)
			if best.Method == method {
				best, bestGap = measure.Calibration{}, math.MaxInt
			}
			restart()
			continue
		}
		gap := abs(n - targetTokens)
		if gap < bestGap {
			bestGap = gap
			best = measure.Calibration{Prompt: prompt, Words: w, Tokens: n, Target: targetTokens, Method: method}
		}
		best.Iterations = it
		best.Note = strings.Join(notes, "; ")
		if gap <= tol {
			return best, nil
		}
		cur := point{w, n}
		if n < targetTokens {
			lo = cur
		} else {
			hi = cur
		}
		// Secant through the last two points; proportional on the first.
		var next float64
		if prev != nil && cur.tokens != prev.tokens {
			next = float64(cur.words) + float64(targetTokens-cur.tokens)*float64(cur.words-prev.words)/float64(cur.tokens-prev.tokens)
		} else {
			next = float64(cur.words) * float64(targetTokens) / float64(max(1, cur.tokens))
		}
		nw := int(math.Round(next))
		if hi.words >= 0 {
			if hi.words-lo.words <= 1 {
				break // neighbouring word counts straddle the target
			}
			if nw <= lo.words || nw >= hi.words {
				nw = (lo.words + hi.words) / 2
			}
		} else if nw <= lo.words {
			nw = lo.words + 1
		}
		nw = min(max(1, nw), maxWords)
		if nw == w {
			break
		}
		prev = &cur
		w = nw
	}
	return best, fmt.Errorf("openai: calibrate: closest prompt has %d tokens for target %d (tolerance %d) after %d counts",
		best.Tokens, targetTokens, tol, best.Iterations)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
