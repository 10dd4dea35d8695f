package live

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
	"github.com/tollgate-dev/tollgate/stats"
)

// agentKind runs agentic tasks: each request offers the phase's tools;
// while the answer calls tools, tollgate waits a simulated tool latency
// and sends each call's result back (role tool, tool_call_id), until the
// model answers without a call or the task reaches max_steps. by_step
// holds each step's metrics and agent the per-task figures.
type agentKind struct{}

// MaxInFlight is the tasks at once (conversationConns).
func (agentKind) MaxInFlight(p *scenarios.Phase) int { return conversationConns(p) }

// conversationConns sizes the keep-alive pool for a conversation phase:
// its sessions at once, or a generous bound for an open loop.
func conversationConns(p *scenarios.Phase) int {
	if p.Rate > 0 {
		return min(max(p.Conversation.Sessions, 4), 256)
	}
	return p.Concurrency
}

func (agentKind) Run(ctx context.Context, r *runner, p *scenarios.Phase, ph *report.Phase) error {
	cv := p.Conversation
	c, err := r.newConversation(ctx, p, ph, 0) // the steps of a task are not known in advance
	if err != nil {
		return err
	}
	seed := r.seed(p)
	tools := make([]json.RawMessage, len(cv.Tools))
	schemas := map[string]*jsonschema.Schema{}
	for i, t := range cv.Tools {
		tools[i] = t.Definition
		schemas[t.Name] = t.Schema
	}
	resultWords := max(1, cv.ToolResultTokens*3/4)
	st := &report.AgentStats{}
	firstTool, stepLat, steps, taskE2E, toolLat := stats.New(), stats.New(), stats.New(), stats.New(), stats.New()
	err = c.run(ctx, ph, func(ctx context.Context, i int) {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		c.mu.Lock()
		st.Tasks++
		c.mu.Unlock()
		task := transport.SyntheticPrompt(seed, i*scenarios.MaxAgentSteps, c.words, "")
		history := []measure.Message{{Role: "user", Content: task}}
		began := time.Now()
		for step := 1; ; step++ {
			req := r.request("", append([]measure.Message(nil), history...), p.MaxTokens)
			req.Tools, req.Transcript = tools, true
			res := c.send(ctx, req, "task", step, i)
			if ctx.Err() != nil {
				return
			}
			c.mu.Lock()
			if res.Err != nil || res.Reply == nil {
				st.Failed++
				c.mu.Unlock()
				return
			}
			_ = stepLat.Add(res.E2EMS)
			calls := res.Reply.ToolCalls
			if len(calls) > 0 && res.Reply.FirstToolCallMs != nil {
				_ = firstTool.Add(*res.Reply.FirstToolCallMs)
			}
			st.ToolCalls += len(calls)
			for _, call := range calls {
				if !validArguments(schemas, call) {
					st.InvalidArguments++
				}
			}
			done := len(calls) == 0 || step >= cv.MaxSteps
			if done {
				if len(calls) == 0 {
					st.Answered++
				} else {
					st.StepLimit++
				}
				_ = steps.Add(float64(step))
				_ = taskE2E.Add(float64(time.Since(began).Microseconds()) / 1000)
			}
			c.mu.Unlock()
			if done {
				return
			}
			// The calls of one answer run at once: the step waits for the slowest.
			var wait time.Duration
			history = append(history, measure.Message{Role: "assistant", Content: res.Reply.Content, ToolCalls: calls})
			for k, call := range calls {
				wait = max(wait, drawMS(cv.ToolLatencyMS, rng))
				result := transport.SyntheticPrompt(seed, i*scenarios.MaxAgentSteps*openai.MaxToolCalls+step*openai.MaxToolCalls+k, resultWords, "")
				history = append(history, measure.Message{Role: "tool", ToolCallID: call.ID, Content: result})
			}
			if cv.ToolLatencyMS != nil {
				c.mu.Lock()
				_ = toolLat.Add(float64(wait) / float64(time.Millisecond))
				c.mu.Unlock()
			}
			if !r.wait(ctx, wait) {
				return
			}
		}
	})
	if ph.ServingMetrics != nil {
		ph.ByStep = c.steps()
		if _, shape := r.send.(*shapeSender); shape {
			// How many steps a task takes is the model's choice: a gate may
			// read any step, and finds out at run time whether one was reached.
			// Its one step stands for both kinds: tool calls and answers.
			ph.ByStep = map[string]*report.Point{"*": {ServingMetrics: ph.ServingMetrics}}
		}
		st.TimeToFirstToolCallMS, st.StepLatencyMS, st.StepsPerTask = report.StatFrom(firstTool), report.StatFrom(stepLat), report.StatFrom(steps)
		st.TaskE2EMS, st.ToolLatencyMS = report.StatFrom(taskE2E), report.StatFrom(toolLat)
		ph.Agent = st
	}
	return err
}

// validArguments reports whether a call names an offered tool and its
// arguments are JSON that its parameters schema accepts.
func validArguments(schemas map[string]*jsonschema.Schema, call measure.ToolCall) bool {
	sch, ok := schemas[call.Function.Name]
	if !ok {
		return false
	}
	var v any
	if err := json.Unmarshal([]byte(call.Function.Arguments), &v); err != nil {
		return false
	}
	return sch == nil || sch.Validate(v) == nil
}
