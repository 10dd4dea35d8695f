package anthropic

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

// wireEvent is one SSE event at its arrival time (ms).
type wireEvent struct {
	at         float64
	name, data string
}

func feed(t *testing.T, acc interface{ Event(*sse.Event) error }, evs []wireEvent) {
	t.Helper()
	for _, e := range evs {
		ev := &sse.Event{Name: []byte(e.name), Data: []byte(e.data), At: time.Duration(e.at * float64(time.Millisecond))}
		if err := acc.Event(ev); err != nil {
			t.Fatalf("event %q: %v", e.data, err)
		}
	}
}

// TestSameTimingSameMetrics: an OpenAI stream and a Messages API stream
// carrying the same tokens at the same times, with the same counts, give
// the same metrics (but for the stream facts of each wire format: how many
// events, the end marker, the finish reason's spelling).
func TestSameTimingSameMetrics(t *testing.T) {
	oaUsage := func(prompt, compl, cached int) wireEvent {
		return wireEvent{name: "", data: fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`, prompt, compl, cached)}
	}
	oaContent := func(at float64, s string) wireEvent {
		return wireEvent{at: at, data: `{"choices":[{"index":0,"delta":{"content":"` + s + `"}}]}`}
	}
	oaReasoning := func(at float64, s string) wireEvent {
		return wireEvent{at: at, data: `{"choices":[{"index":0,"delta":{"reasoning_content":"` + s + `"}}]}`}
	}
	oaTool := func(at float64, args string) wireEvent {
		return wireEvent{at: at, data: `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"` + args + `"}}]}}]}`}
	}
	oaFinish := func(at float64) wireEvent {
		return wireEvent{at: at, data: `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`}
	}
	an := func(at float64, data string) wireEvent { return wireEvent{at: at, data: data} }
	bareStart := `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"m"}}`
	toolStart := `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"c","name":"f","input":{}}}`
	toolDelta := func(s string) string {
		return `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"` + s + `"}}`
	}
	// msgStart's usage: input_tokens 10 and cache_read_input_tokens 4, so
	// prompt 14 of which 4 cached, as the OpenAI usage below says.
	tests := []struct {
		name             string
		openai, messages []wireEvent
		// present are figures both must have (so the case tests them).
		present []string
	}{
		{
			name: "reasoning then answer, with usage",
			openai: []wireEvent{oaReasoning(10, "a"), oaReasoning(20, "b"), oaReasoning(30, "c"),
				oaContent(45, "x"), oaContent(50, "y"), oaContent(70, "z"), oaFinish(71), at(71, oaUsage(14, 6, 4))},
			messages: []wireEvent{an(3, msgStart), an(9, thinkStart), an(10, thinkDelta("a")), an(20, thinkDelta("b")), an(30, thinkDelta("c")),
				an(31, blockStop), an(40, textStart), an(45, textDelta("x")), an(50, textDelta("y")), an(70, textDelta("z")),
				an(70, textStop), an(71, msgDelta(6)), an(72, msgStop)},
			present: []string{"ttfo_ms", "reasoning_tokens_per_s", "answer_tokens_per_s", "decode_tokens_per_s", "prefill_tokens_per_s", "cached_tokens"},
		},
		{
			name:     "1-token answer",
			openai:   []wireEvent{oaContent(12, "x"), oaFinish(13), at(13, oaUsage(14, 1, 4))},
			messages: []wireEvent{an(3, msgStart), an(4, textStart), an(12, textDelta("x")), an(12, textStop), an(13, msgDelta(1)), an(14, msgStop)},
			present:  []string{"ttfo_ms", "prefill_tokens_per_s"},
		},
		{
			// Neither server counts: the token events are counted.
			name:   "no usage",
			openai: []wireEvent{oaContent(12, "x"), oaContent(22, "y"), oaContent(42, "z")},
			messages: []wireEvent{an(3, bareStart), an(4, textStart), an(12, textDelta("x")), an(22, textDelta("y")), an(42, textDelta("z")), an(42, textStop),
				an(43, `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`), an(43, msgStop)},
		},
		{
			name:   "tool calls only",
			openai: []wireEvent{oaTool(15, ""), oaTool(25, "{\\\"q\\\""), oaTool(35, ":1}"), oaFinish(36), at(36, oaUsage(14, 9, 4))},
			messages: []wireEvent{an(3, msgStart), an(15, toolStart), an(25, toolDelta("{\\\"q\\\"")), an(35, toolDelta(":1}")),
				an(35, `{"type":"content_block_stop","index":2}`), an(36, msgDelta(9)), an(37, msgStop)},
			present: []string{"decode_tokens_per_s", "tpot_ms"},
		},
		{
			// The stream broke after two tokens: no usage, no end marker.
			name:     "cut mid-stream",
			openai:   []wireEvent{oaContent(12, "x"), oaContent(27, "y")},
			messages: []wireEvent{an(3, bareStart), an(4, textStart), an(12, textDelta("x")), an(27, textDelta("y"))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end := 80 * time.Millisecond
			oa := openai.NewAccumulator()
			oa.Reset(64)
			oa.FirstByte(2 * time.Millisecond)
			feed(t, oa, tt.openai)
			want := oa.Metrics(end)

			a := newAccumulator(64)
			a.tl.FirstByte(2 * time.Millisecond)
			feed(t, a, tt.messages)
			a.tl.End = end
			got := measure.Derive(a.Timeline())

			for _, m := range []*measure.Metrics{&want, &got} {
				m.SSEEvents, m.DoneSeen, m.UsageSeen, m.FinishReason = 0, false, false, ""
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("messages API:\n%s\nopenai:\n%s", dump(got), dump(want))
			}
			data, _ := json.Marshal(want)
			var keys map[string]any
			_ = json.Unmarshal(data, &keys)
			for _, k := range append([]string{"ttft_ms", "completion_tokens"}, tt.present...) {
				if _, ok := keys[k]; !ok {
					t.Errorf("no %s: %s", k, dump(want))
				}
			}
		})
	}
}

func at(ms float64, e wireEvent) wireEvent { e.at = ms; return e }

func dump(m measure.Metrics) string {
	v := reflect.ValueOf(m)
	s := ""
	for _, sf := range reflect.VisibleFields(v.Type()) {
		if sf.Anonymous {
			continue // its fields are visited themselves
		}
		f := v.FieldByIndex(sf.Index)
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				continue
			}
			f = f.Elem()
		}
		s += fmt.Sprintf("  %s: %v\n", sf.Name, f.Interface())
	}
	return s
}
