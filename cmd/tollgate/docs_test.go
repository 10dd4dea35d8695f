package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docCommand is one tollgate command from a shell block of the README or
// docs/, with continuation lines joined.
type docCommand struct {
	file, line string
}

var shellBlock = regexp.MustCompile("(?s)```(?:sh|bash)\n(.*?)```")

// docCommands finds every tollgate command the docs tell a user to type.
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	var out []docCommand
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range shellBlock.FindAllStringSubmatch(string(data), -1) {
			var joined []string
			cur := ""
			for _, l := range strings.Split(m[1], "\n") {
				if strings.HasSuffix(l, "\\") {
					cur += strings.TrimSuffix(l, "\\")
					continue
				}
				joined = append(joined, cur+l)
				cur = ""
			}
			for _, l := range joined {
				l = strings.TrimSpace(l)
				if strings.HasPrefix(l, "go run ./cmd/tollgate ") || strings.HasPrefix(l, "tollgate ") {
					out = append(out, docCommand{file: filepath.Base(f), line: l})
				}
			}
		}
	}
	return out
}

// TestDocsCommandsRun runs every tollgate command of the README and docs/,
// as written, in a scratch copy of the places they name: a user who
// follows the docs word for word gets exit 0.
func TestDocsCommandsRun(t *testing.T) {
	cmds := docCommands(t)
	if len(cmds) < 5 {
		t.Fatalf("found only %d commands in the docs", len(cmds))
	}
	work := t.TempDir()
	// What the commands refer to: the examples, a team's perf/ copy of the
	// serving harness (docs/ci.md), an out/ folder.
	if err := os.CopyFS(filepath.Join(work, "examples"), os.DirFS("../../examples")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(work, "schema"), os.DirFS("../../schema")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"perf", "out"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	serving, err := os.ReadFile("../../examples/serving.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "perf", "serving.yaml"), serving, 0o644); err != nil {
		t.Fatal(err)
	}
	// tollgate on PATH is the built binary (the speed-judging examples run
	// without the race detector, as elsewhere in these tests).
	binDir := filepath.Join(work, ".bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(perfBin, filepath.Join(binDir, "tollgate")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, c := range cmds {
		t.Run(c.file+": "+c.line, func(t *testing.T) {
			line := strings.Replace(c.line, "go run ./cmd/tollgate ", "tollgate ", 1)
			if strings.Contains(line, "127.0.0.1:8000") {
				stop := serveAt(t, env, work, "127.0.0.1:8000", modelIn(line))
				defer stop()
			}
			if strings.Contains(line, " main.json ") {
				// A baseline from main: the same scenario run before.
				copyFile(t, filepath.Join(work, "out", "serving.json"), filepath.Join(work, "main.json"))
			}
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "-c", line)
			cmd.Dir, cmd.Env = work, env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
		})
	}
}

// modelIn is the value of vars.model=… in a command, for the server to serve.
func modelIn(line string) string {
	if m := regexp.MustCompile(`vars\.model=(\S+)`).FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// serveAt starts tollgate serve where the docs say a server is; the test is
// skipped when something else holds the port.
func serveAt(t *testing.T, env []string, dir, addr, model string) func() {
	t.Helper()
	if l, err := net.Listen("tcp", addr); err != nil {
		t.Skipf("%s is taken on this machine: %v", addr, err)
	} else {
		_ = l.Close()
	}
	args := []string{"serve", "--addr", addr}
	if model != "" {
		args = append(args, "--model", model)
	}
	cmd := exec.Command(perfBin, args...)
	cmd.Dir, cmd.Env = dir, env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Ready when it accepts connections (bounded).
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("tollgate serve did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	go func() { _, _ = bufio.NewReader(stdout).WriteTo(discard{}) }()
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatalf("%s: %v (the docs run it after the command that writes it)", from, err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
