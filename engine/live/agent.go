package live

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/internal/safefile"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
	"github.com/tollgate-dev/tollgate/stats"
)

// agentKind runs agentic tasks: each request offers the phase's tools;
// while the answer calls tools, tollgate waits a simulated tool latency
// and sends each call's result back (role tool, tool_call_id), until the
// model answers without a call or the task reaches max_steps. by_step
// holds each step's metrics and agent the per-task figures. Each call's
// anomalies are noted (toolCallAnomalies); a call without an id cannot be
// answered and ends its task, and the history is bounded in bytes as a
// session's is.
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
	maxHistory, maxReply := int(cv.MaxHistoryBytes), int(cv.MaxReplyBytes)
	st := &report.AgentStats{}
	firstTool, stepLat, steps, taskE2E, toolLat := stats.New(), stats.New(), stats.New(), stats.New(), stats.New()
	err = c.run(ctx, ph, func(ctx context.Context, i int) {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		c.mu.Lock()
		st.Tasks++
		c.mu.Unlock()
		task := transport.SyntheticPrompt(seed, i*scenarios.MaxAgentSteps, c.words, "")
		if len(task) > maxHistory {
			c.mu.Lock()
			c.notes.add(report.NoteMaxHistoryBytes, c.requestName("task", 1, i),
				"the task prompt of %d bytes is over max_history_bytes %d: not sent, the task ends", len(task), maxHistory)
			c.mu.Unlock()
			return
		}
		history := []measure.Message{{Role: "user", Content: task}}
		held := len(task) // the history's bytes (messageBytes)
		began := time.Now()
		answering := 0 // the calls the next request's tool messages answer
		for step := 1; ; step++ {
			req := r.request("", append([]measure.Message(nil), history...), p.MaxTokens)
			req.Tools, req.Transcript, req.MaxReplyBytes = tools, true, maxReply
			res := c.send(ctx, req, "task", step, i)
			if ctx.Err() != nil {
				return
			}
			name := c.requestName("task", step, i)
			c.mu.Lock()
			st.ToolCalls += answering // sent back, whatever this step's answer
			if res.Err != nil || res.Reply == nil {
				st.Failed++
				c.mu.Unlock()
				return
			}
			_ = stepLat.Add(res.E2EMS)
			calls := res.Reply.ToolCalls
			called := len(calls) > 0 || res.Reply.CalledTools
			if called && res.Reply.FirstToolCallMs != nil {
				_ = firstTool.Add(*res.Reply.FirstToolCallMs)
			}
			st.ToolCallsReceived += len(calls)
			missing := c.toolCallAnomalies(name, schemas, calls)
			// A task ends answered, at the step limit (both finished), at
			// a byte bound or unanswerable; else its calls are answered.
			stop, finished := true, true
			switch {
			case !called:
				st.Answered++
			case step >= cv.MaxSteps:
				st.StepLimit++
			case res.Reply.Dropped:
				c.notes.add(report.NoteMaxReplyBytes, name, "the reply of %d bytes is over max_reply_bytes %d: not kept, so its tool calls are not answered and the task ends",
					res.Reply.Bytes, maxReply)
				finished = false
			case missing:
				st.Unanswerable++
				finished = false
			default:
				stop, finished = false, false
			}
			if finished {
				_ = steps.Add(float64(step))
				_ = taskE2E.Add(float64(time.Since(began).Microseconds()) / 1000)
			}
			c.mu.Unlock()
			if stop {
				return
			}
			// The calls of one answer run at once: the step waits for the slowest.
			var wait time.Duration
			next := append(history, measure.Message{Role: "assistant", Content: res.Reply.Content, ToolCalls: calls})
			replyBytes := messageBytes(next[len(next)-1])
			grown := held + replyBytes
			for k, call := range calls {
				wait = max(wait, drawMS(cv.ToolLatencyMS, rng))
				result := measure.Message{Role: "tool", ToolCallID: call.ID,
					Content: transport.SyntheticPrompt(seed, i*scenarios.MaxAgentSteps*openai.MaxToolCalls+step*openai.MaxToolCalls+k, resultWords, "")}
				if grown += messageBytes(result); grown > maxHistory {
					break
				}
				next = append(next, result)
			}
			if grown > maxHistory {
				c.mu.Lock()
				c.notes.add(report.NoteMaxHistoryBytes, c.requestName("task", step+1, i),
					"its history would be at least %d bytes (%d kept, then a reply of %d and its %d tool results), over max_history_bytes %d: not sent, the task ends",
					grown, held, replyBytes, len(calls), maxHistory)
				c.mu.Unlock()
				return
			}
			history, held, answering = next, grown, len(calls)
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
		n := &c.notes
		st.InvalidArguments, st.UnknownTool = n.count[report.NoteInvalidArguments], n.count[report.NoteUnknownTool]
		st.DuplicateID, st.MissingID = n.count[report.NoteDuplicateID], n.count[report.NoteMissingID]
		st.HistoryLimit, st.Notes = n.ended(), n.kept
		ph.Warnings = append(ph.Warnings, n.warnings(p.Name, "task", "agent")...)
		ph.Agent = st
	}
	return err
}

// toolCallAnomalies notes what is wrong with the calls of one reply (the
// request named name), one note per call and kind, and reports whether a
// call has no id. Each kind is decided alone: a call may have several.
// Under c.mu.
func (c *conversation) toolCallAnomalies(name string, schemas map[string]*jsonschema.Schema, calls []measure.ToolCall) (missing bool) {
	first := map[string]int{} // id → the first call with it
	for k, call := range calls {
		fn := safefile.Excerpt(call.Function.Name)
		if call.ID == "" {
			missing = true
			c.notes.add(report.NoteMissingID, name, "call %d (%s) has no id, which its tool message must name: the reply is not answered and the task ends", k, fn)
		} else if j, ok := first[call.ID]; ok {
			c.notes.add(report.NoteDuplicateID, name, "call %d (%s) has the id %s of call %d: both are answered, in order, under that id", k, fn, safefile.Excerpt(call.ID), j)
		} else {
			first[call.ID] = k
		}
		sch, offered := schemas[call.Function.Name]
		if !offered {
			c.notes.add(report.NoteUnknownTool, name, "call %d names %s, a tool the request did not offer (%s): answered with a synthetic result", k, fn, offeredTools(schemas))
			continue
		}
		if err := checkArguments(sch, call.Function.Arguments); err != nil {
			c.notes.add(report.NoteInvalidArguments, name, "call %d (%s): %v", k, fn, err)
		}
	}
	return missing
}

// offeredTools lists the offered tools' names, sorted.
func offeredTools(schemas map[string]*jsonschema.Schema) string {
	names := make([]string, 0, len(schemas))
	for n := range schemas {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// checkArguments says why a call's arguments are not what an offered
// tool takes: not JSON, or not matching its parameters schema (nil: they
// are).
func checkArguments(sch *jsonschema.Schema, args string) error {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return fmt.Errorf("arguments %s are not JSON: %w", safefile.Excerpt(args), err)
	}
	if sch == nil {
		return nil
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("arguments %s do not match the tool's parameters: %s", safefile.Excerpt(args), safefile.Excerpt(schemaLeaf(err)))
	}
	return nil
}

// schemaLeaf is the first line of a validation error that says what is
// wrong ("at ”: missing property 'q'"), without the schema's URL.
func schemaLeaf(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for _, l := range lines[1:] {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "- ") {
			return strings.TrimPrefix(t, "- ")
		}
	}
	return lines[0]
}
