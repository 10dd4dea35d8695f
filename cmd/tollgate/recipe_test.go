package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// prServe is the server main's run of the pull-request recipe measures:
// tollgate serve twice as fast as its defaults (5ms, 50000 tokens/s, 10ms,
// 50µs), so the recipe's two runs of --profile ci take half as long (they
// were 84 s, the package's longest test). A ratio is what compare judges,
// and the simulator's steps keep to deadlines, so a late wake-up does not
// add up over a response.
var prServe = []string{"--ttft-base", "2.5ms", "--prefill-tokens-per-s", "100000", "--decode-step", "5ms", "--decode-step-per-seq", "25us"}

// slowerServe is prServe 10% slower: TTFT and each decode step × 1.1.
var slowerServe = []string{"--ttft-base", "2.75ms", "--prefill-tokens-per-s", "90909.09", "--decode-step", "5.5ms", "--decode-step-per-seq", "27.5us"}

// The pull-request recipe of docs/ci.md, run word for word: main's run of
// the serving scenario with --profile ci against a server, the pull
// request's run against the same server 10% slower, then the recipe's
// compare, which must fail (exit 1). A regression gate that cannot fail
// is a defect: with the ci profile's earlier 2 samples per slice every
// slice was "cannot tell" and this exited 0.
func TestDocsPRRecipeFailsOnASlowerServer(t *testing.T) {
	t.Parallel()
	var wf ghWorkflow
	for _, b := range docBlocks(t) {
		if b.file == "ci.md" && ciKind(b.text) == "github" && strings.Contains(b.text, "tollgate compare ") {
			var err error
			if wf, err = parseGitHub(b.text); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	var runStep, compareStep ghStep
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			switch {
			case strings.Contains(s.Run, "tollgate run perf/serving.yaml --profile ci"):
				runStep = s
			case strings.Contains(s.Run, "tollgate compare ") && strings.Contains(s.Run, "--fail-on"):
				compareStep = s
			}
		}
	}
	if runStep.Run == "" || compareStep.Run == "" {
		t.Fatalf("docs/ci.md has no workflow with a tollgate run perf/serving.yaml --profile ci step and a tollgate compare --fail-on step")
	}
	binDir := t.TempDir()
	if err := os.Symlink(perfBin, filepath.Join(binDir, "tollgate")); err != nil {
		t.Fatal(err)
	}
	env := append(docEnv(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "OPENAI_API_KEY="+fakeKey)
	// step runs a step's script as the runner would (bash -e, with the
	// step's env) in dir, with the server srv as vars.TOLLGATE_BASE_URL,
	// and returns its exit code.
	step := func(dir, srv string, s ghStep) (int, string) {
		r := &ghRun{srv: srv}
		cmd := exec.Command("bash", "-e", "-c", r.expand(t, s.Run))
		cmd.Dir, cmd.Env = dir, slices.Clone(env)
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+r.expand(t, v))
		}
		out, err := cmd.CombinedOutput()
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	mainDir, prDir := newRepoCopy(t), newRepoCopy(t)
	// The same address for both servers: the server's URL is part of
	// what a baseline must share with the run it judges.
	srvCmd, srv := startServeOf(t, perfBin, append([]string{"--model", "Qwen/Qwen3-8B"}, prServe...)...)
	if code, out := step(mainDir, srv, runStep); code != ExitPass {
		t.Fatalf("main's run: exit %d\n%s", code, out)
	}
	_ = srvCmd.Process.Kill()
	_ = srvCmd.Wait()
	if err := os.MkdirAll(filepath.Join(prDir, "baseline"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(mainDir, "out", "serving.json"), filepath.Join(prDir, "baseline", "serving.json"))
	slower := startServeWith(t, perfBin, append([]string{"--model", "Qwen/Qwen3-8B", "--addr", strings.TrimPrefix(srv, "http://")}, slowerServe...)...)
	if slower != srv {
		t.Fatalf("the slower server is at %s, not %s", slower, srv)
	}
	if code, out := step(prDir, slower, runStep); code != ExitPass {
		t.Fatalf("the pull request's run: exit %d\n%s", code, out)
	}
	code, out := step(prDir, slower, compareStep)
	if code != ExitGateFailed {
		t.Fatalf("the recipe's compare against a server 10%% slower: exit %d, want %d (a regression)\n%s", code, ExitGateFailed, out)
	}
	// The --fail-on table's verdict column is as wide as its widest
	// verdict ("inconclusive" on a loaded machine).
	if !regexp.MustCompile(`(?m)^\s*regression\s+runs\.server\.phases\.decode\.decode_tokens_per_s\.p50\s`).MatchString(out) {
		t.Errorf("the decode rate's drop of about 9%% is not the regression:\n%s", out)
	}
}
