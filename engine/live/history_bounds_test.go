package live

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// A session's history is bounded in bytes: a reply over max_reply_bytes is
// not kept and a turn whose history would pass max_history_bytes is not
// sent; either ends the session (history_limit) with a note naming the
// bound, and no request the server sees is larger than the bound allows.
// User messages are about 50 bytes here (prompt_tokens 8); replies are the
// row's size, whatever max_tokens asked for.
func TestSessionHistoryBounds(t *testing.T) {
	t.Parallel() // its own simulator; it waits on the clock
	const sessions = 2
	for _, tc := range []struct {
		name       string
		replyBytes int
		turns      int
		extra      string
		// sent is the turns each session sends; ended whether it ends at
		// a bound (note), else it completes.
		sent int
		note string
	}{
		// max_tokens 8: the default max_reply_bytes is its floor, 64 KiB.
		{name: "a reply over the default max_reply_bytes", replyBytes: 100 << 10, turns: 4, sent: 1, note: report.NoteMaxReplyBytes},
		{name: "the last turn's reply is not kept, so not bounded", replyBytes: 100 << 10, turns: 1, sent: 1},
		{name: "max_reply_bytes raised keeps it", replyBytes: 100 << 10, turns: 3, extra: "max_reply_bytes: 128KiB", sent: 3},
		// 3 user messages and 2 replies of 40,000 bytes fit 100,000 bytes;
		// the 4th turn's history (3 replies) would not.
		{name: "a history over max_history_bytes", replyBytes: 40_000, turns: 6, extra: "max_history_bytes: 100000", sent: 3, note: report.NoteMaxHistoryBytes},
		// max_tokens 8, 40 turns: the default max_history_bytes is its
		// floor, 1 MiB. 17 replies of 61,440 bytes and 18 user messages fit
		// it (1,045,380 bytes or so); 18 replies do not.
		{name: "the default max_history_bytes", replyBytes: 60 << 10, turns: 40, sent: 18, note: report.NoteMaxHistoryBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply := strings.Repeat("x", tc.replyBytes)
			srv, seen := scriptedServer(t, func(scriptedRequest) scriptReply { return scriptReply{text: reply} })
			sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  chat: {kind: sessions, sessions: %d, concurrency: %d, turns: %d, prompt_tokens: 8, max_tokens: 8, %s}
`, srv.URL, sessions, sessions, tc.turns, tc.extra), nil)
			bound := int(sc.Runs[0].Phases[0].MaxHistoryBytes)
			r, err := runFirst(t, sc, nil)
			if err != nil {
				t.Fatal(err)
			}
			ph := r.Phases["chat"]
			s := ph.Sessions
			wantEnded := map[bool]int{true: sessions}[tc.note != ""]
			if s.Sessions != sessions || s.HistoryLimit != wantEnded || s.Completed != sessions-wantEnded {
				t.Errorf("sessions %d, history_limit %d, completed %d; want %d, %d, %d", s.Sessions, s.HistoryLimit, s.Completed, sessions, wantEnded, sessions-wantEnded)
			}
			perSession := map[string]int{}
			largest := 0
			for _, q := range seen() {
				perSession[q.task()]++
				largest = max(largest, q.bytes)
			}
			for task, n := range perSession {
				if n != tc.sent {
					t.Errorf("session %.12q… sent %d turns, want %d", task, n, tc.sent)
				}
			}
			if len(perSession) != sessions || len(ph.ByTurn) != tc.sent {
				t.Errorf("%d sessions seen, by_turn has %d turns; want %d, %d", len(perSession), len(ph.ByTurn), sessions, tc.sent)
			}
			// The body holds the history, JSON-quoted, and a few hundred
			// bytes of fields: never more than a little over the bound.
			if largest > bound+4096 {
				t.Errorf("a request of %d bytes, over max_history_bytes %d", largest, bound)
			}
			if tc.note == "" {
				if len(s.Notes) != 0 {
					t.Errorf("notes %+v", s.Notes)
				}
				return
			}
			if len(s.Notes) != sessions {
				t.Fatalf("notes %+v, want one per session", s.Notes)
			}
			for _, n := range s.Notes {
				if n.Kind != tc.note || !strings.HasPrefix(n.Request, "chat session ") || !strings.Contains(n.Message, tc.note) {
					t.Errorf("note %+v, want kind %s naming a request", n, tc.note)
				}
			}
			if w := strings.Join(ph.Warnings, "\n"); !strings.Contains(w, "ended at "+tc.note) || !strings.Contains(w, "sessions.history_limit") {
				t.Errorf("warnings %q", ph.Warnings)
			}
			t.Log(s.Notes[0].Request + ": " + s.Notes[0].Message)
		})
	}
}

// A task's history is bounded as a session's: its tool results count
// towards max_history_bytes, and a reply with calls over max_reply_bytes
// cannot be answered (its calls were not kept). A final answer over it
// needs no keeping: the task is answered.
func TestAgentHistoryBounds(t *testing.T) {
	const tasks = 2
	big := `{"q": "` + strings.Repeat("x", 100<<10) + `"}`
	for _, tc := range []struct {
		name   string
		script func(step int) scriptReply
		extra  string
		// per task: steps sent, calls received and answered; how the
		// task ends.
		steps, received, answered int
		note                      string // history_limit with this note, else answered
	}{
		{name: "tool results over max_history_bytes", extra: "tool_result_tokens: 4000\n    max_history_bytes: 30KiB",
			script: func(step int) scriptReply {
				return scriptReply{calls: []scriptCall{{id: "a", name: "fetch", args: "{}"}, {id: "b", name: "fetch", args: "{}"}}}
			},
			steps: 1, received: 2, answered: 0, note: report.NoteMaxHistoryBytes},
		{name: "tool results within max_history_bytes", extra: "tool_result_tokens: 4000\n    max_history_bytes: 100KiB",
			script: func(step int) scriptReply {
				if step == 1 {
					return scriptReply{calls: []scriptCall{{id: "a", name: "fetch", args: "{}"}, {id: "b", name: "fetch", args: "{}"}}}
				}
				return scriptReply{text: "done"}
			},
			steps: 2, received: 2, answered: 2},
		{name: "a reply with calls over max_reply_bytes", script: func(step int) scriptReply {
			return scriptReply{calls: []scriptCall{{id: "a", name: "search", args: big}}}
		}, steps: 1, received: 0, answered: 0, note: report.NoteMaxReplyBytes},
		{name: "a final answer over max_reply_bytes", script: func(step int) scriptReply {
			if step == 1 {
				return scriptReply{calls: []scriptCall{{id: "a", name: "fetch", args: "{}"}}}
			}
			return scriptReply{text: big}
		}, steps: 2, received: 1, answered: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, seen := scriptedServer(t, func(q scriptedRequest) scriptReply { return tc.script(q.step()) })
			sc := agentScenario(t, srv.URL, tasks, "    "+tc.extra)
			bound := int(sc.Runs[0].Phases[0].MaxHistoryBytes)
			r, err := runFirst(t, sc, nil)
			if err != nil {
				t.Fatal(err)
			}
			ph := r.Phases["agent"]
			a := ph.Agent
			wantEnded := map[bool]int{true: tasks}[tc.note != ""]
			if a.Tasks != tasks || a.HistoryLimit != wantEnded || a.Answered != tasks-wantEnded {
				t.Errorf("tasks %d, history_limit %d, answered %d; want %d, %d, %d", a.Tasks, a.HistoryLimit, a.Answered, tasks, wantEnded, tasks-wantEnded)
			}
			if a.ToolCallsReceived != tc.received*tasks || a.ToolCalls != tc.answered*tasks {
				t.Errorf("%d calls received, %d answered; want %d, %d", a.ToolCallsReceived, a.ToolCalls, tc.received*tasks, tc.answered*tasks)
			}
			perTask := map[string]int{}
			for _, q := range seen() {
				perTask[q.task()]++
				if q.bytes > bound+4096 {
					t.Errorf("a request of %d bytes, over max_history_bytes %d", q.bytes, bound)
				}
			}
			for task, n := range perTask {
				if n != tc.steps {
					t.Errorf("task %.12q… sent %d steps, want %d", task, n, tc.steps)
				}
			}
			if tc.note == "" {
				if len(a.Notes) != 0 {
					t.Errorf("notes %+v", a.Notes)
				}
				return
			}
			if len(a.Notes) != tasks || a.Notes[0].Kind != tc.note || !strings.HasPrefix(a.Notes[0].Request, "agent task ") {
				t.Fatalf("notes %+v, want one %s per task", a.Notes, tc.note)
			}
			if w := strings.Join(ph.Warnings, "\n"); !strings.Contains(w, "tasks ended at "+tc.note) || !strings.Contains(w, "agent.history_limit") {
				t.Errorf("warnings %q", ph.Warnings)
			}
			t.Log(a.Notes[0].Request + ": " + a.Notes[0].Message)
		})
	}
}
