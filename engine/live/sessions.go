package live

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/engine/load"
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/scenarios"
	"github.com/tollgate-dev/tollgate/stats"
)

// sessionsKind runs multi-turn conversations: each turn sends the whole
// history (the server's own replies, as they came) plus a new user
// message, after a think time; by_turn holds each turn's metrics and
// sessions the per-session figures. Sessions run closed loop (concurrency
// at once) or open loop (rate arrivals per second). A session ends, noted,
// rather than keep a reply over max_reply_bytes or send a history over
// max_history_bytes.
type sessionsKind struct{}

// MaxInFlight is the sessions at once (conversationConns).
func (sessionsKind) MaxInFlight(p *scenarios.Phase) int { return conversationConns(p) }

// sleeper is a sender that waits in its own time: the shape's placeholder
// never sleeps, so think and tool times cost nothing at load.
type sleeper interface {
	sleep(ctx context.Context, d time.Duration) error
}

func (*shapeSender) sleep(context.Context, time.Duration) error { return nil }

// wait pauses a session (think time, tool latency); false when ctx ended.
func (r *runner) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	if s, ok := r.send.(sleeper); ok {
		return s.sleep(ctx, d) == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// shapeReply is the placeholder answer kept for a conversation: a tool
// call when tools are offered and the last message is not a tool result
// (so the shape holds both a tool step and an answer), else text.
func shapeReply(req measure.Request) *measure.Reply {
	if !req.Transcript {
		return nil
	}
	n := len(req.Messages)
	if len(req.Tools) > 0 && n > 0 && req.Messages[n-1].Role != "tool" {
		r := &measure.Reply{ToolCalls: []measure.ToolCall{{ID: "shape", Type: "function", Function: measure.FunctionCall{Name: "shape", Arguments: "{}"}}}}
		if req.Stream {
			r.FirstToolCallMs = report.F(1)
		}
		return r
	}
	return &measure.Reply{Content: "shape"}
}

// conversation is what sessions and agent phases share while they run:
// the executor over sessions (or tasks), the error budget, the aggregates
// and the samples, under one lock.
type conversation struct {
	r      *runner
	p      *scenarios.Phase
	rec    *recorder
	mu     sync.Mutex
	byStep map[int]*fold.Slice
	// stop cancels the phase when its error budget is spent.
	stop    func(error)
	stopErr error
	start   time.Time
	words   int // per user message (or task prompt)
	// notes are the anomalies and byte bounds counted (notes.go).
	notes notes
}

// newConversation sizes user messages by one calibration of the server's
// tokens per word (unless the phase says not to calibrate), as load does.
func (r *runner) newConversation(ctx context.Context, p *scenarios.Phase, ph *report.Phase, planned int) (*conversation, error) {
	size := p.PromptTokens[0]
	c := &conversation{r: r, p: p, rec: r.newRecorder(p, planned), byStep: map[int]*fold.Slice{}, words: max(1, size*3/4)}
	_, c.notes.off = r.send.(*shapeSender)
	cal, err := r.send.calibrate(ctx, size, r.seed(p), measure.CalibrateOptions{Model: r.model, Index: 9_000_000})
	if err != nil && cal.Words == 0 {
		// A server that cannot count tokens still converses: messages are
		// then sized by words, and each turn's prompt_tokens tell the truth.
		r.warnings = append(r.warnings, fmt.Sprintf("%s: user messages are sized by words (about 4/3 tokens each): calibration failed: %v", p.Name, err))
		c.start = time.Now()
		return c, nil
	}
	ph.Calibration = append(ph.Calibration, report.CalibrationResult{TargetTokens: size, Tokens: cal.Tokens, Words: cal.Words,
		Method: cal.Method, Iterations: cal.Iterations, Request: p.Name + " (tokens per word)", Note: cal.Note})
	if cal.Words > 0 && cal.Tokens > 0 {
		c.words = max(1, int(math.Round(float64(size)*float64(cal.Words)/float64(cal.Tokens))))
	}
	c.start = time.Now()
	return c, nil
}

// send sends one step (a turn, an agent step) and folds it under step.
func (c *conversation) send(ctx context.Context, req measure.Request, label string, step, index int) measure.Result {
	startMS := float64(time.Since(c.start).Microseconds()) / 1000
	res, retries := c.r.stream(ctx, req)
	if canceledByUs(res, ctx.Err()) {
		return res
	}
	name := c.requestName(label, step, index)
	c.mu.Lock()
	a := c.byStep[step]
	if a == nil {
		a = c.r.newSlice()
		c.byStep[step] = a
	}
	c.mu.Unlock()
	e := entry{res: res, retries: retries, point: stepWord(c.p) + " " + strconv.Itoa(step), index: index, startMS: startMS, name: name}
	if _, spent := c.rec.record(e, intoSlice(a)); spent {
		c.mu.Lock()
		if c.stopErr == nil {
			c.stopErr = c.rec.spentErr("")
			c.stop(c.stopErr)
		}
		c.mu.Unlock()
	}
	return res
}

// requestName names a step in error examples and notes: "chat session 3
// turn 2", "agent task 0 step 1".
func (c *conversation) requestName(label string, step, index int) string {
	return fmt.Sprintf("%s %s %d %s %d", c.p.Name, label, index, stepWord(c.p), step)
}

func stepWord(p *scenarios.Phase) string {
	if p.Kind == scenarios.PhaseAgent {
		return "step"
	}
	return "turn"
}

// run executes one job per session (or task), closed or open loop, and
// lays out the phase's metrics; the job returns when its session ends.
func (c *conversation) run(ctx context.Context, ph *report.Phase, job func(ctx context.Context, i int)) error {
	p, r := c.p, c.r
	plan := load.Plan{Concurrency: p.Concurrency, MaxRequests: p.Conversation.Sessions}
	if p.Rate > 0 {
		var err error
		plan.Concurrency = 0
		plan.Schedule, err = load.NewSchedule(p.Rate, p.Arrival, p.Burstiness, 0, r.seed(p))
		if err != nil {
			return err
		}
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Sessions run on the grace context, so an interrupt stops new
	// sessions at once and lets requests in flight finish.
	jobCtx, cancelJobs := context.WithCancel(r.hard)
	defer cancelJobs()
	c.stop = func(error) { cancel(); cancelJobs() }
	res := r.send.execute(pctx, plan, func(_ context.Context, i int, _, _ time.Time) { job(jobCtx, i) })
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rec.close(ph)
	ph.Warnings = append(ph.Warnings, r.warnings...)
	if res.DispatchLag != nil {
		// Sessions started late offer fewer than rate: the load point's rule.
		lag := report.StatFrom(res.DispatchLag)
		ph.DispatchLagMS = &lag
		var ttft *float64
		if ph.ServingMetrics != nil {
			ttft = ph.ServingMetrics.TTFTMS.P50
		}
		r.checkLag(p, report.Pointer("runs", r.run.Name, "phases", p.Name), "", lag, ttft)
	}
	if c.stopErr != nil {
		return c.stopErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.rec.overErr("")
}

// steps lays out the per-step aggregates under "1", "2", … in a map.
func (c *conversation) steps() map[string]*report.Point {
	out := map[string]*report.Point{}
	for step, a := range c.byStep {
		out[strconv.Itoa(step)] = &report.Point{ServingMetrics: a.Close()}
	}
	return out
}

// drawMS draws a duration in milliseconds from d (0 when d is nil).
func drawMS(d *scenarios.Dist, rng *rand.Rand) time.Duration {
	if d == nil {
		return 0
	}
	return time.Duration(draw(d, rng)) * time.Millisecond
}

func (sessionsKind) Run(ctx context.Context, r *runner, p *scenarios.Phase, ph *report.Phase) error {
	cv := p.Conversation
	c, err := r.newConversation(ctx, p, ph, cv.Sessions*cv.Turns)
	if err != nil {
		return err
	}
	seed := r.seed(p)
	maxHistory, maxReply := int(cv.MaxHistoryBytes), int(cv.MaxReplyBytes)
	st := &report.SessionStats{Turns: cv.Turns}
	duration, total, think := stats.New(), stats.New(), stats.New()
	err = c.run(ctx, ph, func(ctx context.Context, i int) {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		c.mu.Lock()
		st.Sessions++
		c.mu.Unlock()
		var history []measure.Message
		held := 0 // the history's bytes (messageBytes)
		began := time.Now()
		tokens := 0
		for turn := 1; turn <= cv.Turns; turn++ {
			if turn > 1 && cv.ThinkTimeMS != nil {
				d := drawMS(cv.ThinkTimeMS, rng)
				if !r.wait(ctx, d) {
					return
				}
				c.mu.Lock()
				_ = think.Add(float64(d) / float64(time.Millisecond))
				c.mu.Unlock()
			}
			user := transport.SyntheticPrompt(seed, i*scenarios.MaxConversationTurns+turn, c.words, "")
			if held+len(user) > maxHistory {
				c.mu.Lock()
				c.notes.add(report.NoteMaxHistoryBytes, c.requestName("session", turn, i),
					"its history would be %d bytes (%d kept and a user message of %d), over max_history_bytes %d: not sent, the session ends",
					held+len(user), held, len(user), maxHistory)
				c.mu.Unlock()
				return
			}
			history = append(history, measure.Message{Role: "user", Content: user})
			held += len(user)
			req := r.request("", append([]measure.Message(nil), history...), p.MaxTokens)
			req.Transcript, req.MaxReplyBytes = true, maxReply
			res := c.send(ctx, req, "session", turn, i)
			if res.Err != nil || res.Reply == nil {
				return // a session with a failed turn has no next turn
			}
			if res.PromptTokens != nil && res.CompletionTokens != nil {
				tokens += *res.PromptTokens + *res.CompletionTokens
			}
			if turn == cv.Turns {
				break // the last reply is not kept
			}
			if res.Reply.Dropped {
				c.mu.Lock()
				c.notes.add(report.NoteMaxReplyBytes, c.requestName("session", turn, i),
					"the reply of %d bytes is over max_reply_bytes %d: not kept, so turn %d is not sent and the session ends",
					res.Reply.Bytes, maxReply, turn+1)
				c.mu.Unlock()
				return
			}
			reply := measure.Message{Role: "assistant", Content: res.Reply.Content}
			history = append(history, reply)
			held += messageBytes(reply)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		st.Completed++
		_ = duration.Add(float64(time.Since(began).Microseconds()) / 1000)
		_ = total.Add(float64(tokens))
	})
	if ph.ServingMetrics != nil {
		ph.ByTurn = c.steps()
		st.DurationMS, st.TotalTokens, st.ThinkMS = report.StatFrom(duration), report.StatFrom(total), report.StatFrom(think)
		st.HistoryLimit, st.Notes = c.notes.ended(), c.notes.kept
		ph.Warnings = append(ph.Warnings, c.notes.warnings(p.Name, "session", "sessions")...)
		ph.Sessions = st
	}
	return err
}
