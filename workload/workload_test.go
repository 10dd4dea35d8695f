package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/sim"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readAll(t *testing.T, path, format string) []Entry {
	t.Helper()
	r, err := OpenTrace(path, format)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

// Each format's offsets are from its first request, in its own unit.
func TestTraceFormats(t *testing.T) {
	cases := []struct {
		name, format, body string
		want               []Entry
	}{
		{"mooncake ms", FormatMooncake, "{\"timestamp\": 1000, \"input_length\": 700, \"output_length\": 9, \"hash_ids\": [4, 5]}\n\n{\"timestamp\": 1250.5, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [4]}\n",
			[]Entry{{Line: 1, InputTokens: 700, OutputTokens: 9, HashIDs: []int64{4, 5}}, {Line: 3, Offset: 250500 * time.Microsecond, InputTokens: 20, OutputTokens: 1, HashIDs: []int64{4}}}},
		{"burstgpt s", FormatBurstGPT, "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,100,0,100,x\n7.25,GPT-4,30,8,38,x\n",
			[]Entry{{Line: 2, InputTokens: 100, OutputTokens: 1}, {Line: 3, Offset: 2250 * time.Millisecond, InputTokens: 30, OutputTokens: 8}}},
		{"azure time of day", FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n",
			[]Entry{{Line: 2, InputTokens: 374, OutputTokens: 44}, {Line: 3, Offset: 4314579 * time.Microsecond, InputTokens: 396, OutputTokens: 109}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := readAll(t, write(t, "t", c.body), c.format)
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(c.want)
			if !bytes.Equal(g, w) {
				t.Errorf("got  %s\nwant %s", g, w)
			}
		})
	}
}

// ShareGPT items are streamed with the line each starts on; items with no
// human turn and reply are skipped, not errors.
func TestShareGPTLines(t *testing.T) {
	p := write(t, "s.json", `[
  {"conversations": [{"from": "human", "value": "first question"}, {"from": "gpt", "value": "an answer of six words here"}]},
  {"conversations": [{"from": "gpt", "value": "no human"}]},

  {
    "conversations": [{"from": "system", "value": "x"}, {"from": "human", "value": "third"}, {"from": "gpt", "value": "ok"}]
  }
]`)
	var items []Item
	skipped, err := ReadDataset(p, FormatShareGPT, func(it Item) error { items = append(items, it); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 1 || len(items) != 2 {
		t.Fatalf("skipped %d, items %d", skipped, len(items))
	}
	if items[0].Line != 2 || items[1].Line != 5 {
		t.Errorf("lines %d, %d, want 2 and 5", items[0].Line, items[1].Line)
	}
	if items[0].Prompt != "first question" || items[0].OutputTokens != 8 || items[1].Prompt != "third" {
		t.Errorf("items %+v", items)
	}
}

// EstimateTokens is the embedded simulator's count, as its /tokenize says.
func TestEstimateTokensIsTheSimulatorsCount(t *testing.T) {
	s, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, text := range []string{
		"hello world", "Summarize caching in LLM serving.", "internationalization_is long", "a,b;c  d\n\te", "naïve café — déjà vu", "x1234567890y",
	} {
		t.Run(text, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"content": text})
			resp, err := http.Post(url+"/tokenize", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct {
				Count int `json:"count"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
			if got := EstimateTokens(text); got != out.Count {
				t.Errorf("estimate %d, simulator %d", got, out.Count)
			}
		})
	}
}
