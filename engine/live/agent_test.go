package live

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// scriptCall is one tool call a scripted reply streams: its first piece
// carries the id (none when empty), the name and half the arguments, a
// second piece the rest. noIndex leaves out the index, as some servers
// do, and repeats the id on every piece.
type scriptCall struct {
	id, name, args string
	noIndex        bool
}

// scriptReply is one scripted answer: tool calls, else text.
type scriptReply struct {
	text  string
	calls []scriptCall
}

// scriptedRequest is a streamed chat request a scripted server received.
type scriptedRequest struct {
	Messages []map[string]any `json:"messages"`
	Stream   bool             `json:"stream"`
	bytes    int              // the body's size
}

// step is the request's step in its conversation: 1 + the assistant
// messages its history holds.
func (q scriptedRequest) step() int {
	n := 1
	for _, m := range q.Messages {
		if m["role"] == "assistant" {
			n++
		}
	}
	return n
}

// task is the conversation the request belongs to: its first message.
func (q scriptedRequest) task() string {
	if len(q.Messages) == 0 {
		return ""
	}
	s, _ := q.Messages[0]["content"].(string)
	return s
}

// role counts the request's messages of role.
func (q scriptedRequest) role(role string) int {
	n := 0
	for _, m := range q.Messages {
		if m["role"] == role {
			n++
		}
	}
	return n
}

// scriptedServer streams script(request) to every streamed chat request
// and keeps those requests; it counts no tokens and refuses requests that
// are not streamed, so calibration fails and user messages are sized by
// words (prompt_tokens × 3/4). It never reads the scenario: what it sent
// is what the tests count from.
func scriptedServer(t *testing.T, script func(q scriptedRequest) scriptReply) (*httptest.Server, func() []scriptedRequest) {
	t.Helper()
	var mu sync.Mutex
	var seen []scriptedRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":[{"id":"m"}]}`))
			return
		}
		var q scriptedRequest
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &q)
		q.bytes = len(data)
		if !q.Stream {
			http.Error(w, "streamed requests only", http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen = append(seen, q)
		mu.Unlock()
		reply := script(q)
		w.Header().Set("Content-Type", "text/event-stream")
		event := func(delta any, finish any) {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		finish := "stop"
		if len(reply.calls) > 0 {
			finish = "tool_calls"
		}
		if reply.text != "" {
			// In pieces of at most 64 KiB, as a server streams tokens.
			for s := reply.text; s != ""; {
				n := min(len(s), 64<<10)
				event(map[string]any{"content": s[:n]}, nil)
				s = s[n:]
			}
		}
		for k, c := range reply.calls {
			half := len(c.args) / 2
			for p, args := range []string{c.args[:half], c.args[half:]} {
				piece := map[string]any{"function": map[string]any{"arguments": args}}
				if !c.noIndex {
					piece["index"] = k
				}
				if c.id != "" && (p == 0 || c.noIndex) {
					piece["id"] = c.id
				}
				if p == 0 {
					piece["type"] = "function"
					piece["function"].(map[string]any)["name"] = c.name
				}
				event(map[string]any{"tool_calls": []any{piece}}, nil)
			}
		}
		event(map[string]any{}, finish)
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, func() []scriptedRequest {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

const agentTools = `
    tools:
      - {name: search, parameters: {type: object, properties: {q: {type: string}}, required: [q]}}
      - {name: fetch, parameters: {type: object, properties: {url: {type: string}}}}`

// agentScenario is an agent phase of tasks tasks at once against url,
// with extra keys.
func agentScenario(t *testing.T, url string, tasks int, extra string) *scenarios.Scenario {
	t.Helper()
	return parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  agent:
    kind: agent
    sessions: %d
    concurrency: %d
    prompt_tokens: 8
    max_tokens: 8
%s%s
`, url, tasks, tasks, extra, agentTools), nil)
}

// Each tool-call anomaly is its own count with a note naming the request;
// duplicate ids, unknown tools and invalid arguments are answered, a call
// without an id is not (its task ends unanswerable). The expected numbers
// follow from the script: 3 tasks, each calling the row's calls at step 1
// and answering in text at step 2.
func TestAgentToolCallAnomalies(t *testing.T) {
	const tasks = 3
	type counts struct{ invalid, unknown, duplicate, missing int }
	for _, tc := range []struct {
		name  string
		calls []scriptCall
		// per task
		want counts
		// answered: the step-1 calls are answered and the task answered
		// at step 2; else it ends unanswerable after step 1.
		answered bool
		// ids are the tool_call_ids step 2 sends, in order.
		ids  []string
		note string // the kind of the notes, "" for none
	}{
		{name: "well formed", calls: []scriptCall{{id: "a", name: "search", args: `{"q": "x"}`}, {id: "b", name: "fetch", args: `{}`}},
			answered: true, ids: []string{"a", "b"}},
		{name: "an id repeated on every piece without an index is one call", calls: []scriptCall{{id: "a", name: "search", args: `{"q": "x"}`, noIndex: true}, {id: "b", name: "fetch", args: `{}`, noIndex: true}},
			answered: true, ids: []string{"a", "b"}},
		{name: "two calls with one id", calls: []scriptCall{{id: "a", name: "search", args: `{"q": "x"}`}, {id: "a", name: "fetch", args: `{}`}},
			want: counts{duplicate: 1}, answered: true, ids: []string{"a", "a"}, note: report.NoteDuplicateID},
		{name: "a call without an id", calls: []scriptCall{{id: "a", name: "search", args: `{"q": "x"}`}, {name: "fetch", args: `{}`}},
			want: counts{missing: 1}, note: report.NoteMissingID},
		{name: "a tool never offered", calls: []scriptCall{{id: "a", name: "rm_rf", args: `{"path": "/"}`}},
			want: counts{unknown: 1}, answered: true, ids: []string{"a"}, note: report.NoteUnknownTool},
		{name: "arguments the schema refuses", calls: []scriptCall{{id: "a", name: "search", args: `{"query": "x"}`}, {id: "b", name: "fetch", args: `{"url": `}},
			want: counts{invalid: 2}, answered: true, ids: []string{"a", "b"}, note: report.NoteInvalidArguments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, seen := scriptedServer(t, func(q scriptedRequest) scriptReply {
				if q.step() == 1 {
					return scriptReply{calls: tc.calls}
				}
				return scriptReply{text: "done"}
			})
			r, err := runFirst(t, agentScenario(t, srv.URL, tasks, ""), nil)
			if err != nil {
				t.Fatal(err)
			}
			ph := r.Phases["agent"]
			a := ph.Agent
			got := counts{a.InvalidArguments, a.UnknownTool, a.DuplicateID, a.MissingID}
			want := counts{tc.want.invalid * tasks, tc.want.unknown * tasks, tc.want.duplicate * tasks, tc.want.missing * tasks}
			if got != want {
				t.Errorf("anomalies %+v, want %+v", got, want)
			}
			n := len(tc.calls)
			wantAnswered, wantUnanswerable, wantToolCalls := tasks, 0, n*tasks
			if !tc.answered {
				wantAnswered, wantUnanswerable, wantToolCalls = 0, tasks, 0
			}
			if a.Tasks != tasks || a.Answered != wantAnswered || a.Unanswerable != wantUnanswerable || a.ToolCallsReceived != n*tasks || a.ToolCalls != wantToolCalls {
				t.Errorf("tasks %d, answered %d, unanswerable %d, tool calls %d of %d received; want %d, %d, %d, %d of %d",
					a.Tasks, a.Answered, a.Unanswerable, a.ToolCalls, a.ToolCallsReceived, tasks, wantAnswered, wantUnanswerable, wantToolCalls, n*tasks)
			}
			// What the server was sent back.
			second := 0
			for _, q := range seen() {
				if q.step() != 2 {
					continue
				}
				second++
				var ids []string
				for _, m := range q.Messages {
					if m["role"] == "tool" {
						id, _ := m["tool_call_id"].(string)
						ids = append(ids, id)
					}
				}
				if !slices.Equal(ids, tc.ids) {
					t.Errorf("step 2 answers tool_call_ids %q, want %q", ids, tc.ids)
				}
			}
			if want := map[bool]int{true: tasks}[tc.answered]; second != want {
				t.Errorf("%d step-2 requests, want %d", second, want)
			}
			// Each anomaly is noted, naming its request, and warned of once.
			if tc.note == "" {
				if len(a.Notes) != 0 {
					t.Errorf("notes %+v, want none", a.Notes)
				}
				return
			}
			if len(a.Notes) == 0 {
				t.Fatalf("no notes, want %s", tc.note)
			}
			for _, nt := range a.Notes {
				if nt.Kind != tc.note || !strings.HasPrefix(nt.Request, "agent task ") || !strings.HasSuffix(nt.Request, " step 1") || nt.Message == "" {
					t.Errorf("note %+v, want kind %s naming a task's step 1", nt, tc.note)
				}
			}
			warned := 0
			for _, w := range ph.Warnings {
				if strings.Contains(w, "agent."+tc.note) {
					warned++
					t.Log(w)
				}
			}
			if warned != 1 {
				t.Errorf("%d warnings name agent.%s, want 1: %q", warned, tc.note, ph.Warnings)
			}
		})
	}
}

// agent.tool_calls counts the calls answered and tool_calls_received every
// call of every reply kept. The numbers the report gives are held against
// the server's own record: the calls it sent, and the role tool messages
// it was sent back (each task's last request holds them all).
func TestAgentToolCallsCountTheAnswered(t *testing.T) {
	const tasks = 3
	for _, tc := range []struct {
		name     string
		maxSteps int
		// perStep are the calls step s makes (perStep[s-1]); past the
		// list the model answers in text.
		perStep []int
		// received and answered per task, worked out from the script.
		received, answered int
		stepLimit          bool
	}{
		// 1 + 2 + 3 calls; the third step's are never answered.
		{name: "still calling at max_steps", maxSteps: 3, perStep: []int{1, 2, 3, 3}, received: 6, answered: 3, stepLimit: true},
		{name: "answered at the third step", maxSteps: 5, perStep: []int{2, 1}, received: 3, answered: 3},
		{name: "a single step", maxSteps: 1, perStep: []int{4}, received: 4, answered: 0, stepLimit: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, seen := scriptedServer(t, func(q scriptedRequest) scriptReply {
				s := q.step()
				if s > len(tc.perStep) {
					return scriptReply{text: "done"}
				}
				var calls []scriptCall
				for k := range tc.perStep[s-1] {
					calls = append(calls, scriptCall{id: fmt.Sprintf("s%dc%d", s, k), name: "fetch", args: "{}"})
				}
				return scriptReply{calls: calls}
			})
			r, err := runFirst(t, agentScenario(t, srv.URL, tasks, fmt.Sprintf("    max_steps: %d", tc.maxSteps)), nil)
			if err != nil {
				t.Fatal(err)
			}
			a := r.Phases["agent"].Agent
			// The server's count: calls it sent, tool messages it got back.
			sent, backByTask := 0, map[string]int{}
			for _, q := range seen() {
				if s := q.step(); s <= len(tc.perStep) {
					sent += tc.perStep[s-1]
				}
				backByTask[q.task()] = max(backByTask[q.task()], q.role("tool"))
			}
			back := 0
			for _, n := range backByTask {
				back += n
			}
			if len(backByTask) != tasks {
				t.Fatalf("the server saw %d tasks, want %d", len(backByTask), tasks)
			}
			if a.ToolCallsReceived != sent || a.ToolCalls != back {
				t.Errorf("report: %d received, %d answered; server: %d sent, %d tool messages back", a.ToolCallsReceived, a.ToolCalls, sent, back)
			}
			if a.ToolCallsReceived != tc.received*tasks || a.ToolCalls != tc.answered*tasks {
				t.Errorf("%d received, %d answered; want %d, %d", a.ToolCallsReceived, a.ToolCalls, tc.received*tasks, tc.answered*tasks)
			}
			if tc.stepLimit != (a.StepLimit == tasks) || a.StepLimit+a.Answered != tasks {
				t.Errorf("step limit %d, answered %d of %d tasks", a.StepLimit, a.Answered, tasks)
			}
		})
	}
}

// One bound, two names: what scenarios lets max_reply_bytes be is what the
// OpenAI transcript keeps at most.
func TestMaxKeptReplyBytesIsTheTranscripts(t *testing.T) {
	if scenarios.MaxKeptReplyBytes != openai.MaxReplyBytes {
		t.Fatalf("scenarios.MaxKeptReplyBytes %d, openai.MaxReplyBytes %d", scenarios.MaxKeptReplyBytes, openai.MaxReplyBytes)
	}
}
