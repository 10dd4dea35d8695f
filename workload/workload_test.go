package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

// Each format's offsets are from its first request, in its own unit, as
// the public traces spell them: Azure's 2023 traces
// (AzureLLMInferenceTrace_{code,conv}.csv) and 2024 ones (…_1week.csv),
// BurstGPT's CSVs (BurstGPT_1.csv; BurstGPT_3.csv adds Session ID and
// Elapsed time) and Mooncake's JSON lines; each also as files are found
// after an editor or a spreadsheet had them: CRLF line endings, a byte
// order mark, no newline at the end, columns moved or added.
func TestTraceFormats(t *testing.T) {
	const (
		azureHead = "TIMESTAMP,ContextTokens,GeneratedTokens"
		burstHead = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"
		bom       = "\ufeff"
	)
	azure23 := []Entry{{Line: 2, InputTokens: 374, OutputTokens: 44}, {Line: 3, Offset: 4314579 * time.Microsecond, InputTokens: 396, OutputTokens: 109}}
	azure24 := []Entry{{Line: 2, InputTokens: 2162, OutputTokens: 5}, {Line: 3, Offset: 9163 * time.Microsecond, InputTokens: 1012, OutputTokens: 12}}
	burst := []Entry{{Line: 2, InputTokens: 472, OutputTokens: 18}, {Line: 3, Offset: 40500 * time.Millisecond, InputTokens: 1087, OutputTokens: 230}}
	moon := []Entry{{Line: 1, InputTokens: 6955, OutputTokens: 52, HashIDs: []int64{46, 47}}, {Line: 2, Offset: 10535 * time.Millisecond, InputTokens: 672, OutputTokens: 26, HashIDs: []int64{46, 47, 48}}}
	cases := []struct {
		name, format, body string
		want               []Entry
	}{
		{"azure 2023", FormatAzure, azureHead + "\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n", azure23},
		{"azure 2023 CRLF", FormatAzure, azureHead + "\r\n2023-11-16 18:15:46.6805900,374,44\r\n2023-11-16 18:15:50.9951690,396,109\r\n", azure23},
		{"azure 2023 BOM", FormatAzure, bom + azureHead + "\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n", azure23},
		{"azure 2023 no final newline", FormatAzure, azureHead + "\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109", azure23},
		{"azure 2023 columns moved and added", FormatAzure, "GeneratedTokens,Region,TIMESTAMP,ContextTokens\n44,west,2023-11-16 18:15:46.6805900,374\n109,east,2023-11-16 18:15:50.9951690,396\n", azure23},
		{"azure 2024", FormatAzure, azureHead + "\n2024-05-10 00:00:00.009930+00:00,2162,5\n2024-05-10 00:00:00.019093+00:00,1012,12\n", azure24},
		{"azure 2024 CRLF BOM no final newline", FormatAzure, bom + azureHead + "\r\n2024-05-10 00:00:00.009930+00:00,2162,5\r\n2024-05-10 00:00:00.019093+00:00,1012,12", azure24},
		{"azure 2024 a whole second", FormatAzure, azureHead + "\n2024-05-10 00:00:00.009930+00:00,2162,5\n2024-05-10 00:00:01+00:00,1012,12\n",
			[]Entry{azure24[0], {Line: 3, Offset: 990070 * time.Microsecond, InputTokens: 1012, OutputTokens: 12}}},
		{"azure 2024 another offset", FormatAzure, azureHead + "\n2024-05-10 00:00:00.009930+00:00,2162,5\n2024-05-10 02:00:00.019093+02:00,1012,12\n", azure24},
		{"azure RFC 3339", FormatAzure, azureHead + "\n2024-05-10T00:00:00.00993Z,2162,5\n2024-05-10T00:00:00.019093Z,1012,12\n", azure24},
		{"burstgpt 1", FormatBurstGPT, burstHead + "\n5,ChatGPT,472,18,490,Conversation log\n45.5,ChatGPT,1087,230,1317,Conversation log\n", burst},
		{"burstgpt 1 CRLF BOM no final newline", FormatBurstGPT, bom + burstHead + "\r\n5,ChatGPT,472,18,490,Conversation log\r\n45.5,ChatGPT,1087,230,1317,Conversation log", burst},
		{"burstgpt 3 columns added", FormatBurstGPT, "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n" +
			"5.0,3f1c,1.2,ChatGPT,472,18,490,Conversation log\n45.5,3f1c,0.8,GPT-4,1087,230,1317,API log\n", burst},
		{"burstgpt failed request", FormatBurstGPT, burstHead + "\n5,ChatGPT,100,0,100,Conversation log\n7.25,GPT-4,30,8,38,API log\n",
			[]Entry{{Line: 2, InputTokens: 100, OutputTokens: 1}, {Line: 3, Offset: 2250 * time.Millisecond, InputTokens: 30, OutputTokens: 8}}},
		{"mooncake", FormatMooncake, `{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47]}` + "\n" +
			`{"timestamp": 38017, "input_length": 672, "output_length": 26, "hash_ids": [46, 47, 48]}` + "\n", moon},
		{"mooncake compact no final newline", FormatMooncake, `{"timestamp":27482,"input_length":6955,"output_length":52,"hash_ids":[46,47]}` + "\n" +
			`{"timestamp":38017,"input_length":672,"output_length":26,"hash_ids":[46,47,48]}`, moon},
		{"mooncake CRLF BOM", FormatMooncake, bom + `{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47]}` + "\r\n" +
			`{"timestamp": 38017, "input_length": 672, "output_length": 26, "hash_ids": [46, 47, 48]}` + "\r\n", moon},
		{"mooncake fields added", FormatMooncake, `{"session_id": "a", "timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47], "turn": 1}` + "\n" +
			`{"session_id": "b", "timestamp": 38017, "input_length": 672, "output_length": 26, "hash_ids": [46, 47, 48]}` + "\n", moon},
		{"mooncake fractional ms and a blank line", FormatMooncake, "{\"timestamp\": 1000, \"input_length\": 700, \"output_length\": 9, \"hash_ids\": [4, 5]}\n\n{\"timestamp\": 1250.5, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [4]}\n",
			[]Entry{{Line: 1, InputTokens: 700, OutputTokens: 9, HashIDs: []int64{4, 5}}, {Line: 3, Offset: 250500 * time.Microsecond, InputTokens: 20, OutputTokens: 1, HashIDs: []int64{4}}}},
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

// A timestamp past MaxTraceOffset from the first request (or a size past
// MaxTraceTokens, a line past MaxLineBytes) is an error at its line that
// names the bound; at the bound a trace reads. Unchecked, an offset past
// what a time.Duration holds would saturate or wrap: replayed at once, or
// read as going backwards.
func TestTraceBounds(t *testing.T) {
	const azureHead = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,10,2\n"
	const burstHead = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,ChatGPT,10,2,12,x\n"
	const moonFirst = `{"timestamp": 0, "input_length": 10, "output_length": 2}` + "\n"
	bound := MaxTraceOffset
	moon := func(ms string) string {
		return moonFirst + `{"timestamp": ` + ms + `, "input_length": 10, "output_length": 2}` + "\n"
	}
	for _, c := range []struct {
		name, format, body string
		want               string // "": reads, the last entry at last
		last               time.Duration
	}{
		{name: "azure at the bound", format: FormatAzure, body: azureHead + "2033-11-13 18:15:46.6805900,10,2\n", last: bound},
		{name: "azure a row in year 9999", format: FormatAzure, body: azureHead + "9999-11-16 18:15:46.6805900,10,2\n",
			want: `:3: field "TIMESTAMP": "9999-11-16 18:15:46.6805900" is 2.913e+06 days (7981 years) after the first request (line 2), over the bound of 3650 days (10 years) a trace may span`},
		{name: "azure a day past the bound", format: FormatAzure, body: azureHead + "2033-11-14 18:15:46.6805900,10,2\n", want: `:3: field "TIMESTAMP": "2033-11-14 18:15:46.6805900" is 3651 days (10 years) after`},
		{name: "azure a row in year 1", format: FormatAzure, body: azureHead + "0001-01-01 00:00:00,10,2\n", want: ":3: timestamp goes backwards (7.388e+05 days (2024 years) before the first request, line 2)"},
		{name: "azure a 2024 row in year 9999", format: FormatAzure, body: "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+00:00,10,2\n9999-05-10 00:00:00.009930+00:00,10,2\n",
			want: `:3: field "TIMESTAMP": "9999-05-10 00:00:00.009930+00:00" is 2.913e+06 days`},
		{name: "burstgpt at the bound", format: FormatBurstGPT, body: burstHead + "315360000,ChatGPT,10,2,12,x\n", last: bound},
		{name: "burstgpt past the bound", format: FormatBurstGPT, body: burstHead + "1e20,ChatGPT,10,2,12,x\n",
			want: `:3: field "Timestamp": "1e20" is 1.157e+15 days (3.171e+12 years) after the first request (line 2), over the bound of 3650 days (10 years) a trace may span (its timestamps are seconds from any origin)`},
		{name: "burstgpt NaN", format: FormatBurstGPT, body: burstHead + "NaN,ChatGPT,10,2,12,x\n", want: `:3: field "Timestamp": "NaN" is not seconds ≥ 0`},
		{name: "mooncake at the bound", format: FormatMooncake, body: moon("315360000000"), last: bound},
		{name: "mooncake a millisecond past the bound", format: FormatMooncake, body: moon("315360000001"), want: `:2: field "timestamp": "315360000001" is 3650 days (10 years) after the first request (line 1), over the bound of 3650 days (10 years)`},
		{name: "mooncake 1e300", format: FormatMooncake, body: moon("1e300"), want: `:2: field "timestamp": "1e+300" is 1.157e+292 days (3.171e+289 years) after the first request (line 1), over the bound of 3650 days (10 years) a trace may span (its timestamps are milliseconds from any origin)`},
		{name: "mooncake 1e18", format: FormatMooncake, body: moon("1e18"), want: `:2: field "timestamp": "1000000000000000000" is 1.157e+10 days (3.171e+07 years) after`},
		{name: "mooncake backwards past the bound", format: FormatMooncake, body: `{"timestamp": 1e15, "input_length": 10, "output_length": 2}` + "\n" + moonFirst,
			want: ":2: timestamp goes backwards (1.157e+07 days (3.171e+04 years) before the first request, line 1); sort the trace by time"},
		{name: "tokens at the bound", format: FormatMooncake, body: `{"timestamp": 0, "input_length": 10000000, "output_length": 10000000}` + "\n"},
		{name: "input tokens past the bound", format: FormatMooncake, body: `{"timestamp": 0, "input_length": 10000001, "output_length": 2}` + "\n",
			want: `:1: field "input_length": 10000001 tokens is over the bound of 10000000 a trace request may have`},
		{name: "output tokens past the bound", format: FormatAzure, body: azureHead + "2023-11-16 18:15:47,10,99999999999\n", want: `:3: field "GeneratedTokens": 99999999999 tokens is over the bound`},
		{name: "a csv line past the bound", format: FormatAzure, body: azureHead + strings.Repeat("9", MaxLineBytes+1) + "\n", want: ":3: line longer than 4194304 bytes"},
		{name: "a csv line at the bound", format: FormatBurstGPT, body: burstHead + "1,ChatGPT,10,2,12," + strings.Repeat("x", MaxLineBytes-18) + "\n", last: time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := write(t, "t", c.body)
			r, err := OpenTrace(path, c.format)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var last Entry
			for {
				var e Entry
				e, err = r.Next()
				if err != nil {
					break
				}
				last = e
			}
			if c.want == "" {
				if err != io.EOF {
					t.Fatalf("error %v, want none", err)
				}
				if last.Offset != c.last {
					t.Errorf("last offset %v, want %v", last.Offset, c.last)
				}
				return
			}
			if err == io.EOF || !strings.HasPrefix(err.Error(), path+c.want) {
				t.Errorf("error %v\nwant one that begins %q", err, path+c.want)
			}
		})
	}
}

// A trace past the cap of a dataset (1 GiB; Azure's 2024 conversation
// week is 1.14 GB) is read, under a cap of its own. The files are sparse:
// after their rows, zeros, which are refused as a line too long once
// MaxLineBytes of them are read, so the test reads 4 MiB of each.
func TestTraceFileCap(t *testing.T) {
	for _, c := range []struct {
		name string
		size int64
		want string
	}{
		{"past a dataset's cap", 1_135_195_393, "t.csv:3: line longer than 4194304 bytes"},
		{"past a trace's cap", 5 << 30, "file too large: 5368709120 bytes (5 GiB), over the 4 GiB cap on a trace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, "t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+00:00,2162,5\n")
			if err := os.Truncate(p, c.size); err != nil {
				t.Skipf("no sparse file here: %v", err)
			}
			r, err := OpenTrace(p, FormatAzure)
			if err == nil {
				defer r.Close()
				_, err = r.Next()
				if err == nil {
					_, err = r.Next()
				}
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %q", err, c.want)
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

// Datasets read as they are found: a byte order mark, CRLF line endings,
// no newline at the end; a ShareGPT conversation whose first human turn is
// answered by another human turn has its prompt in the next one.
func TestDatasetsAsFound(t *testing.T) {
	for _, c := range []struct {
		name, format, body string
		prompts            []string
		lines              []int
		skipped            int
	}{
		{"jsonl BOM CRLF no final newline", FormatJSONL, "\ufeff{\"prompt\": \"one\", \"output_tokens\": 3}\r\n\r\n{\"prompt\": \"two\"}", []string{"one", "two"}, []int{1, 3}, 0},
		{"sharegpt BOM CRLF", FormatShareGPT, "\ufeff[\r\n  {\"conversations\": [{\"from\": \"human\", \"value\": \"one\"}, {\"from\": \"gpt\", \"value\": \"yes\"}]},\r\n  {\"conversations\": [{\"from\": \"human\", \"value\": \"two\"}, {\"from\": \"gpt\", \"value\": \"no\"}]}\r\n]", []string{"one", "two"}, []int{2, 3}, 0},
		{"sharegpt a human turn answered by a human turn", FormatShareGPT, `[
  {"conversations": [{"from": "human", "value": "hello?"}, {"from": "human", "value": "second try"}, {"from": "gpt", "value": "hi"}]},
  {"conversations": [{"from": "human", "value": "alone"}, {"from": "human", "value": "still alone"}]}
]`, []string{"second try"}, []int{2}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var prompts []string
			var lines []int
			skipped, err := ReadDataset(write(t, "d", c.body), c.format, func(it Item) error {
				prompts, lines = append(prompts, it.Prompt), append(lines, it.Line)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(prompts) != fmt.Sprint(c.prompts) || fmt.Sprint(lines) != fmt.Sprint(c.lines) || skipped != c.skipped {
				t.Errorf("prompts %q at lines %v, %d skipped; want %q at %v, %d skipped", prompts, lines, skipped, c.prompts, c.lines, c.skipped)
			}
		})
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
