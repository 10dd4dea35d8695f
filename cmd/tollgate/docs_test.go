package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// docBlock is one fenced block of the README or docs/: where it is, its
// language, its text, and why it is not run when the doc says so with an
// HTML comment on the line before it (<!-- not run: REASON -->).
type docBlock struct {
	file   string
	line   int
	lang   string
	text   string
	notRun string
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var (
	fence      = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```")
	notRunMark = regexp.MustCompile(`<!-- not run: (.+?) -->\s*$`)
)

// docBlocks are the fenced blocks of the README and every docs/ page.
func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	var out []docBlock
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(data)
		for _, m := range fence.FindAllStringSubmatchIndex(doc, -1) {
			before := strings.TrimRight(doc[:m[0]], "\n")
			prev := before[strings.LastIndex(before, "\n")+1:]
			b := docBlock{file: filepath.Base(f), line: strings.Count(doc[:m[0]], "\n") + 1,
				lang: doc[m[2]:m[3]], text: doc[m[4]:m[5]]}
			if n := notRunMark.FindStringSubmatch(prev); n != nil {
				b.notRun = n[1]
			} else if prev == "<!-- test-command -->" {
				// The suite itself (CI runs it through .ci/run): running it
				// from inside it would recurse.
				b.notRun = "the test suite itself"
			}
			out = append(out, b)
		}
	}
	return out
}

// shellLangs are the fence languages run as shell scripts.
var shellLangs = map[string]string{"sh": "sh", "bash": "bash", "console": "bash"}

// maxNotRun is how many blocks (and CI jobs) the docs may leave unrun: a
// recipe nobody runs rots, so exemptions stay few and each names its
// reason.
const maxNotRun = 4

// TestDocsBlocksRun runs every shell block of the README and docs/ as a
// script, and every workflow of docs/ci.md through a small stand-in of its
// CI runner (ciconfig_test.go), each in a scratch copy of what a user has:
// the repository's examples/ and schema/, a perf/ folder of scenarios, a
// tollgate/ submodule, and no out/ folder. A user who follows the docs word
// for word gets exit 0.
func TestDocsBlocksRun(t *testing.T) {
	t.Parallel()
	blocks := docBlocks(t)
	var shell, workflows, notRun []docBlock
	for _, b := range blocks {
		switch {
		case b.notRun != "":
			notRun = append(notRun, b)
		case shellLangs[b.lang] != "":
			shell = append(shell, b)
		case b.lang == "yaml" && ciKind(b.text) != "":
			workflows = append(workflows, b)
		case b.lang == "yaml" && ciFragment.MatchString(b.text):
			t.Errorf("%s: a piece of a CI file, which no test runs: show the whole file, starting with a comment naming it (# .github/workflows/NAME.yml or # .gitlab-ci.yml)", b)
		case b.file == "ci.md" && b.lang == "yaml" && strings.HasPrefix(b.text, "profiles:") && !inExamples(t, b.text):
			t.Errorf("%s: profiles that no example has word for word:\n%s", b, b.text)
		}
	}
	if len(shell) < 5 || len(workflows) < 3 {
		t.Fatalf("found only %d shell blocks and %d workflows in the docs", len(shell), len(workflows))
	}
	// tollgate on PATH for the shell blocks is the built binary (the speed-
	// judging examples run without the race detector, as elsewhere in these
	// tests). The workflows get no such help: their own build step puts
	// tollgate on PATH.
	binDir := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(perfBin, filepath.Join(binDir, "tollgate")); err != nil {
		t.Fatal(err)
	}
	env := append(docEnv(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	// The shell blocks of one page run one after another in one scratch
	// copy, as a reader runs them: a block may read what an earlier one
	// wrote (ci.md's main.json is the out/serving.json of the block
	// before). The pages, the workflows and the validated blocks run side
	// by side, each in checkouts of its own and with its own server on a
	// free port, but for the blocks that name 127.0.0.1:8000 (runShellBlocks).
	var files []string
	byFile := map[string][]docBlock{}
	for _, b := range shell {
		if byFile[b.file] == nil {
			files = append(files, b.file)
		}
		byFile[b.file] = append(byFile[b.file], b)
	}
	//
	// The pages and workflows start at once, each subtest in a goroutine of
	// its own, rather than as parallel subtests: those queue for a -parallel
	// slot behind every test of the package still waiting, and ci.md's two
	// serving runs one after the other (~80 s), the package's longest chain,
	// started ~30 s late. They wait on their simulators and servers, not on
	// the CPU.
	var mu sync.Mutex
	var jobsNotRun []string
	var runs sync.WaitGroup
	for _, f := range files {
		runs.Go(func() {
			t.Run("sh "+f, func(t *testing.T) {
				runShellBlocks(t, byFile[f], newRepoCopy(t), env)
			})
		})
	}
	for _, b := range workflows {
		runs.Go(func() {
			t.Run(b.String(), func(t *testing.T) {
				jobs := runWorkflow(t, b)
				mu.Lock()
				defer mu.Unlock()
				jobsNotRun = append(jobsNotRun, jobs...)
			})
		})
	}
	runs.Wait()
	for _, b := range notRun {
		t.Run(b.String()+" (validated)", func(t *testing.T) {
			t.Parallel()
			validateCommands(t, b)
		})
	}
	// After every subtest, parallel ones included.
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		t.Logf("ran %d shell blocks and %d workflows; not run: %d blocks %v and %d jobs %v (their tollgate commands validated)",
			len(shell), len(workflows), len(notRun), notRun, len(jobsNotRun), jobsNotRun)
		if n := len(notRun) + len(jobsNotRun); n > maxNotRun {
			t.Errorf("%d blocks and jobs are not run, at most %d may be: %v %v", n, maxNotRun, notRun, jobsNotRun)
		}
	})
}

// port8000 is held by a block that serves where the docs say a server is,
// 127.0.0.1:8000, for as long as it runs: one page's at a time.
var port8000 sync.Mutex

// runShellBlocks runs a page's shell blocks in order in the scratch copy sh.
func runShellBlocks(t *testing.T, shell []docBlock, sh string, env []string) {
	for _, b := range shell {
		t.Run(b.String(), func(t *testing.T) {
			if strings.Contains(b.text, "127.0.0.1:8000") {
				port8000.Lock()
				defer port8000.Unlock()
				stop := serveAt(t, env, sh, "127.0.0.1:8000", modelIn(b.text))
				defer stop()
			}
			if strings.Contains(b.text, " main.json ") {
				// A baseline from main: the same scenario run before.
				copyFile(t, filepath.Join(sh, "out", "serving.json"), filepath.Join(sh, "main.json"))
			}
			script := b.text
			if b.lang == "console" {
				script = consoleCommands(script)
			}
			runScript(t, sh, env, []string{shellLangs[b.lang], "-c"}, script)
		})
	}
}

// docEnv is this environment without what would reach past the scratch
// copy or change what a doc's command does: a CI's own GITHUB_ and CI_
// variables (a summary file, annotations), the examples' TOLLGATE_ knobs,
// a real API key.
func docEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "CI_") || strings.HasPrefix(k, "GITLAB_") ||
			strings.HasPrefix(k, "TOLLGATE_") && k != "TOLLGATE_TEST_COVERDIR" || k == "CI" || k == "OPENAI_API_KEY" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// ciFragment is a YAML block that looks like part of a CI file.
var ciFragment = regexp.MustCompile(`(?m)^\s*(- )?(runs-on|steps|run|uses|script|before_script|stage):`)

// inExamples reports whether text is word for word in an example.
func inExamples(t *testing.T, text string) bool {
	files, _ := filepath.Glob("../../examples/*.yaml")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), text) {
			return true
		}
	}
	return false
}

// consoleCommands keeps the commands of a console block ("$ " lines).
func consoleCommands(s string) string {
	var cmds []string
	for l := range strings.Lines(s) {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			cmds = append(cmds, c)
		}
	}
	return strings.Join(cmds, "")
}

// newRepoCopy is a scratch copy of what a user's repository has for the
// recipes: tollgate's examples/ and schema/ (the README's commands run in a
// checkout of tollgate), the examples again as perf/ (docs/ci.md keeps a
// team's scenarios there), and an empty tollgate/, the submodule the
// recipes build tollgate from (see buildLine). No out/: tollgate makes it.
func newRepoCopy(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	for to, from := range map[string]string{"examples": "../../examples", "schema": "../../schema", "perf": "../../examples"} {
		if err := os.CopyFS(filepath.Join(work, to), os.DirFS(from)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(work, "tollgate"), 0o755); err != nil {
		t.Fatal(err)
	}
	return work
}

// buildLine is how the docs build tollgate from a checkout of its source.
// The tests do not compile it again for each recipe: the scripts get the
// binary TestMain built from this same package (./cmd/tollgate is the
// package under test), linked where the line would write it. The line
// itself is checked once, for real, in this module with go build -n (which
// resolves the flags and the package and prints the plan without running
// it), so a typo in it still fails.
const buildLine = "go build -o bin/tollgate ./cmd/tollgate"

var (
	buildChecked  sync.Once
	buildCheckErr error
	goRunLine     = regexp.MustCompile(`\bgo run \./cmd/tollgate\b`)
	// builtBin is the binary buildLine writes, run by its path; it becomes
	// the logged tollgate below, so its exit codes are checked too.
	builtBin = regexp.MustCompile(`(^|[\s;&|(])(\./)?bin/tollgate\b`)
	otherGo  = regexp.MustCompile(`\bgo (build|install|run|get)\b`)
	// tollgateCommand is a tollgate command in a script, which must reach
	// the logging function below.
	tollgateCommand = regexp.MustCompile(`(^|\s)tollgate (run|validate|compare|schema|serve|report|version|help)\b`)
)

// testScript is a doc's script as the tests run it: the build line links
// the binary TestMain built (run with $TOLLGATE_TEST_BIN in the script's
// environment) where the line would write it, go run ./cmd/tollgate and
// bin/tollgate are that binary on PATH, and any other go command fails the
// test.
func testScript(t *testing.T, script string) string {
	t.Helper()
	buildChecked.Do(func() {
		cmd := exec.Command("go", append([]string{"build", "-n"}, strings.Fields(buildLine)[2:]...)...)
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildCheckErr = fmt.Errorf("%s (dry run): %w\n%s", buildLine, err, out)
		}
	})
	if strings.Contains(script, buildLine) && buildCheckErr != nil {
		t.Fatal(buildCheckErr)
	}
	const built = "\x00build\x00" // the build line, kept from builtBin
	script = strings.ReplaceAll(script, buildLine, built)
	script = goRunLine.ReplaceAllString(script, "tollgate")
	script = builtBin.ReplaceAllString(script, "${1}tollgate")
	script = strings.ReplaceAll(script, built, `mkdir -p bin && ln -sf "$TOLLGATE_TEST_BIN" bin/tollgate`)
	if m := otherGo.FindString(script); m != "" {
		t.Fatalf("%q in a doc's script: only %q and go run ./cmd/tollgate are known to the test\n%s", m, buildLine, script)
	}
	return script
}

// runScript runs a doc's script in dir with argv (e.g. sh -c) and fails
// the test unless it and every tollgate command in it exit 0. A tollgate
// compare that exits 1 or 4 is taken as a verdict: it judged a regression,
// or could not decide one, between two wall-clock runs of the simulator on
// a shared machine, which is the recipe working, not failing; it is logged
// (TestDocsPRRecipeFailsOnASlowerServer holds what it must decide).
// Anything else it exits (2: a recipe that is wrong) fails.
func runScript(t *testing.T, dir string, env, argv []string, script string) string {
	t.Helper()
	script = testScript(t, script)
	log := filepath.Join(t.TempDir(), "tollgate.log")
	// Every tollgate command is logged with its exit code, so that one that
	// fails in the middle of a block (the docs do not use set -e) is seen.
	prelude := `tollgate() {
  rc=0; command tollgate "$@" || rc=$?
  echo "$rc tollgate $*" >> "$TOLLGATE_TEST_LOG"
  if [ "$1" = compare ] && { [ "$rc" = 1 ] || [ "$rc" = 4 ]; }; then return 0; fi
  return "$rc"
}
`
	run := func() ([]byte, []byte) {
		_ = os.Remove(log)
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], prelude+script)...)
		cmd.Dir = dir
		// A copy: env is shared by the pages' blocks, which run at once.
		cmd.Env = append(slices.Clone(env), "TOLLGATE_TEST_BIN="+perfBin, "TOLLGATE_TEST_LOG="+log)
		out, err := cmd.CombinedOutput()
		if err != nil && !onlyLateRuns(log, out) {
			t.Fatalf("%v\n--- script:\n%s\n--- output:\n%s", err, script, out)
		}
		ran, _ := os.ReadFile(log)
		return out, ran
	}
	out, ran := run()
	// A run the tool declares unmeasured because its client woke late for
	// its sends (exit 3, invalid: dispatch_lag, the client's CPU taken by a
	// loaded machine) says nothing about the doc: the block is run again,
	// up to lagTries in all, as TestExamplesRun runs such an example again.
	for try := 1; try < lagTries && onlyLateRuns(log, out); try++ {
		t.Logf("try %d: a run's client or a shard was late for its schedule (invalid: dispatch_lag, shard_late); running the block again\n%s", try, out)
		out, ran = run()
	}
	if onlyLateRuns(log, out) {
		// Late on every try: the measurement is invalid, rightly, and the
		// tool said why and what to do (start with more lead, give the
		// client CPU); on this machine that is the block's right outcome.
		if !bytes.Contains(out, []byte("max_dispatch_lag")) && !bytes.Contains(out, []byte("--max-start-lateness")) {
			t.Errorf("the late runs do not say what to do:\n%s", out)
		}
		t.Logf("late on every one of %d tries on this machine: the measurement is invalid (exit 3), as it must be\n%s", lagTries, out)
		return string(out)
	}
	for l := range strings.Lines(string(ran)) {
		code, what, _ := strings.Cut(strings.TrimSpace(l), " ")
		switch {
		case code == "0":
		case (code == "1" || code == "4") && strings.HasPrefix(what, "tollgate compare "):
			t.Logf("%s: exit %s (a regression judged, or inconclusive, between two runs; taken as a verdict)", what, code)
		default:
			t.Errorf("%s: exit %s\n--- output:\n%s", what, code, out)
		}
	}
	if ran := string(ran); ran == "" && tollgateCommand.MatchString(script) {
		t.Errorf("no tollgate command ran\n%s", out)
	}
	return string(out)
}

// onlyLateRuns: a script's tollgate commands (logged in log) all exited 0
// (or compare's verdicts) but for runs that exited 3, and its output says
// the measurement was invalid for the client's lateness alone.
func onlyLateRuns(log string, out []byte) bool {
	ran, _ := os.ReadFile(log)
	late := false
	for l := range strings.Lines(string(ran)) {
		code, what, _ := strings.Cut(strings.TrimSpace(l), " ")
		switch {
		case code == "0", (code == "1" || code == "4") && strings.HasPrefix(what, "tollgate compare "):
		case code == "3" && (strings.HasPrefix(what, "tollgate run ") || strings.HasPrefix(what, "tollgate merge ") || strings.HasPrefix(what, "tollgate judge ")):
			late = true
		default:
			return false
		}
	}
	// run and judge say "the measurement is invalid (REASON at PATH)", merge
	// "the merged measurement is invalid (REASON at PATH)", once for each
	// finding: here every one is lateness, the client's (dispatch_lag) or a
	// shard's start (shard_late), which a loaded machine causes.
	n := bytes.Count(out, []byte("measurement is invalid ("))
	lateN := bytes.Count(out, []byte("measurement is invalid (dispatch_lag at ")) + bytes.Count(out, []byte("measurement is invalid (shard_late at "))
	return late && n > 0 && n == lateN
}

// validateCommands loads each tollgate run of a block that is not run, as
// that command would (scenario, --profile, --var, --set), with tollgate
// validate: a missing profile or an undeclared var is still caught.
func validateCommands(t *testing.T, b docBlock) {
	t.Helper()
	work := newRepoCopy(t)
	runs := regexp.MustCompile(`tollgate run (\S+)((?:\s+--?[\w-]+(?:[ =][^-\s]\S*)?)*)`).FindAllStringSubmatch(strings.ReplaceAll(b.text, "\\\n", " "), -1)
	if len(runs) == 0 {
		t.Logf("no tollgate run in %s", b)
	}
	for _, m := range runs {
		args := []string{"validate", m[1]}
		f := recipeWords(t, m[2])
		for i := 0; i < len(f); i++ {
			switch name, _, _ := strings.Cut(f[i], "="); name {
			case "--profile", "--var", "--set":
				args = append(args, f[i])
				if !strings.Contains(f[i], "=") && i+1 < len(f) {
					args = append(args, f[i+1])
					i++
				}
			}
		}
		cmd := exec.Command(perfBin, args...)
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("tollgate %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// recipeWords splits a command's arguments (one command: its lines are
// folded) as the shell does, with the variables the recipes read from CI:
// TOLLGATE_BASE_URL is where the docs' examples find a server.
func recipeWords(t *testing.T, args string) []string {
	t.Helper()
	cmd := exec.Command("bash", "-c", `printf '%s\0' `+strings.ReplaceAll(args, "\n", " "))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TOLLGATE_BASE_URL=http://127.0.0.1:8000"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the shell cannot read the arguments %q: %v", args, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
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

// A doc block is run again only when every failing command is a run that
// its own client's lateness made invalid.
func TestOnlyLateRuns(t *testing.T) {
	t.Parallel()
	const late = "tollgate run: the measurement is invalid (dispatch_lag at /runs/server/phases/load/points/0/dispatch_lag_ms/p99): …\n"
	const lateShard = "tollgate merge: the merged measurement is invalid (shard_late at /shards/0/start_lateness_ms): …\n" +
		"tollgate judge: the measurement is invalid (shard_late at /shards/0/start_lateness_ms): …\n"
	for _, tc := range []struct {
		name, log, out string
		want           bool
	}{
		{"a late run", "0 tollgate validate x\n3 tollgate run x\n", late, true},
		{"a late run and compare's verdict", "3 tollgate run x\n4 tollgate compare a b\n", late, true},
		{"late and unreachable", "3 tollgate run x\n", late + "tollgate run: the measurement is invalid (unreachable at /runs/server): …\n", false},
		{"a run that could not judge, not late", "3 tollgate run x\n", "tollgate: connection refused\n", false},
		{"a failed gate beside a late run", "3 tollgate run x\n1 tollgate run y\n", late, false},
		{"every command passed", "0 tollgate run x\n", "", false},
		{"shards started late, merged and judged", "0 tollgate run a\n0 tollgate run b\n3 tollgate merge a b\n3 tollgate judge x m\n", lateShard, true},
		{"a merge invalid for another reason", "3 tollgate merge a b\n", "tollgate merge: the merged measurement is invalid (unreachable at /shards/0): …\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "tollgate.log")
			if err := os.WriteFile(log, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := onlyLateRuns(log, []byte(tc.out)); got != tc.want {
				t.Errorf("onlyLateRuns = %v, want %v", got, tc.want)
			}
		})
	}
}
