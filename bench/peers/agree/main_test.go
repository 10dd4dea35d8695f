package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgreePairsRequests(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "r.json")
	lines := filepath.Join(dir, "s.jsonl")
	sample := `{"ok":true,"ttfb_ms":1,"ttft_ms":11.5,"e2e_ms":30,"decode_tokens_per_s":101,"tpot_ms":9.9,"prompt_tokens":29,"completion_tokens":3,
		"server":{"source":"llama.cpp timings","prompt_n":19,"cache_n":10,"predicted_n":3,"prompt_ms":10,"predicted_per_second":100,"predicted_per_token_ms":10}}`
	if err := os.WriteFile(rep, []byte(`{"runs":{"s":{"phases":{"decode":{"samples":[`+sample+`]}}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lines, []byte(strings.ReplaceAll(strings.ReplaceAll(sample, "\n", ""), "\t", "")+"\n"+`{"ok":false}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{rep, lines}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 requests with server timings (of 3 samples)", "p50 +0.500", "p50 +1.000", "token counts equal to the server's: 2 of 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run([]string{filepath.Join(dir, "none.json")}, &out); err == nil {
		t.Error("a missing file must be an error")
	}
}
