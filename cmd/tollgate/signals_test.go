package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// holdScenario keeps requests in flight for minutes: after an interrupt
// they use the whole grace period, so the run is still finishing when a
// second signal comes.
const holdScenario = `targets:
  sim: {kind: embedded, sim: {decode_step: 50ms}}
phases:
  load: {kind: load, concurrency: 2, duration: 10m, prompt_tokens: 16, max_tokens: 5000}
`

// Lines tollgate writes on stderr as an interrupt goes.
const (
	sayRunning     = "tollgate: running "
	sayInterrupted = "tollgate: interrupted; finishing the partial report"
	sayAgain       = "tollgate: interrupt again (Ctrl-C, SIGINT) to quit now"
)

// liveRun is the binary running, its stderr read line by line.
type liveRun struct {
	cmd   *exec.Cmd
	lines chan string
	mu    sync.Mutex
	all   strings.Builder
}

// startLive starts cmd, reading its stderr.
func startLive(t *testing.T, cmd *exec.Cmd) *liveRun {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &liveRun{cmd: cmd, lines: make(chan string, 64)}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			r.mu.Lock()
			r.all.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			r.lines <- sc.Text()
		}
	}()
	return r
}

// waitFor reads stderr up to a line that holds s: the binary said it.
func (r *liveRun) waitFor(t *testing.T, s string) {
	t.Helper()
	for line := range r.lines {
		if strings.Contains(line, s) {
			return
		}
	}
	t.Fatalf("stderr ended without %q:\n%s", s, r.stderr())
}

// drain reads stderr to its end: every process that held it has exited.
func (r *liveRun) drain() {
	for range r.lines {
	}
}

func (r *liveRun) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all.String()
}

// exitCode is wait's code. A run that never exits fails the test when the
// suite's -timeout ends it.
func (r *liveRun) exitCode(t *testing.T) int {
	t.Helper()
	code := r.wait()
	if code < 0 {
		t.Fatalf("the process did not run to its end\n%s", r.stderr())
	}
	return code
}

// wait reads stderr to its end, which comes when every process holding it
// has exited (tollgate too, under a shell the signal ended), then waits
// for the process and returns its exit code (-1: it could not be had).
func (r *liveRun) wait() int {
	r.drain()
	err := r.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// One SIGTERM writes the report, however it is delivered: to the process
// group (as timeout(1), CI runners and kubectl do, tollgate's parent shell
// getting it too), twice (timeout signals the child, then its group; the
// kernel merges the two only while the first is pending, so the second
// here is sent once tollgate said it was interrupted, and again once it
// listens for a second interrupt), or to the process and then the group.
// The binary is signalled once it says it is running, and its outputs end
// with a step summary (a FIFO) that the test reads only after the last
// signal: tollgate is still there to write it, or a SIGTERM quit it.
func TestOneSIGTERMWritesTheReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scenario := writeIn(t, dir, "hold.yaml", holdScenario)
	group := func(pid int) error { return syscall.Kill(-pid, syscall.SIGTERM) }
	self := func(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }
	for i, tc := range []struct {
		name  string
		shell bool // tollgate runs under sh, which the group signal reaches too
		first func(pid int) error
		then  []func(pid int) error // each once tollgate says the next of sayInterrupted, sayAgain
	}{
		{name: "to the group", first: group},
		{name: "to the group, again while it finishes", first: group, then: []func(int) error{group}},
		{name: "to the group, again when a SIGINT would quit", first: group, then: []func(int) error{group, group}},
		{name: "to the process, then its group", first: self, then: []func(int) error{group}},
		{name: "to a shell and tollgate under it", shell: true, first: group, then: []func(int) error{group, group}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
			fifo := filepath.Join(dir, fmt.Sprintf("summary%d", i))
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skip(err)
			}
			args := []string{"run", scenario, "--json-out", out}
			cmd := exec.Command(bin, args...)
			if tc.shell {
				// The shell waits for tollgate; SIGTERM ends the shell, and
				// tollgate, whose stderr is the pipe, goes on to finish.
				cmd = exec.Command("sh", append([]string{"-c", `"$0" "$@"; echo "tollgate exited $?" >&2`, bin}, args...)...)
			}
			cmd.Env = append(os.Environ(), "GITHUB_STEP_SUMMARY="+fifo)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			r := startLive(t, cmd)
			r.waitFor(t, sayRunning)
			if err := tc.first(cmd.Process.Pid); err != nil {
				t.Fatal(err)
			}
			for i, send := range tc.then {
				r.waitFor(t, []string{sayInterrupted, sayAgain}[i])
				if err := send(cmd.Process.Pid); err != nil {
					t.Fatal(err)
				}
			}
			exited := make(chan int, 1)
			go func() { exited <- r.wait() }()
			summary := make(chan []byte, 1)
			go func() { b, _ := os.ReadFile(fifo); summary <- b }()
			select {
			case code := <-exited:
				if !tc.shell {
					releaseFIFO(fifo)
					t.Fatalf("exit %d before the step summary was written: a SIGTERM quit it\n%s", code, r.stderr())
				}
				// The shell is gone; tollgate writes its summary all the same.
				if md := <-summary; !strings.Contains(string(md), "INCOMPLETE") {
					t.Errorf("step summary:\n%s", md)
				}
			case md := <-summary:
				if !strings.Contains(string(md), "INCOMPLETE") {
					t.Errorf("step summary:\n%s", md)
				}
				if code := <-exited; !tc.shell && code != ExitInterrupted {
					t.Errorf("exit %d, want 130\n%s", code, r.stderr())
				}
			}
			rep := readJSONReport(t, out)
			if rep["status"] != "incomplete" {
				t.Errorf("status %v, want incomplete", rep["status"])
			}
			if n := strings.Count(r.stderr(), sayInterrupted); n != 1 {
				t.Errorf("%d interrupts said, want one:\n%s", n, r.stderr())
			}
		})
	}
}

// releaseFIFO ends a read of fifo that waits for a writer.
func releaseFIFO(fifo string) {
	if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		_ = f.Close()
	}
}

// A SIGINT within a second of the first interrupt is that interrupt
// delivered again; one after quits at once; a SIGTERM never does.
func TestQuitsAtOnce(t *testing.T) {
	t.Parallel()
	first := time.Unix(1000, 0)
	for _, tc := range []struct {
		name  string
		sig   os.Signal
		after time.Duration
		quits bool
	}{
		{name: "a SIGINT delivered again at once", sig: os.Interrupt, after: time.Millisecond},
		{name: "a SIGINT just inside the window", sig: os.Interrupt, after: sameInterrupt - time.Nanosecond},
		{name: "a SIGINT once tollgate listens", sig: os.Interrupt, after: sameInterrupt, quits: true},
		{name: "a SIGTERM at once", sig: syscall.SIGTERM, after: time.Millisecond},
		{name: "a SIGTERM much later", sig: syscall.SIGTERM, after: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := quitsAtOnce(tc.sig, first.Add(tc.after), first); got != tc.quits {
				t.Errorf("quits %v, want %v", got, tc.quits)
			}
		})
	}
}

// A second interrupt, once tollgate says it listens for one, quits at
// once: without it the run below would never end, its outputs held on a
// step summary (a FIFO) that nobody reads.
func TestSecondInterruptQuitsAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "summary")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(bin, "run", writeIn(t, dir, "hold.yaml", holdScenario), "--json-out", filepath.Join(dir, "r.json"))
	cmd.Env = append(os.Environ(), "GITHUB_STEP_SUMMARY="+fifo)
	cmd.Stdout = io.Discard
	r := startLive(t, cmd)
	r.waitFor(t, sayRunning)
	interruptTwice(t, r)
	if code := r.exitCode(t); code != ExitInterrupted {
		t.Errorf("exit %d, want 130\n%s", code, r.stderr())
	}
}

// interruptTwice interrupts r, waits until it says a second interrupt
// quits at once, and sends it.
func interruptTwice(t *testing.T, r *liveRun) {
	t.Helper()
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, sayAgain)
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
}

// waitForFile waits until the file at path holds s (the binary wrote it).
func waitForFile(t *testing.T, path, s string) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), s) {
			return
		}
	}
}
