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
	dir := t.TempDir()
	write := func(name, src string) string { return writeIn(t, dir, name, src) }
	million := write("million.yaml", "phases:\n  decode: {prompt_tokens: 16, max_tokens: 4, repeat: 1000000}\n")
	huge := write("huge.yaml", "phases:\n  decode: {prompt_tokens: 16, max_tokens: 4, repeat: 9223372036854775807}\n")
	capacity := write("capacity.yaml", "phases:\n  c:\n    kind: capacity\n    capacity: {min: 1, max: 64, objectives: [\"ttft_ms.p99 <= 500\"], probe: {min_requests: 1000000000}}\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "a million repetitions validate", args: []string{"validate", million}, code: 0, want: "ok"},
		{name: "an absurd repeat", args: []string{"validate", huge}, code: 2, want: huge + ":2:54: phases.decode.repeat: 9223372036854775807 repetitions is over the bound"},
		{name: "a capacity probe that cannot start", args: []string{"validate", capacity}, code: 2, want: capacity + ":4:91: phases.c.capacity.probe.min_requests"},
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
