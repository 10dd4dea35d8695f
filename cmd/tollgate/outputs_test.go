package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/report"
)

// Output paths that would clobber an input or each other, or that name no
// file, are refused before anything is sent.
func TestOutputPathsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.yaml")
	copyFile(t, "../../examples/quickstart.yaml", scenario)
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(scenario, link); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.out")
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"json-out is the scenario", []string{"--json-out", scenario}, "is the scenario file"},
		{"json-out is the scenario, spelt differently", []string{"--json-out", filepath.Join(dir, ".", "x", "..", "s.yaml")}, "is the scenario file"},
		{"html is a link to the scenario", []string{"--html", link}, "is the scenario file"},
		{"two outputs share a path", []string{"--json-out", a, "--junit", a}, "--json-out and --junit: invalid output: both name"},
		{"samples-out shares a path", []string{"--csv", a, "--samples-out", filepath.Join(dir, "a.out")}, "--csv and --samples-out"},
		{"empty json-out", []string{"--json-out="}, "--json-out: invalid output: an empty path"},
		{"empty samples-out", []string{"--samples-out="}, "--samples-out: invalid output: an empty path"},
		{"html to stdout", []string{"--html", "-"}, "--html: invalid output: - (standard output) is not offered"},
		{"samples to stdout", []string{"--samples-out", "-"}, "--samples-out: invalid output: - (standard output) is not offered"},
		{"two outputs to stdout", []string{"--json-out", "-", "--csv", "-"}, "both ask for standard output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := os.ReadFile(scenario)
			if err != nil {
				t.Fatal(err)
			}
			r := tollgate(t, append([]string{"run", scenario}, tc.args...)...)
			if r.code != ExitInvalid || !strings.Contains(r.stderr, tc.stderr) || r.stdout != "" {
				t.Fatalf("exit %d, want 2 with %q\nstdout:\n%s\nstderr:\n%s", r.code, tc.stderr, r.stdout, r.stderr)
			}
			if after, _ := os.ReadFile(scenario); string(after) != string(before) {
				t.Error("the scenario file was changed")
			}
			if _, err := os.Stat(a); err == nil {
				t.Error("an output was written although nothing ran")
			}
		})
	}
	// tollgate report refuses an output over the report it reads.
	rep := filepath.Join(dir, "r.json")
	if r := tollgate(t, "run", scenario, "-q", "--no-gate", "--json-out", rep); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r := tollgate(t, "report", rep, "--html", rep); r.code != ExitInvalid || !strings.Contains(r.stderr, "is the report") {
		t.Fatalf("report over itself: exit %d: %s", r.code, r.stderr)
	}
}

// "-" streams a format to stdout alone; the summary moves to stderr.
func TestOutputToStdout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, flag string
		valid      func(string) bool
	}{
		{"json", "--json-out", func(s string) bool { return json.Valid([]byte(s)) }},
		{"junit", "--junit", func(s string) bool { return strings.HasPrefix(s, "<?xml") }},
		{"markdown", "--markdown", func(s string) bool { return strings.HasPrefix(s, "#") }},
		{"csv", "--csv", func(s string) bool { return strings.Contains(strings.SplitN(s, "\n", 2)[0], ",") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// --no-gate: quickstart's speed gates are not what is tested.
			r := tollgate(t, "run", "examples/quickstart.yaml", "--no-gate", tc.flag, "-")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if !tc.valid(r.stdout) {
				t.Errorf("stdout is not %s alone:\n%s", tc.name, r.stdout)
			}
			if !strings.Contains(r.stderr, "quickstart — 1 run") {
				t.Errorf("the summary is not on stderr:\n%s", r.stderr)
			}
		})
	}
}

// An output that cannot be written makes the exit code non-zero and is
// named: a full disk, and a directory removed while the run goes.
func TestOutputWriteFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// args are given the output directory, which exists when the run
		// starts; removeDir removes it while the run goes.
		args      func(dir string) []string
		removeDir bool
		stderr    []string
	}{
		{name: "samples-out on a full disk", args: func(string) []string { return []string{"--samples-out", "/dev/full"} },
			stderr: []string{"--samples-out /dev/full: ", "no space left on device"}},
		{name: "summary on a full disk", args: func(string) []string { return []string{"--json-out", "-"} },
			stderr: nil},
		{name: "directory removed during the run", removeDir: true,
			args: func(dir string) []string {
				return []string{"--samples-out", filepath.Join(dir, "s.jsonl"), "--json-out", filepath.Join(dir, "r.json"), "--junit", filepath.Join(dir, "j.xml")}
			},
			stderr: []string{"--samples-out " + "DIR/s.jsonl: the file was removed or replaced during the run", "--json-out: writing DIR/r.json", "--junit: writing DIR/j.xml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat("/dev/full"); err != nil && !tc.removeDir {
				t.Skip("no /dev/full")
			}
			dir := filepath.Join(t.TempDir(), "out")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"run", "examples/load-sweep.yaml", "--no-gate", "--set", "phases.load.duration=1s"}, tc.args(dir)...)
			cmd := exec.Command(bin, args...)
			cmd.Dir = "../.."
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if tc.name == "summary on a full disk" {
				full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
				if err != nil {
					t.Skip(err)
				}
				defer full.Close()
				cmd.Stdout = full
				tc.stderr = []string{"--json-out: write /dev/stdout", "no space left on device"}
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			if tc.removeDir {
				// Once the run has opened its samples file: after a fixed
				// 1.5 s, a run slow to start on a loaded machine had not,
				// made its outputs in the folder removed before it, and
				// passed (exit 0, seen at load 6-9). load-sweep's points
				// run on for seconds after the file appears.
				samples := filepath.Join(dir, "s.jsonl")
				for _, err := os.Stat(samples); err != nil && !exited(waited); _, err = os.Stat(samples) {
					time.Sleep(20 * time.Millisecond)
				}
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			}
			err := <-waited
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitNotJudged {
				t.Fatalf("exit %v, want 3\n%s", err, stderr.String())
			}
			for _, want := range tc.stderr {
				want = strings.ReplaceAll(want, "DIR", dir)
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

// --samples-out reaches the file as the run goes (at least every second),
// and a second interrupt, which exits at once, leaves only whole lines.
// The run is held in writing its outputs (the step summary is a FIFO no
// one reads) until the second interrupt comes.
func TestSamplesOutStreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "s.jsonl")
	fifo := filepath.Join(dir, "summary")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(bin, "run", "examples/load-sweep.yaml", "-q", "--samples-out", out,
		"--set", "phases.load.duration=60s", "--set", "phases.load.requests=100000")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GITHUB_STEP_SUMMARY="+fifo)
	r := startLive(t, cmd)
	// The run lasts 60 s and is interrupted only below: samples in the
	// file before then were written as the run went. Polled, not read at a
	// fixed time, so a slow start (a loaded machine, -race) is not a failure.
	var st os.FileInfo
	var err error
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if st, err = os.Stat(out); err == nil && st.Size() > 0 {
			break
		}
	}
	if err != nil || st.Size() == 0 {
		t.Fatalf("nothing written to --samples-out 45 s into a 60 s run (%v)", err)
	}
	interruptTwice(t, r)
	if code := r.exitCode(t); code != ExitInterrupted {
		t.Errorf("exit %d, want 130", code)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("%d bytes, last line not whole", len(data))
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("line %d is not JSON: %q", i+1, l)
		}
	}
	if st != nil && int64(len(data)) < st.Size() {
		t.Errorf("the file shrank from %d to %d bytes", st.Size(), len(data))
	}
}

// TestInvalidReportKeptBeside: a report that fails its own schema is never
// written at the report's path, and never lost: it is kept beside it with
// the validation errors. (No server answer reaches this path any more: the
// client refuses out-of-range values where they enter; this is the guard
// behind that check, so it is driven with an invalid report directly.)
func TestInvalidReportKeptBeside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o := addOutputFlags(fs, true)
	if err := fs.Parse([]string{"--json-out", out}); err != nil {
		t.Fatal(err)
	}
	rep := &report.Report{SchemaVersion: report.SchemaVersion, Status: "no such status", Runs: map[string]*report.Run{}, Gates: []report.GateResult{}}
	var stdout, wrote bytes.Buffer
	err := o.write(rep, nil, &stdout, &wrote)
	var inv *report.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), out+".invalid.json") {
		t.Fatalf("error %v, want an InvalidError naming the kept file", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an invalid report was written at the report's path")
	}
	b, err := os.ReadFile(out + ".invalid.json")
	if err != nil {
		t.Fatal(err)
	}
	var kept struct {
		ValidationErrors []string       `json:"validation_errors"`
		Report           map[string]any `json:"report"`
	}
	if err := json.Unmarshal(b, &kept); err != nil {
		t.Fatal(err)
	}
	if len(kept.ValidationErrors) == 0 || kept.Report["status"] != "no such status" {
		t.Errorf("kept %s", b)
	}
}

// TestOutOfRangeServerValueKeepsTheReport: a server answering a negative
// cached_tokens makes that request a protocol error; the report is valid
// and written, and the run exits 3 (the phase's error budget is spent).
func TestOutOfRangeServerValueKeepsTheReport(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range []string{
				`{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}`,
				`{"id":"x","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":-5}}}`,
				`[DONE]`,
			} {
				fmt.Fprintf(w, "data: %s\n\n", ev)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte(`targets:
  s: {kind: openai, base_url: "`+srv.URL+`", model: m}
phases:
  decode: {prompt: {text: hello}, max_tokens: 2, repeat: 2}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	r := tollgate(t, "run", scenario, "--json-out", out)
	if r.code != ExitNotJudged || !strings.Contains(r.stdout+r.stderr, "cached_tokens") {
		t.Fatalf("exit %d, want 3 naming cached_tokens\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if rep := readJSONReport(t, out); rep["status"] != "error" {
		t.Errorf("status %v", rep["status"])
	}
}

// Every output path gets its missing parent directories, as a CI job's
// fresh checkout has no out/ folder; tollgate report's too.
func TestOutputParentsCreated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := func(rel string) string { return filepath.Join(dir, "out", rel) }
	args := []string{"run", example, "-q",
		"--json-out", out("r.json"), "--html", out("html/r.html"), "--junit", out("a/b/c/r.junit.xml"),
		"--markdown", out("r.md"), "--csv", out("csv/r.csv"), "--samples-out", out("samples/s.jsonl")}
	if r := tollgate(t, args...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for i := 4; i < len(args); i += 2 {
		if _, err := os.Stat(args[i]); err != nil {
			t.Errorf("%s: %v", args[i-1], err)
		}
	}
	st, err := os.Stat(out("a/b"))
	if err != nil || st.Mode().Perm()&^0o755 != 0 {
		t.Errorf("a made directory: %v %v, want 0755 or less (umask)", st.Mode(), err)
	}
	if r := tollgate(t, "report", out("r.json"), "--html", filepath.Join(dir, "again", "r.html")); r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
}

// A parent directory that cannot be made is refused with exit 2 before
// anything is sent, and the directories made for the other outputs are
// removed again.
func TestOutputParentsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// path is the refused output's path under the scratch dir.
		path   func(dir string) string
		stderr string
		root   bool // meaningful when running as root
	}{
		{"a parent is a file", func(dir string) string {
			f := filepath.Join(dir, "file")
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(f, "out", "r.json")
		}, "not a directory", true},
		{"a parent is in a read-only directory", func(dir string) string {
			ro := filepath.Join(dir, "ro")
			if err := os.Mkdir(ro, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(ro, 0o755) })
			return filepath.Join(ro, "out", "r.json")
		}, "permission denied", false},
		{"a read-only directory", func(dir string) string {
			ro := filepath.Join(dir, "ro")
			if err := os.Mkdir(ro, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(ro, 0o755) })
			return filepath.Join(ro, "r.json")
		}, "permission denied", false},
		{"a parent's name is too long", func(dir string) string {
			return filepath.Join(dir, strings.Repeat("d", 300), "r.json")
		}, "file name too long", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if os.Geteuid() == 0 && !tc.root {
				t.Skip("root writes into read-only directories")
			}
			dir := t.TempDir()
			bad := tc.path(dir)
			// The good outputs come first, so their directories are made
			// before the bad one is found.
			r := tollgate(t, "run", example,
				"--json-out", filepath.Join(dir, "made", "deep", "r.json"),
				"--samples-out", filepath.Join(dir, "made2", "s.jsonl"),
				"--junit", bad)
			if r.code != ExitInvalid || !strings.Contains(r.stderr, "--junit: invalid output: ") ||
				!strings.Contains(r.stderr, tc.stderr) || r.stdout != "" {
				t.Fatalf("exit %d, want 2 with --junit and %q\nstdout:\n%s\nstderr:\n%s", r.code, tc.stderr, r.stdout, r.stderr)
			}
			for _, d := range []string{"made", "made2"} {
				if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
					t.Errorf("%s was left behind by a refused run", d)
				}
			}
		})
	}
}

// exited reports whether the process waited on has ended, leaving its
// result in waited for the next receive.
func exited(waited chan error) bool {
	select {
	case err := <-waited:
		waited <- err
		return true
	default:
		return false
	}
}
