package scenarios

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Bad datasets and traces are errors when the scenario loads, at the
// scenario's position and at the file's line (and field).
func TestBadDatasetsAndTraces(t *testing.T) {
	files := map[string]string{
		"empty.jsonl":     "",
		"chat.jsonl":      "{\"prompt\": \"hello there\", \"output_tokens\": 4}\n{\"prompt\": \"second one\"}\n",
		"badline.jsonl":   "{\"prompt\": \"ok\"}\n\n{\"prompt\": 3}\n",
		"nofield.jsonl":   "{\"prompt\": \"ok\"}\n{\"text\": \"no prompt\"}\n",
		"badout.jsonl":    "{\"prompt\": \"ok\", \"output_tokens\": -2}\n",
		"long.jsonl":      "{\"prompt\": \"short\"}\n{\"prompt\": \"" + strings.Repeat("word ", 300) + "\"}\n",
		"sharegpt.json":   "[\n  {\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}, {\"from\": \"gpt\", \"value\": \"hello\"}]},\n  {\"id\": \"x\"}\n]\n",
		"notjson.json":    "{\"conversations\": []}\n",
		"mooncake.jsonl":  "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [1]}\n{\"timestamp\": 5, \"input_length\": 10, \"hash_ids\": [1]}\n",
		"badtype.jsonl":   "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2}\n{\"timestamp\": 5, \"input_length\": \"x\", \"output_length\": 2}\n",
		"backwards.jsonl": "{\"timestamp\": 9, \"input_length\": 10, \"output_length\": 2}\n{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 2}\n",
		"burst.csv":       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1.0,ChatGPT,10,5,15,x\n2.0,ChatGPT,ten,5,15,x\n",
		"azure.csv":       "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,10,2\nyesterday,10,2\n",
		"wrongcsv.csv":    "a,b,c\n1,2,3\n",
		"big.jsonl":       "{\"timestamp\": 0, \"input_length\": 40000, \"output_length\": 2}\n",
		"ok.jsonl":        "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2}\n{\"timestamp\": 10, \"input_length\": 10, \"output_length\": 2}\n",
		// 31 days between two requests: at speed 1, a replay past its bound.
		"month.jsonl":   "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2}\n{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 2}\n{\"timestamp\": 2678400000, \"input_length\": 10, \"output_length\": 2}\n",
		"azure9999.csv": "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,10,2\n9999-11-16 18:15:46.6805900,10,2\n",
		"huge.jsonl":    "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2}\n{\"timestamp\": 1e300, \"input_length\": 10, \"output_length\": 2}\n",
	}
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, phase, want string
	}{
		{"dataset missing", `{kind: load, concurrency: 1, requests: 1, prompt: {dataset: nope.jsonl}}`, `s.yaml:3:\d+: phases.p.prompt.dataset: open .*nope.jsonl: no such file`},
		{"dataset empty", `{kind: load, concurrency: 1, requests: 1, prompt: {dataset: empty.jsonl}}`, `s.yaml:3:\d+: .*empty.jsonl holds no prompts`},
		{"jsonl field of the wrong type", `{kind: load, concurrency: 1, requests: 1, prompt: {dataset: badline.jsonl}}`, `badline.jsonl:3: field "prompt": expected string, got number`},
		{"jsonl line without prompt", `{kind: load, concurrency: 1, requests: 1, prompt: {dataset: nofield.jsonl}}`, `nofield.jsonl:2: each line needs "prompt"`},
		{"jsonl bad output_tokens", `{kind: load, concurrency: 1, requests: 1, prompt: {dataset: badout.jsonl}}`, `badout.jsonl:1: field "output_tokens": a whole number ≥ 1, got "-2"`},
		{"sharegpt item without conversations", `{kind: load, concurrency: 1, requests: 1, prompt: {dataset: sharegpt.json}}`, `sharegpt.json:3: conversation 1: field "conversations": missing`},
		{"sharegpt not a list", `{kind: load, concurrency: 1, requests: 1, prompt: {dataset: notjson.json, format: sharegpt}}`, `notjson.json:1: not ShareGPT JSON: expected a list`},
		{"unknown dataset format", `{kind: load, concurrency: 1, requests: 1, prompt: {dataset: chat.jsonl, format: alpaca}}`, `s.yaml:3:\d+: phases.p.prompt.format: unknown "alpaca"`},
		{"too few without replacement", `{kind: load, concurrency: 1, requests: 5, prompt: {dataset: chat.jsonl}}`, `holds 2 prompts within the filters and the phase sends 5; give prompt.replacement: true`},
		{"filters leave nothing", `{kind: load, concurrency: 1, requests: 1, prompt: {dataset: chat.jsonl, min_prompt_tokens: 100}}`, `holds no prompts within the length filters \(2 read: 0 skipped, 2 outside the filters\)`},
		{"an output minimum on a line without output_tokens", `{kind: load, concurrency: 1, requests: 1, prompt: {dataset: chat.jsonl, min_output_tokens: 2}}`,
			`s.yaml:3:\d+: phases.p.prompt.dataset: .*chat.jsonl:2: field "output_tokens": missing, and prompt.min_output_tokens filters on it`},
		{"an output maximum on a line without output_tokens", `{kind: load, concurrency: 1, requests: 1, prompt: {dataset: chat.jsonl, max_output_tokens: 8}}`,
			`chat.jsonl:2: field "output_tokens": missing, and prompt.max_output_tokens filters on it`},
		{"prompt over the context window", `{kind: load, concurrency: 1, requests: 2, prompt: {dataset: long.jsonl}}`, `s.yaml:3:\d+: phases.p.prompt.dataset: .*long.jsonl:2: about 428 prompt \+ output tokens, over the context window of 256`},
		{"dataset on a decode phase", `{kind: decode, prompt: {dataset: chat.jsonl}}`, `prompt.dataset: applies to load, requests, warmup phases, not decode`},
		{"dataset with prompt_tokens", `{kind: load, concurrency: 1, requests: 1, prompt_tokens: 8, prompt: {dataset: chat.jsonl}}`, `phases.p.prompt_tokens: does not apply with prompt.dataset`},
		{"filter without dataset", `{kind: load, concurrency: 1, requests: 1, prompt: {max_prompt_tokens: 8}}`, `phases.p.prompt.max_prompt_tokens: applies with prompt.dataset`},
		{"trace missing", `{kind: trace, trace: {file: nope.jsonl}}`, `s.yaml:3:\d+: phases.p.trace.file: open .*nope.jsonl: no such file`},
		{"trace empty", `{kind: trace, trace: {file: empty.jsonl}}`, `empty.jsonl holds no requests`},
		{"trace line without a field", `{kind: trace, trace: {file: mooncake.jsonl}}`, `mooncake.jsonl:2: field "output_length": missing or not a number`},
		{"trace field of the wrong type", `{kind: trace, trace: {file: badtype.jsonl}}`, `badtype.jsonl:2: field "input_length": expected int, got string`},
		{"trace going backwards", `{kind: trace, trace: {file: backwards.jsonl}}`, `backwards.jsonl:2: timestamp goes backwards`},
		{"burstgpt field not a number", `{kind: trace, trace: {file: burst.csv, format: burstgpt}}`, `burst.csv:3: field "Request tokens": "ten" is not a whole number`},
		{"azure bad timestamp", `{kind: trace, trace: {file: azure.csv, format: azure}}`, `azure.csv:3: field "TIMESTAMP": "yesterday" is not a time`},
		{"csv of another format", `{kind: trace, trace: {file: wrongcsv.csv, format: azure}}`, `wrongcsv.csv:1: not a azure trace: no "TIMESTAMP" column`},
		{"csv without format", `{kind: trace, trace: {file: burst.csv}}`, `phases.p.trace.format: a CSV trace needs its format`},
		{"trace over the context window", `{kind: trace, trace: {file: big.jsonl}}`, `big.jsonl:1: 40002 prompt \+ output tokens, over the context window of 256`},
		{"speed and rate", `{kind: trace, trace: {file: ok.jsonl, speed: 2, rate: 10}}`, `phases.p.trace: give speed or rate, not both`},
		{"an azure row in year 9999", `{kind: trace, trace: {file: azure9999.csv, format: azure}}`,
			`s.yaml:3:\d+: phases.p.trace.file: .*azure9999.csv:3: field "TIMESTAMP": "9999-11-16 18:15:46.6805900" is 2.913e\+06 days \(7981 years\) after the first request \(line 2\), over the bound of 3650 days \(10 years\)`},
		{"a mooncake timestamp of 1e300", `{kind: trace, trace: {file: huge.jsonl}}`, `huge.jsonl:2: field "timestamp": "1e\+300" is .* over the bound of 3650 days`},
		{"speed 1e-300", `{kind: trace, trace: {file: ok.jsonl, speed: 1e-300}}`,
			`s.yaml:3:\d+: phases.p.trace.speed: at speed 1e-300 the window's last request \(.*ok.jsonl:2, 10ms after its first in the trace\) would be sent 1.157e\+293 days .* over the bound of 30 days a replay may last`},
		{"the smallest speed", `{kind: trace, trace: {file: ok.jsonl, speed: 5e-324}}`, `phases.p.trace.speed: at speed 5e-324 .* by more than a number can hold, over the bound of 30 days`},
		{"rate 1e-300", `{kind: trace, trace: {file: ok.jsonl, rate: 1e-300}}`, `s.yaml:3:\d+: phases.p.trace.rate: at rate 1e-300/s the window's last request`},
		{"a month at speed 1", `{kind: trace, trace: {file: month.jsonl}}`,
			`s.yaml:3:\d+: phases.p.trace.file: at speed 1 the window's last request \(.*month.jsonl:3, 31 days after its first in the trace\) would be sent 31 days after its first, over the bound of 30 days`},
		{"empty window", `{kind: trace, trace: {file: ok.jsonl, from: 1s, to: 2s}}`, `holds no requests in the window \[1s, 2s\)`},
		{"unknown trace format", `{kind: trace, trace: {file: ok.jsonl, format: mooncak}}`, `unknown "mooncak" \(one of mooncake, burstgpt, azure\) \(did you mean "mooncake"\?\)`},
		{"trace without file", `{kind: trace}`, `phases.p: a trace phase needs trace.file`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "s.yaml")
			src := "targets: {s: {kind: embedded, sim: {max_model_len: 256}}}\nphases:\n  p: " + c.phase + "\n"
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, Options{})
			if err == nil {
				t.Fatalf("no error, want %s", c.want)
			}
			if !regexp.MustCompile(c.want).MatchString(err.Error()) {
				t.Errorf("error:\n%v\nwant a match for %s", err, c.want)
			}
		})
	}
}

// The sample is seeded: the same seed draws the same prompts, another
// seed others; the reply length sets max_tokens unless the phase fixes it.
func TestDatasetSampling(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < 50; i++ {
		b.WriteString(`{"prompt": "prompt number ` + strings.Repeat("x", i+1) + `", "output_tokens": ` + string(rune('1'+i%9)) + "}\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(phase string) *Phase { return loadPhase(t, dir, phase) }
	prompts := func(p *Phase) []string {
		var out []string
		for _, r := range p.FilePrompts {
			out = append(out, r.Prompt)
		}
		return out
	}
	a := load(`{kind: load, concurrency: 1, requests: 10, seed: 1, prompt: {dataset: d.jsonl}}`)
	a2 := load(`{kind: load, concurrency: 1, requests: 10, seed: 1, prompt: {dataset: d.jsonl}}`)
	c := load(`{kind: load, concurrency: 1, requests: 10, seed: 2, prompt: {dataset: d.jsonl}}`)
	if strings.Join(prompts(a), "|") != strings.Join(prompts(a2), "|") {
		t.Errorf("the same seed drew other prompts")
	}
	if strings.Join(prompts(a), "|") == strings.Join(prompts(c), "|") {
		t.Errorf("another seed drew the same prompts")
	}
	seen := map[string]bool{}
	for _, p := range prompts(a) {
		if seen[p] {
			t.Errorf("without replacement, %q drawn twice", p)
		}
		seen[p] = true
	}
	if a.Dataset.Read != 50 || a.Dataset.Eligible != 50 || a.Dataset.Used != 10 || a.FilePrompts[0].MaxTokens == 0 {
		t.Errorf("info %+v, max_tokens %d", a.Dataset, a.FilePrompts[0].MaxTokens)
	}
	r := load(`{kind: load, concurrency: 1, requests: 200, prompt: {dataset: d.jsonl, replacement: true, max_prompt_tokens: 6}}`)
	if len(r.FilePrompts) != 200 || r.Dataset.Eligible >= 50 {
		t.Errorf("with replacement: %d prompts, %d eligible", len(r.FilePrompts), r.Dataset.Eligible)
	}
	f := load(`{kind: requests, requests: 3, max_tokens: 5, prompt: {dataset: d.jsonl}}`)
	if len(f.Requests.List) != 3 || f.Requests.List[0].MaxTokens != 0 || f.MaxTokens != 5 {
		t.Errorf("requests phase: %d requests, max_tokens %d/%d", len(f.Requests.List), f.Requests.List[0].MaxTokens, f.MaxTokens)
	}
}

// A dataset's counts are exact: every item of the file is read (34 here,
// the two ShareGPT conversations without a reply among them), and each is
// skipped, filtered or eligible, whatever the file's line endings, blank
// lines or byte order mark.
func TestDatasetCounts(t *testing.T) {
	dir := t.TempDir()
	var sg, jl strings.Builder
	sg.WriteString("\ufeff[\r\n")
	jl.WriteString("\ufeff")
	for i := range 34 {
		words := strings.Repeat("word ", i+1) // prompt i is i+1 tokens
		conv := `{"from": "human", "value": "` + words + `"}, {"from": "gpt", "value": "an answer"}`
		switch i {
		case 5, 20:
			conv = `{"from": "gpt", "value": "no question"}` // skipped
		case 9:
			conv = `{"from": "human", "value": "hello?"}, {"from": "human", "value": "` + words + `"}, {"from": "gpt", "value": "hi"}`
		}
		sep := ",\r\n"
		if i == 33 {
			sep = "\r\n"
		}
		sg.WriteString(`  {"conversations": [` + conv + `]}` + sep)
		jl.WriteString(`{"prompt": "` + words + `", "output_tokens": 4}` + "\r\n")
		if i%10 == 0 {
			jl.WriteString("\r\n") // blank lines are not items
		}
	}
	sg.WriteString("]")
	for name, body := range map[string]string{"d.json": sg.String(), "d.jsonl": strings.TrimSuffix(jl.String(), "\r\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, prompt                           string
		read, skipped, filtered, eligible, use int
	}{
		{"sharegpt unfiltered", `{dataset: d.json}`, 34, 2, 0, 32, 8},
		{"sharegpt filtered", `{dataset: d.json, min_prompt_tokens: 11, max_prompt_tokens: 30}`, 34, 2, 13, 19, 8},
		{"jsonl unfiltered", `{dataset: d.jsonl}`, 34, 0, 0, 34, 8},
		{"jsonl filtered", `{dataset: d.jsonl, max_prompt_tokens: 10, min_output_tokens: 4}`, 34, 0, 24, 10, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := loadPhase(t, dir, "{kind: load, concurrency: 1, requests: 8, prompt: "+c.prompt+"}").Dataset
			if d.Read != c.read || d.Skipped != c.skipped || d.Filtered != c.filtered || d.Eligible != c.eligible || d.Used != c.use {
				t.Errorf("read %d, skipped %d, filtered %d, eligible %d, used %d; want %d, %d, %d, %d, %d",
					d.Read, d.Skipped, d.Filtered, d.Eligible, d.Used, c.read, c.skipped, c.filtered, c.eligible, c.use)
			}
			if d.Skipped+d.Filtered+d.Eligible != d.Read {
				t.Errorf("skipped + filtered + eligible is not read: %+v", d)
			}
		})
	}
}

// A replay within MaxTraceReplay loads, however long the trace: a month
// of trace at speed 2, or its first requests at speed 1.
func TestTraceReplayWithinItsBound(t *testing.T) {
	dir := t.TempDir()
	trace := "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2}\n{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 2}\n{\"timestamp\": 2678400000, \"input_length\": 10, \"output_length\": 2}\n"
	if err := os.WriteFile(filepath.Join(dir, "month.jsonl"), []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, phase string
		requests    int
		scale       float64
	}{
		{"a month at speed 2", `{kind: trace, trace: {file: month.jsonl, speed: 2}}`, 3, 0.5},
		{"its first two at speed 1", `{kind: trace, requests: 2, trace: {file: month.jsonl}}`, 2, 1},
		{"the window before the last", `{kind: trace, trace: {file: month.jsonl, to: 1h}}`, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ti := loadPhase(t, dir, c.phase).TraceInfo
			if ti.Requests != c.requests || ti.Scale != c.scale {
				t.Errorf("%d requests at scale %v, want %d at %v", ti.Requests, ti.Scale, c.requests, c.scale)
			}
		})
	}
}

// loadPhase loads a scenario of one phase p, written to dir/s.yaml (so
// files it names are dir's), and returns the phase.
func loadPhase(t *testing.T, dir, phase string) *Phase {
	t.Helper()
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte("phases:\n  p: "+phase+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sc.Runs[0].Phases[0]
}
