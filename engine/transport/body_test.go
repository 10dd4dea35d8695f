package transport

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tollgate-dev/tollgate/engine/measure"
)

// MarshalBody must be json.Marshal to the byte: servers and golden files
// see the same body either way.
func TestMarshalBodyIsJSONMarshal(t *testing.T) {
	tests := []struct {
		name string
		body map[string]any
	}{
		{name: "empty", body: map[string]any{}},
		{name: "a chat request", body: map[string]any{
			"temperature": 0, "top_p": 1, "stream": true, "ignore_eos": true, "max_tokens": 16, "model": "tollgate-sim",
			"thinking": map[string]any{"type": "disabled"}, "chat_template_kwargs": map[string]any{"enable_thinking": false},
			"stream_options": map[string]any{"include_usage": true},
			"messages":       []measure.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi <there> & \"you\"\n\tü \u2028 \x01"}},
		}},
		{name: "escapes in keys and strings", body: map[string]any{"a<b": "x>y", "q\"": "\\", "ctl\x7f": "\x00", "é": "日本", "bad utf-8": "\xff\xfe"}},
		{name: "numbers of every kind", body: map[string]any{"f": 0.7, "big": 1e21, "small": 1e-7, "neg": -3, "i64": int64(1 << 62), "u8": uint8(7), "f32": float32(0.1), "num": json.Number("12.5")}},
		{name: "nil, nested and empty values", body: map[string]any{"nil": nil, "m": map[string]any{"n": map[string]any{"deep": []any{1, "two", nil, map[string]any{"z": 1, "a": 2}}}}, "empty": map[string]any{}, "nilmap": map[string]any(nil), "s": []string{}}},
		{name: "messages of every shape", body: map[string]any{
			"nil": []measure.Message(nil), "empty": []measure.Message{},
			"chat": []measure.Message{
				{Role: "system", Content: ""},
				{Role: "user", Content: "<b>&\u2028 \xff é"},
				{Role: "assistant", ToolCalls: []measure.ToolCall{{ID: "c1", Type: "function", Function: measure.FunctionCall{Name: "f", Arguments: `{"a":"<1>"}`}}}},
				{Role: "tool", Content: "42", ToolCallID: "c1"},
				{Role: "tool", ToolCallID: "id \"q\""},
			},
		}},
		{name: "key order is bytewise", body: map[string]any{"b": 1, "B": 2, "a": 3, "_": 4, "aa": 5, "a_": 6, "1": 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			got, err := MarshalBody(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("MarshalBody:\n%s\njson.Marshal:\n%s", got, want)
			}
		})
	}
}

func TestMarshalBodyRandomStrings(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune{'a', 'Z', '0', ' ', '"', '\\', '<', '>', '&', '\n', '\t', 0x01, 0x7f, 'é', '\u2028', '\u2029', '日', 0xfffd}
	for i := range 2000 {
		var k, v []rune
		for range rng.IntN(8) {
			k = append(k, alphabet[rng.IntN(len(alphabet))])
		}
		for range rng.IntN(12) {
			v = append(v, alphabet[rng.IntN(len(alphabet))])
		}
		body := map[string]any{string(k): string(v), "n": i}
		want, _ := json.Marshal(body)
		got, err := MarshalBody(body)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("body %q: MarshalBody %s (%v), json.Marshal %s", body, got, err, want)
		}
	}
}

func TestMarshalBodyErrorsAsJSONMarshal(t *testing.T) {
	body := map[string]any{"ok": 1, "t": map[string]any{"bad": math.NaN()}}
	_, want := json.Marshal(body)
	_, got := MarshalBody(body)
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Errorf("MarshalBody error %v, json.Marshal error %v", got, want)
	}
}

func BenchmarkMarshalBody(b *testing.B) {
	body := map[string]any{
		"temperature": 0, "top_p": 1, "stream": true, "ignore_eos": true, "max_tokens": 16, "model": "tollgate-sim",
		"thinking": map[string]any{"type": "disabled"}, "chat_template_kwargs": map[string]any{"enable_thinking": false},
		"stream_options": map[string]any{"include_usage": true},
		"messages":       []measure.Message{{Role: "user", Content: "a prompt of some forty-eight words, more or less, as a load phase sends"}},
	}
	for _, f := range []struct {
		name string
		fn   func(map[string]any) ([]byte, error)
	}{{"MarshalBody", MarshalBody}, {"json.Marshal", func(m map[string]any) ([]byte, error) { return json.Marshal(m) }}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.fn(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BuildBody is, byte for byte, json.Marshal of the map its rule builds
// (defaults, then the two merges, then the request's own fields), whether
// or not there is anything to merge and so a map is built at all.
func TestBuildBodyIsTheMergedMapsJSON(t *testing.T) {
	nested := map[string]any{"type": "disabled"}
	msgs := []measure.Message{{Role: "user", Content: "hi <you> & \"me\""}}
	tests := []struct {
		name             string
		defaults, own    []BodyField
		extra, extraBody map[string]any
	}{
		{name: "nothing to merge, keys out of order",
			defaults: []BodyField{{"temperature", 0}, {"top_p", 1}, {"stream", true}, {"ignore_eos", true}, {"thinking", nested}},
			own:      []BodyField{{"model", "m"}, {"max_tokens", 4096}, {"messages", msgs}}},
		{name: "empty maps to merge",
			defaults: []BodyField{{"b", 1}, {"a", 2}}, extra: map[string]any{}, extraBody: map[string]any{},
			own: []BodyField{{"prompt", "p"}}},
		{name: "an own field replaces a default of its key",
			defaults: []BodyField{{"max_tokens", 1}, {"stream", false}}, own: []BodyField{{"max_tokens", 2}}},
		{name: "no fields at all"},
		{name: "keys that need escapes, bytewise order",
			defaults: []BodyField{{"é", 1}, {"a<b", "x"}, {"B", nil}, {"_", 0.5}}, own: []BodyField{{"1", []string{}}}},
		{name: "merges: replace, delete, nested, then own over both",
			defaults:  []BodyField{{"temperature", 0}, {"thinking", nested}, {"ignore_eos", true}, {"model", "d"}},
			extra:     map[string]any{"temperature": 0.7, "ignore_eos": nil, "thinking": map[string]any{"budget": 5}, "model": "x"},
			extraBody: map[string]any{"top_k": 3, "thinking": map[string]any{"type": "enabled"}},
			own:       []BodyField{{"model", "m"}, {"messages", msgs}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := map[string]any{}
			for _, f := range tt.defaults {
				want[f.Key] = f.Value
			}
			MergeBody(want, tt.extra)
			MergeBody(want, tt.extraBody)
			for _, f := range tt.own {
				want[f.Key] = f.Value
			}
			wantJSON, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := BuildBody(tt.defaults, tt.extra, tt.extraBody, tt.own)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, wantJSON) {
				t.Errorf("BuildBody:\n%s\njson.Marshal of the merged map:\n%s", got, wantJSON)
			}
			if nested["type"] != "disabled" || len(nested) != 1 {
				t.Errorf("a default's nested map was written: %v", nested)
			}
		})
	}
	_, err := BuildBody([]BodyField{{"bad", math.Inf(1)}}, nil, nil, nil)
	_, want := json.Marshal(map[string]any{"bad": math.Inf(1)})
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("BuildBody error %v, json.Marshal error %v", err, want)
	}
}
