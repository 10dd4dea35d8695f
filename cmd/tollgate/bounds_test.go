package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Inputs past a bound are refused quickly with exit 2, naming what is
// wrong, and a legitimate large count still validates; the binary's
// whole path, so a regression fails within the timeout instead of hanging.
func TestInputBoundsThroughTheBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) string { return writeIn(t, dir, name, src) }
	million := write("million.yaml", "phases:\n  decode: {prompt_tokens: 16, max_tokens: 4, repeat: 1000000}\n")
	huge := write("huge.yaml", "phases:\n  decode: {prompt_tokens: 16, max_tokens: 4, repeat: 9223372036854775807}\n")
	capacity := write("capacity.yaml", "phases:\n  c:\n    kind: capacity\n    capacity: {min: 1, max: 64, objectives: [\"ttft_ms.p99 <= 500\"], probe: {min_requests: 1000000000}}\n")
	// Traces whose time overflows what a replay could run, and a
	// dataset a length filter cannot judge.
	write("azure2024.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+00:00,2162,5\n2024-05-10 00:00:00.019093+00:00,1012,12\n")
	write("azure9999.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n9999-11-16 18:15:46.6805900,396,109\n")
	write("mooncake.jsonl", `{"timestamp": 0, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]}`+"\n"+`{"timestamp": 10535, "input_length": 672, "output_length": 26, "hash_ids": [46, 47]}`+"\n")
	write("mooncake-huge.jsonl", `{"timestamp": 0, "input_length": 655, "output_length": 52}`+"\n"+`{"timestamp": 1e300, "input_length": 672, "output_length": 26}`+"\n")
	write("chat.jsonl", `{"prompt": "hello there", "output_tokens": 4}`+"\n"+`{"prompt": "no reply length"}`+"\n")
	trace := func(name, tr string) string {
		return write(name, "targets: {s: {kind: embedded}}\nphases:\n  p: {kind: trace, trace: "+tr+"}\n")
	}
	azure2024 := trace("azure2024.yaml", "{file: azure2024.csv, format: azure}")
	azure9999 := trace("azure9999.yaml", "{file: azure9999.csv, format: azure}")
	slow := trace("slow.yaml", "{file: mooncake.jsonl, speed: 1e-300}")
	farOff := trace("mooncake-huge.yaml", "{file: mooncake-huge.jsonl}")
	outFilter := write("out-filter.yaml", "targets: {s: {kind: embedded}}\nphases:\n  p: {kind: load, concurrency: 1, requests: 1, prompt: {dataset: chat.jsonl, max_output_tokens: 8}}\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "a million repetitions validate", args: []string{"validate", million}, code: 0, want: "ok"},
		{name: "an absurd repeat", args: []string{"validate", huge}, code: 2, want: huge + ":2:54: phases.decode.repeat: 9223372036854775807 repetitions is over the bound"},
		{name: "a capacity probe that cannot start", args: []string{"validate", capacity}, code: 2, want: capacity + ":4:91: phases.c.capacity.probe.min_requests"},
		{name: "an azure 2024 trace validates", args: []string{"validate", azure2024}, code: 0, want: "ok"},
		{name: "an azure row in year 9999", args: []string{"validate", azure9999}, code: 2,
			want: azure9999 + `:3:34: phases.p.trace.file: ` + filepath.Join(dir, "azure9999.csv") + `:3: field "TIMESTAMP": "9999-11-16 18:15:46.6805900" is 2.913e+06 days (7981 years) after the first request (line 2), over the bound of 3650 days (10 years)`},
		{name: "a mooncake timestamp of 1e300", args: []string{"validate", farOff}, code: 2, want: `mooncake-huge.jsonl:2: field "timestamp": "1e+300" is 1.157e+292 days`},
		{name: "speed 1e-300", args: []string{"validate", slow}, code: 2,
			want: slow + `:3:57: phases.p.trace.speed: at speed 1e-300 the window's last request (` + filepath.Join(dir, "mooncake.jsonl") + `:2, 10.535s after its first in the trace) would be sent`},
		{name: "an output filter on a line without output_tokens", args: []string{"validate", outFilter}, code: 2,
			want: `chat.jsonl:2: field "output_tokens": missing, and prompt.max_output_tokens filters on it`},
		{name: "a start centuries ahead", args: []string{"run", million, "--shard", "0/2", "--start-at", "2999-01-01T00:00:00Z"}, code: 2,
			want: "--start-at 2999-01-01T00:00:00Z: start time out of range: more than 24 h after now"},
		{name: "a start decades behind", args: []string{"run", million, "--shard", "0/2", "--start-at", "1990-01-01T00:00:00Z"}, code: 2,
			want: "--start-at 1990-01-01T00:00:00Z: start time out of range: more than 10 min before now"},
		{name: "--baseline-any alone", args: []string{"run", million, "--baseline-any"}, code: 2, want: "--baseline-any accepts a baseline from another scenario, model or host, and none is given"},
		{name: "merge of a device", args: []string{"merge", "/dev/zero", "--json-out", filepath.Join(dir, "m.json")}, code: 2, want: "/dev/zero: not a regular file: it is a character device"},
		{name: "judge of a directory", args: []string{"judge", million, dir}, code: 2, want: dir + ": not a regular file: it is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tc.args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("tollgate %s did not finish in 2 minutes", strings.Join(tc.args, " "))
			}
			code := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(out.String(), tc.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit %d and %q", code, out.String(), tc.code, tc.want)
			}
		})
	}
}
