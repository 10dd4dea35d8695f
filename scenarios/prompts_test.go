package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What a prompt is made of is checked where it enters, at load: text that
// is not UTF-8 (which JSON would send as U+FFFD), a message role no chat
// API takes, a ShareGPT file with more than its one list. Each error names
// the file, its line and, for a byte, its column.
func TestPromptText(t *testing.T) {
	dir := t.TempDir()
	conv := `{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}`
	files := map[string]string{
		"bad-byte.jsonl":   "{\"prompt\": \"ok\"}\n{\"prompt\": \"caf\xc3\"}\n",
		"bad-byte.json":    "[\n  " + conv + ",\n  {\"conversations\": [{\"from\": \"human\", \"value\": \"h\xffi\"}, {\"from\": \"gpt\", \"value\": \"x\"}]}\n]\n",
		"split-rune.json":  "[" + conv + ", " + strings.Repeat(" ", 5000) + "{\"conversations\": [{\"from\": \"human\", \"value\": \"caf\xc3\xa9 \xe2\x82\xac\"}, {\"from\": \"gpt\", \"value\": \"x\"}]}]\n",
		"trailing.json":    "[\n  " + conv + "\n]\n\n  junk\n",
		"two-lists.json":   "[" + conv + "]\n[" + conv + "]\n",
		"extra-close.json": "[" + conv + "]]\n",
		"blank-after.json": "[" + conv + "]\n  \n\n",
		"role.jsonl":       "{\"prompt\": \"ok\"}\n{\"messages\": [{\"role\": \"usr\", \"content\": \"hi\"}]}\n",
		"roles.jsonl":      "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"developer\", \"content\": \"no tools\"}, {\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"hello\"}, {\"role\": \"user\", \"content\": \"bye\"}]}\n",
		"tool.jsonl":       "{\"messages\": [{\"role\": \"tool\", \"content\": \"42\"}]}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	noEnvBut := func(name, value string) func(string) (string, bool) {
		return func(k string) (string, bool) { return value, k == name }
	}
	dataset := func(file string) string {
		return "phases:\n  r: {kind: requests, requests: 1, prompt: {dataset: " + file + "}}\n"
	}
	promptFile := func(file string) string { return "phases:\n  decode: {prompt: {file: " + file + "}}\n" }
	for _, tc := range []struct {
		name, src string
		env       func(string) (string, bool)
		want      string // "" loads; else in the error, after the scenario's path and ":"
	}{
		{name: "jsonl dataset: a byte that is not UTF-8", src: dataset("bad-byte.jsonl"),
			want: "2:54: phases.r.prompt.dataset: " + filepath.Join(dir, "bad-byte.jsonl") + ":2:16: byte 0xc3 is not valid UTF-8"},
		{name: "sharegpt dataset: a byte that is not UTF-8", src: dataset("bad-byte.json"),
			want: "2:54: phases.r.prompt.dataset: " + filepath.Join(dir, "bad-byte.json") + ":3:51: byte 0xff is not valid UTF-8"},
		{name: "sharegpt dataset: runes split across reads load", src: dataset("split-rune.json")},
		{name: "sharegpt dataset: data after the list", src: dataset("trailing.json"),
			want: "2:54: phases.r.prompt.dataset: " + filepath.Join(dir, "trailing.json") + ":5: not ShareGPT JSON: data after the list of conversations"},
		{name: "sharegpt dataset: a second list", src: dataset("two-lists.json"),
			want: filepath.Join(dir, "two-lists.json") + `:2: not ShareGPT JSON: "[" after the list of conversations`},
		{name: "sharegpt dataset: a closer too many", src: dataset("extra-close.json"),
			want: filepath.Join(dir, "extra-close.json") + ":1: not ShareGPT JSON: data after the list"},
		{name: "sharegpt dataset: blank lines after the list load", src: dataset("blank-after.json")},
		{name: "jsonl dataset: an unknown role", src: dataset("role.jsonl"),
			want: filepath.Join(dir, "role.jsonl") + `:2: field "messages[0].role": unknown role "usr" (one of system, developer, user, assistant) (did you mean "user"?)`},
		{name: "jsonl dataset: a tool message", src: dataset("tool.jsonl"),
			want: filepath.Join(dir, "tool.jsonl") + `:1: field "messages[0].role": unknown role "tool"`},
		{name: "jsonl dataset: every known role loads", src: dataset("roles.jsonl")},
		{name: "prompt file: a byte that is not UTF-8", src: promptFile("bad-byte.jsonl"),
			want: "2:27: phases.decode.prompt.file: " + filepath.Join(dir, "bad-byte.jsonl") + ":2:16: byte 0xc3 is not valid UTF-8"},
		{name: "prompt file: an unknown role", src: promptFile("role.jsonl"),
			want: "2:27: phases.decode.prompt.file: " + filepath.Join(dir, "role.jsonl") + `:2: field "messages[0].role": unknown role "usr"`},
		{name: "prompt file: every known role loads", src: promptFile("roles.jsonl")},
		{name: "request: an unknown role", src: "phases:\n  r:\n    kind: requests\n    requests:\n      - messages: [{role: asistant, content: hi}]\n",
			want: `5:27: phases.r.requests[0].messages[0].role: unknown role "asistant" (one of system, developer, user, assistant) (did you mean "assistant"?)`},
		{name: "request: no role", src: "phases:\n  r:\n    kind: requests\n    requests:\n      - messages: [{content: hi}]\n",
			want: `5:20: phases.r.requests[0].messages[0].role: missing (one of system, developer, user, assistant)`},
		{name: "an environment variable that is not UTF-8", src: "phases:\n  decode: {prompt: {text: \"${env.PROMPT}\"}}\n",
			env: noEnvBut("PROMPT", "caf\xe9 secret"), want: "2:27: environment variable PROMPT is not valid UTF-8 (byte 0xe9; the value is not shown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			env := tc.env
			if env == nil {
				env = noEnv
			}
			_, err := Load(path, Options{LookupEnv: env})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want := tc.want
			if !strings.HasPrefix(want, "/") {
				want = path + ":" + want
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("errors:\n%v\nwant one containing %s", err, want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the value of the variable was shown: %v", err)
			}
		})
	}
}
