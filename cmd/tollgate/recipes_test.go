package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The recipes that load a server (docs/ci.md's nightly and live-server
// jobs, deploy/github/sharded-load.yml, the Kubernetes recipe of
// docs/kubernetes.md) are run here as written, against tollgate serve and
// against one too slow for their gates: the step that gates must exit 0 on
// the first and the verdict's code on the second. With no server named
// they must stop before tollgate starts, never measure the embedded
// simulator instead.

// tooSlowServe is tollgate serve with a time to first token of 600 ms,
// over the TTFT gate of every scenario the recipes are run with here.
var tooSlowServe = []string{"--ttft-base", "600ms"}

// relaxedSLO is examples/sharded-load.yaml's text (src) with a p99 TTFT
// SLO of a minute for its 500 ms: what a recipe's passing row judges, so
// that a loaded machine's served simulator (p99 3.1 s seen at load 19)
// cannot fail the row whose subject is the recipe's exit codes.
func relaxedSLO(t *testing.T, src string) string {
	t.Helper()
	const slo = "slo_ttft_p99_ms: 500\n"
	if !strings.Contains(src, slo) {
		t.Fatalf("examples/sharded-load.yaml no longer sets %q; update relaxedSLO", strings.TrimSpace(slo))
	}
	return strings.Replace(src, slo, "slo_ttft_p99_ms: 60000\n", 1)
}

// nightlyStandIn stands for a user's perf/load-sweep.yaml in the nightly
// recipes: their nightly profile is a 20-minute sweep, this one a second,
// gated on the time to first token like the real one.
const nightlyStandIn = `name: nightly-stand-in
vars:
  base_url: ""
targets:
  server: {kind: openai, base_url: "${vars.base_url}"}
phases:
  load: {kind: load, concurrency: 4, requests: 16, prompt_tokens: 32, max_tokens: 4}
profiles:
  nightly: {phases: {load: {requests: 24}}}
gates:
  - name: p50 time to first token under 250 ms
    expr: runs.server.phases.load.points[0].ttft_ms.p50 < 250
`

// embeddedOnPurpose are the CI files whose tollgate runs measure the
// embedded simulator and say so (the pull-request workflow of docs/ci.md):
// every other tollgate run or judge must name the server.
var embeddedOnPurpose = map[string]bool{".github/workflows/perf.yml": true}

// ciFile is the block of docs/ci.md that holds the CI file name.
func ciFile(t *testing.T, name string) docBlock {
	t.Helper()
	for _, b := range docBlocks(t) {
		if b.file == "ci.md" && strings.HasPrefix(b.text, "# "+name+"\n") {
			return b
		}
	}
	t.Fatalf("docs/ci.md has no %s", name)
	return docBlock{}
}

// execScript runs script with argv in dir and returns its exit code.
func execScript(ctx context.Context, dir string, env, argv []string, script string) (int, string, error) {
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], script)...)
	cmd.Dir, cmd.Env = dir, append(slices.Clone(env), "TOLLGATE_TEST_BIN="+perfBin)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return -1, string(out), fmt.Errorf("did not finish: %w\n%s", ctx.Err(), out)
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode(), string(out), nil
	}
	return 0, string(out), err
}

// recipeExec runs a recipe's script as the tests run scripts (testScript)
// and returns its exit code, whatever it is.
func recipeExec(t *testing.T, dir string, env, argv []string, script string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	code, out, err := execScript(ctx, dir, env, argv, testScript(t, script))
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}

// tollgateOnPath is an environment with the test's tollgate on PATH: a
// step run alone, without the build step before it, still has one.
func tollgateOnPath(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(perfBin, filepath.Join(dir, "tollgate")); err != nil {
		t.Fatal(err)
	}
	return append(docEnv(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// reportsUnder lists the files under dir/out: what a tollgate command
// wrote.
func reportsUnder(dir string) []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(dir, "out"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// ghFlow is a GitHub Actions workflow with what deploy/github and the
// nightly workflow use beyond ghWorkflow: env, needs, if, outputs, a
// matrix, timeout-minutes. It is decoded strictly: a key the runner below
// does not know fails the test.
type ghFlow struct {
	Name string
	On   yaml.Node
	Env  map[string]string
	Jobs map[string]ghFlowJob
}

type ghFlowJob struct {
	Needs          yaml.Node
	If             string
	RunsOn         yaml.Node `yaml:"runs-on"`
	TimeoutMinutes int       `yaml:"timeout-minutes"`
	Outputs        map[string]string
	Strategy       struct {
		FailFast bool `yaml:"fail-fast"`
		Matrix   map[string][]any
	}
	Steps []ghStep
}

func (j ghFlowJob) needs() []string {
	if j.Needs.Kind == yaml.ScalarNode {
		return []string{j.Needs.Value}
	}
	var out []string
	for _, n := range j.Needs.Content {
		out = append(out, n.Value)
	}
	return out
}

func parseGHFlow(t *testing.T, text string) ghFlow {
	t.Helper()
	var wf ghFlow
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&wf); err != nil {
		t.Fatalf("not a workflow this test knows: %v", err)
	}
	return wf
}

// ghFlowRun is one run of a ghFlow: jobs in the order their needs give,
// the legs of a matrix at once (in lock step, a step of every leg before
// the next step), each job in a fresh checkout, artifacts kept between
// jobs, run steps by bash -e as the runner does.
type ghFlowRun struct {
	wf ghFlow
	// ctx holds inputs.*, vars.*, github.*, secrets.*: one not here is "".
	ctx map[string]string
	// checkout adds to each job's checkout (the user's scenario).
	checkout func(dir string)
	// outputs rewrites a job's outputs once it has run.
	rewrite map[string]func(t *testing.T, outputs map[string]string)

	artifacts map[string]string            // name → folder
	result    map[string]string            // job → success, failure, skipped
	outputs   map[string]map[string]string // job → outputs
	steps     []ghStepResult
}

type ghStepResult struct {
	job, run string
	leg      int
	code     int
	out      string
}

// ghLeg is one leg of a job: its matrix values, checkout and state.
type ghLeg struct {
	matrix  map[string]string
	dir     string
	path    string // GITHUB_PATH's file
	steps   map[string]map[string]string
	failed  bool
	summary string
}

func newGHFlowRun(wf ghFlow, ctx map[string]string) *ghFlowRun {
	return &ghFlowRun{wf: wf, ctx: ctx, rewrite: map[string]func(*testing.T, map[string]string){},
		artifacts: map[string]string{}, result: map[string]string{}, outputs: map[string]map[string]string{}}
}

// value evaluates an expression of the forms the recipes use.
func (r *ghFlowRun) value(t *testing.T, e string, l *ghLeg) string {
	t.Helper()
	e = strings.TrimSpace(e)
	if a, b, ok := strings.Cut(e, "||"); ok {
		if v := r.value(t, a, l); v != "" {
			return v
		}
		return r.value(t, b, l)
	}
	p := strings.Split(e, ".")
	switch {
	case len(p) == 2 && slices.Contains([]string{"inputs", "vars", "github", "secrets"}, p[0]):
		return r.ctx[e]
	case len(p) == 2 && p[0] == "matrix" && l != nil:
		if v, ok := l.matrix[p[1]]; ok {
			return v
		}
	case len(p) == 4 && p[0] == "needs" && p[2] == "outputs":
		return r.outputs[p[1]][p[3]]
	case len(p) == 3 && p[0] == "needs" && p[2] == "result":
		return r.result[p[1]]
	case len(p) == 4 && p[0] == "steps" && p[2] == "outputs" && l != nil:
		return l.steps[p[1]][p[3]]
	}
	t.Fatalf("the test does not know the expression %q", e)
	return ""
}

func (r *ghFlowRun) expand(t *testing.T, s string, l *ghLeg) string {
	t.Helper()
	return ghExpr.ReplaceAllStringFunc(s, func(m string) string { return r.value(t, ghExpr.FindStringSubmatch(m)[1], l) })
}

// cond evaluates an if: of always() and X == 'v' terms joined by &&; ok is
// whether everything before succeeded (success(), unless always() is there).
func (r *ghFlowRun) cond(t *testing.T, expr string, l *ghLeg, ok bool) bool {
	t.Helper()
	expr = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(expr), "${{"), "}}"))
	if expr == "" {
		return ok
	}
	always, holds := false, true
	for term := range strings.SplitSeq(expr, "&&") {
		term = strings.TrimSpace(term)
		if term == "always()" {
			always = true
			continue
		}
		a, b, eq := strings.Cut(term, "==")
		b = strings.TrimSpace(b)
		if !eq || len(b) < 2 || b[0] != '\'' || b[len(b)-1] != '\'' {
			t.Fatalf("the test does not know the condition %q", term)
		}
		holds = holds && r.value(t, a, l) == b[1:len(b)-1]
	}
	return holds && (always || ok)
}

// run runs every job.
func (r *ghFlowRun) run(t *testing.T) {
	t.Helper()
	for len(r.result) < len(r.wf.Jobs) {
		progressed := false
		for _, id := range slices.Sorted(maps.Keys(r.wf.Jobs)) {
			j := r.wf.Jobs[id]
			if _, done := r.result[id]; done || !all(j.needs(), func(n string) bool { _, ok := r.result[n]; return ok }) {
				continue
			}
			progressed = true
			if !r.cond(t, j.If, nil, all(j.needs(), func(n string) bool { return r.result[n] == "success" })) {
				r.result[id] = "skipped"
				continue
			}
			r.job(t, id, j)
		}
		if !progressed {
			t.Fatalf("jobs that need jobs the workflow does not have: %v", slices.Collect(maps.Keys(r.wf.Jobs)))
		}
	}
}

func all[T any](s []T, f func(T) bool) bool {
	for _, v := range s {
		if !f(v) {
			return false
		}
	}
	return true
}

// job runs one job, every leg of its matrix at once.
func (r *ghFlowRun) job(t *testing.T, id string, j ghFlowJob) {
	t.Helper()
	var legs []*ghLeg
	switch len(j.Strategy.Matrix) {
	case 0:
		legs = []*ghLeg{{}}
	case 1:
		for k, vs := range j.Strategy.Matrix {
			for _, v := range vs {
				legs = append(legs, &ghLeg{matrix: map[string]string{k: fmt.Sprint(v)}})
			}
		}
	default:
		t.Fatalf("jobs.%s: a matrix of more than one key", id)
	}
	if len(legs) > 1 && len(j.Outputs) > 0 {
		t.Fatalf("jobs.%s: outputs of a matrix job", id)
	}
	for _, l := range legs {
		l.dir = newRepoCopy(t)
		if r.checkout != nil {
			r.checkout(l.dir)
		}
		l.path = filepath.Join(t.TempDir(), "github_path")
		l.summary = filepath.Join(t.TempDir(), "step_summary.md")
		l.steps = map[string]map[string]string{}
		for _, f := range []string{l.path, l.summary} {
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range j.Steps {
		type pending struct {
			l           *ghLeg
			dir, script string
			env         []string
			output      string
		}
		var runs []pending
		for _, l := range legs {
			if !r.cond(t, s.If, l, !l.failed) {
				continue
			}
			if s.Uses != "" {
				r.uses(t, l, s)
				continue
			}
			added, _ := os.ReadFile(l.path)
			path := os.Getenv("PATH")
			for p := range strings.Lines(string(added)) {
				path = strings.TrimSpace(p) + string(os.PathListSeparator) + path
			}
			output := filepath.Join(t.TempDir(), "github_output")
			if err := os.WriteFile(output, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			env := append(docEnv(), "PATH="+path, "CI=true", "GITHUB_ACTIONS=true", "GITHUB_PATH="+l.path,
				"GITHUB_OUTPUT="+output, "GITHUB_STEP_SUMMARY="+l.summary, "GITHUB_WORKSPACE="+l.dir)
			for _, k := range slices.Sorted(maps.Keys(r.wf.Env)) {
				env = append(env, k+"="+r.expand(t, r.wf.Env[k], l))
			}
			for _, k := range slices.Sorted(maps.Keys(s.Env)) {
				env = append(env, k+"="+r.expand(t, s.Env[k], l))
			}
			runs = append(runs, pending{l, filepath.Join(l.dir, s.WorkingDirectory), testScript(t, r.expand(t, s.Run, l)), env, output})
		}
		// The legs' steps at once: a matrix of shards shares one start.
		type done struct {
			code int
			out  string
			err  error
		}
		got := make([]done, len(runs))
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		var wg sync.WaitGroup
		for i, p := range runs {
			wg.Go(func() {
				got[i].code, got[i].out, got[i].err = execScript(ctx, p.dir, p.env, []string{"bash", "-e", "-c"}, p.script)
			})
		}
		wg.Wait()
		cancel()
		for i, p := range runs {
			if got[i].err != nil {
				t.Fatalf("jobs.%s: %s: %v", id, firstLine(s.Run), got[i].err)
			}
			r.steps = append(r.steps, ghStepResult{job: id, run: s.Run, leg: slices.Index(legs, p.l), code: got[i].code, out: got[i].out})
			t.Logf("jobs.%s[%d]: %s: exit %d", id, slices.Index(legs, p.l), firstLine(s.Run), got[i].code)
			if got[i].code != 0 && !s.ContinueOnError {
				p.l.failed = true
			}
			if s.ID != "" {
				data, _ := os.ReadFile(p.output)
				p.l.steps[s.ID] = map[string]string{}
				for line := range strings.Lines(string(data)) {
					if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
						p.l.steps[s.ID][k] = v
					}
				}
			}
		}
	}
	r.result[id] = "success"
	if slices.ContainsFunc(legs, func(l *ghLeg) bool { return l.failed }) {
		r.result[id] = "failure"
	}
	r.outputs[id] = map[string]string{}
	for k, v := range j.Outputs {
		r.outputs[id][k] = r.expand(t, v, legs[0])
	}
	if f := r.rewrite[id]; f != nil && r.result[id] == "success" {
		f(t, r.outputs[id])
	}
}

// uses does what the actions the recipes name do.
func (r *ghFlowRun) uses(t *testing.T, l *ghLeg, s ghStep) {
	t.Helper()
	action, _, _ := strings.Cut(s.Uses, "@")
	with := func(k string) string { v, _ := s.With[k].(string); return r.expand(t, v, l) }
	switch action {
	case "actions/checkout":
		// The checkout is l.dir; without submodules, tollgate/ is empty
		// and has nothing to build: it is not there at all.
		if s.With["submodules"] != true {
			if err := os.RemoveAll(filepath.Join(l.dir, "tollgate")); err != nil {
				t.Fatal(err)
			}
		}
	case "actions/setup-go":
	case "actions/upload-artifact":
		from := filepath.Join(l.dir, with("path"))
		st, err := os.Stat(from)
		if err != nil {
			t.Logf("%s: %s was not written (a warning on GitHub)", s.Uses, with("path"))
			return
		}
		keep := t.TempDir()
		copyInto(t, from, st.IsDir(), keep)
		r.artifacts[with("name")] = keep
	case "actions/download-artifact":
		if s.With["merge-multiple"] != true {
			t.Fatalf("%s: the test knows pattern with merge-multiple: true only", s.Uses)
		}
		for name, from := range r.artifacts {
			if ok, _ := path.Match(with("pattern"), name); ok {
				if err := os.CopyFS(filepath.Join(l.dir, with("path")), os.DirFS(from)); err != nil {
					t.Fatal(err)
				}
			}
		}
	default:
		t.Fatalf("the test does not know the action %s", s.Uses)
	}
}

// copyInto copies from, a folder or a file, into the folder keep, as
// upload-artifact keeps a path.
func copyInto(t *testing.T, from string, isDir bool, keep string) {
	t.Helper()
	if !isDir {
		copyFile(t, from, filepath.Join(keep, filepath.Base(from)))
		return
	}
	if err := os.CopyFS(keep, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// stepCodes are the exit codes of the job's run steps that contain what.
func (r *ghFlowRun) stepCodes(job, what string) []int {
	var out []int
	for _, s := range r.steps {
		if s.job == job && strings.Contains(s.run, what) {
			out = append(out, s.code)
		}
	}
	return out
}

func (r *ghFlowRun) stepOutput(job, what string) string {
	var out strings.Builder
	for _, s := range r.steps {
		if s.job == job && strings.Contains(s.run, what) {
			out.WriteString(s.out)
		}
	}
	return out.String()
}

// TestGitHubMatrixWorkflow runs deploy/github/sharded-load.yml as GitHub
// would, in a user's repository (tollgate built from the tollgate/
// submodule, the scenario perf/sharded-load.yaml): the plan job, the four
// shard jobs at once against one tollgate serve, and the judge job's merge
// and judge. The judge step exits 0 against a server that meets the
// scenario's gates and 1 against one too slow for them; with no server
// named the plan job fails and nothing else runs.
func TestGitHubMatrixWorkflow(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../deploy/github/sharded-load.yml")
	if err != nil {
		t.Fatal(err)
	}
	wf := parseGHFlow(t, string(data))
	fast, slow := startServeWith(t, perfBin), startServeWith(t, perfBin, tooSlowServe...)
	for _, tc := range []struct {
		name         string
		input, vars  string // the base_url input, the repository variable TOLLGATE_BASE_URL
		judge        int    // the judge step's exit code; -1: the run stops in the plan job
		wantInOutput string
	}{
		{"the repository variable names a server that meets the gates", "", fast, ExitPass, "PASS"},
		{"the base_url input names a server too slow for the gates, over the variable", slow, fast, ExitGateFailed, "p99 time to first token"},
		{"no server named", "", "", -1, "TOLLGATE_BASE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Side by side (each waits about 8 s for its start): the rows'
			// shards load different servers, the second's the slow one.
			t.Parallel()
			var r *ghFlowRun
			// Shards that began late (shard_late: four processes started
			// at once on a loaded machine ate their lead) say nothing of
			// the workflow: the run is repeated with twice the lead, up to
			// 3 tries (8, 16 and 32 s), as TestShardMergeLoopback does.
			for try, lead := 1, 8*time.Second; ; try, lead = try+1, 2*lead {
				r = newGHFlowRun(wf, map[string]string{"inputs.base_url": tc.input, "github.run_id": "4711", "github.run_attempt": "1"})
				if tc.vars != "" {
					r.ctx["vars.TOLLGATE_BASE_URL"] = tc.vars
				}
				r.rewrite["plan"] = func(t *testing.T, out map[string]string) {
					// The plan job's start, five minutes ahead, is checked;
					// the shard jobs are scheduled at once here, so they
					// get one lead ahead (whole seconds, as the plan
					// writes it).
					at, err := time.Parse(time.RFC3339, out["start_at"])
					if lead := time.Until(at); err != nil || lead < 4*time.Minute || lead > 6*time.Minute {
						t.Fatalf("the plan job's start_at %q: %v (want about five minutes ahead)", out["start_at"], err)
					}
					out["start_at"] = time.Now().Add(lead).UTC().Format(time.RFC3339)
				}
				if tc.judge == ExitPass {
					// The row that must pass tests the workflow's
					// plumbing, not the machine's speed: its user's SLO
					// is one no load reaches (relaxedSLO); the slow row
					// keeps the example's 500 ms and fails it.
					r.checkout = func(dir string) {
						f := filepath.Join(dir, "perf", "sharded-load.yaml")
						writeFile(t, f, relaxedSLO(t, readString(t, f)))
					}
				}
				r.run(t)
				merged := filepath.Join(r.artifacts["sharded-load-verdict"], "merged.json")
				if codes := r.stepCodes("judge", "tollgate merge "); try < 3 && slices.Equal(codes, []int{ExitNotJudged}) && onlyLate(readJSONReport(t, merged)) {
					t.Logf("try %d: the shards began late for a %v lead (%v); running the workflow again with %v", try, lead, invalidReasons(readJSONReport(t, merged)), 2*lead)
					continue
				}
				break
			}
			if tc.judge < 0 {
				if r.result["plan"] != "failure" || r.result["shard"] != "skipped" || r.result["judge"] != "skipped" {
					t.Fatalf("jobs %v: want the plan job failed and the others skipped", r.result)
				}
				if out := r.stepOutput("plan", "TOLLGATE_BASE_URL"); !strings.Contains(out, tc.wantInOutput) {
					t.Errorf("the plan job's failure does not name %s:\n%s", tc.wantInOutput, out)
				}
				return
			}
			if codes := r.stepCodes("shard", "tollgate run "); !slices.Equal(codes, []int{0, 0, 0, 0}) {
				t.Fatalf("the shard steps exited %v, want 0 each (a shard is not gated)", codes)
			}
			if codes := r.stepCodes("judge", "tollgate merge "); !slices.Equal(codes, []int{0}) {
				t.Fatalf("the merge step exited %v\n%s", codes, r.stepOutput("judge", "tollgate merge "))
			}
			out := r.stepOutput("judge", "tollgate judge ")
			if codes := r.stepCodes("judge", "tollgate judge "); !slices.Equal(codes, []int{tc.judge}) {
				t.Fatalf("the judge step exited %v, want %d\n%s", codes, tc.judge, out)
			}
			if !strings.Contains(out, tc.wantInOutput) {
				t.Errorf("the judge's output lacks %q:\n%s", tc.wantInOutput, out)
			}
			verdict := r.artifacts["sharded-load-verdict"]
			for _, f := range []string{"merged.json", "judged.json", "junit.xml"} {
				if _, err := os.Stat(filepath.Join(verdict, f)); err != nil {
					t.Errorf("the verdict's artifact lacks %s: %v", f, err)
				}
			}
		})
	}
}

// TestCIRecipesGateOnTheServer runs the nightly recipes of docs/ci.md (the
// GitHub workflow's job and the GitLab job) as written, with a short
// perf/load-sweep.yaml: the tollgate step exits 0 against a server that
// meets the gate, 1 against one too slow for it, and writes its reports
// either way.
func TestCIRecipesGateOnTheServer(t *testing.T) {
	t.Parallel()
	fast, slow := startServeWith(t, perfBin), startServeWith(t, perfBin, tooSlowServe...)
	standIn := func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "perf", "load-sweep.yaml"), []byte(nightlyStandIn), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gl, err := parseGitLab(ciFile(t, ".gitlab-ci.yml").text)
	if err != nil {
		t.Fatal(err)
	}
	var nightly *glJob
	for _, j := range gl.jobs {
		if j.name == "nightly-load" {
			nightly = j
		}
	}
	if nightly == nil || !nightly.included(t, map[string]string{"CI_PIPELINE_SOURCE": "schedule"}) {
		t.Fatal("docs/ci.md's .gitlab-ci.yml has no nightly-load job in scheduled pipelines")
	}
	wf := parseGHFlow(t, ciFile(t, ".github/workflows/nightly.yml").text)
	for _, tc := range []struct {
		name   string
		server string
		want   int
	}{
		{"a server that meets the gate", fast, ExitPass},
		{"a server too slow for the gate", slow, ExitGateFailed},
	} {
		t.Run("github nightly.yml: "+tc.name, func(t *testing.T) {
			r := newGHFlowRun(wf, map[string]string{"vars.TOLLGATE_BASE_URL": tc.server, "github.run_id": "1"})
			r.checkout = standIn
			r.run(t)
			if codes := r.stepCodes("load", "tollgate run "); !slices.Equal(codes, []int{tc.want}) {
				t.Fatalf("the tollgate step exited %v, want %d\n%s", codes, tc.want, r.stepOutput("load", "tollgate run "))
			}
			if len(r.artifacts) != 1 {
				t.Errorf("artifacts %v: want the reports uploaded whatever the verdict", r.artifacts)
			}
			for _, f := range []string{"load.json", "load.html", "load.csv", "load.samples.jsonl"} {
				if _, err := os.Stat(filepath.Join(slices.Collect(maps.Values(r.artifacts))[0], f)); err != nil {
					t.Errorf("the artifact lacks %s: %v", f, err)
				}
			}
		})
		t.Run("gitlab nightly-load: "+tc.name, func(t *testing.T) {
			dir := newRepoCopy(t)
			standIn(dir)
			env := docEnv()
			for k, v := range gl.variables {
				env = append(env, k+"="+v)
			}
			env = append(env, "CI=true", "GITLAB_CI=true", "CI_PIPELINE_SOURCE=schedule", "TOLLGATE_BASE_URL="+tc.server)
			script := strings.Join(append(slices.Clone(nightly.BeforeScript), nightly.Script...), "\n") + "\n"
			code, out := recipeExec(t, dir, env, []string{"bash", "-e", "-o", "pipefail", "-c"}, script)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\n%s", code, tc.want, out)
			}
			for _, a := range append(slices.Clone(nightly.Artifacts.Paths), glJunit(nightly)...) {
				if _, err := os.Stat(filepath.Join(dir, a)); err != nil {
					t.Errorf("artifact %s: %v", a, err)
				}
			}
		})
	}
}

// ciRecipeStep is a CI recipe's step that runs tollgate run or judge.
type ciRecipeStep struct {
	name   string
	script string
	env    []string
	shell  []string
}

// ciRecipeSteps are the steps of every CI recipe (docs/ci.md's workflows
// and pipeline, deploy/github/) that run tollgate run or judge, with the
// environment and shell their runner gives them, when the CI variables
// hold server (TOLLGATE_BASE_URL; empty: unset).
func ciRecipeSteps(t *testing.T, server string) []ciRecipeStep {
	t.Helper()
	var out []ciRecipeStep
	tollgateStep := func(s string) bool {
		return strings.Contains(s, "tollgate run ") || strings.Contains(s, "tollgate judge ")
	}
	files := map[string]string{}
	for _, b := range docBlocks(t) {
		if b.file == "ci.md" && ciKind(b.text) != "" {
			files[strings.TrimPrefix(firstLine(b.text), "# ")] = b.text
		}
	}
	deploy, _ := filepath.Glob("../../deploy/github/*.yml")
	for _, f := range deploy {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files["deploy/github/"+filepath.Base(f)] = string(data)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		text := files[name]
		if ciKind(text) == "gitlab" {
			p, err := parseGitLab(text)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range p.jobs {
				if !slices.ContainsFunc(j.Script, tollgateStep) {
					continue
				}
				env := []string{"CI=true", "GITLAB_CI=true", "OPENAI_API_KEY=" + fakeKey}
				for k, v := range p.variables {
					env = append(env, k+"="+v)
				}
				if server != "" {
					env = append(env, "TOLLGATE_BASE_URL="+server)
				}
				out = append(out, ciRecipeStep{name + " " + j.name, strings.Join(append(slices.Clone(j.BeforeScript), j.Script...), "\n") + "\n",
					env, []string{"bash", "-e", "-o", "pipefail", "-c"}})
			}
			continue
		}
		wf := parseGHFlow(t, text)
		r := newGHFlowRun(wf, map[string]string{"github.run_id": "1", "github.run_attempt": "1", "secrets.INFERENCE_API_KEY": fakeKey})
		if server != "" {
			r.ctx["vars.TOLLGATE_BASE_URL"] = server
		}
		r.outputs["plan"] = map[string]string{"start_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
		for _, id := range slices.Sorted(maps.Keys(wf.Jobs)) {
			j := wf.Jobs[id]
			leg := &ghLeg{matrix: map[string]string{}}
			for k, vs := range j.Strategy.Matrix {
				leg.matrix[k] = fmt.Sprint(vs[0])
			}
			for i, s := range j.Steps {
				if !tollgateStep(s.Run) {
					continue
				}
				var env []string
				for _, k := range slices.Sorted(maps.Keys(wf.Env)) {
					env = append(env, k+"="+r.expand(t, wf.Env[k], leg))
				}
				for _, k := range slices.Sorted(maps.Keys(s.Env)) {
					env = append(env, k+"="+r.expand(t, s.Env[k], leg))
				}
				out = append(out, ciRecipeStep{fmt.Sprintf("%s jobs.%s.steps[%d]", name, id, i), r.expand(t, s.Run, leg), env, []string{"bash", "-e", "-c"}})
			}
		}
	}
	if len(out) < 6 {
		t.Fatalf("found only %d CI steps that run tollgate run or judge", len(out))
	}
	return out
}

// TestCIRecipesNeedTheServer holds every CI recipe's tollgate run and
// judge to the server the CI variable TOLLGATE_BASE_URL names: each passes
// it as base_url, and with it unset each step fails before tollgate
// starts, naming the variable, and writes nothing (the embedded simulator
// would have measured the runner and passed). Only the pull-request
// workflow, which runs the simulator on purpose, names no server.
func TestCIRecipesNeedTheServer(t *testing.T) {
	t.Parallel()
	for _, s := range ciRecipeSteps(t, "") {
		t.Run(s.name, func(t *testing.T) {
			file, _, _ := strings.Cut(s.name, " ")
			if embeddedOnPurpose[file] {
				if strings.Contains(s.script, "TOLLGATE_BASE_URL") {
					t.Errorf("%s runs the embedded simulator on purpose, but names a server", file)
				}
				return
			}
			if !strings.Contains(s.script, `base_url="${TOLLGATE_BASE_URL:?}"`) {
				t.Fatalf("the step does not pass base_url=\"${TOLLGATE_BASE_URL:?}\":\n%s", s.script)
			}
			dir := newRepoCopy(t)
			code, out := recipeExec(t, dir, append(tollgateOnPath(t), s.env...), s.shell, s.script)
			if code == 0 || !strings.Contains(out, "TOLLGATE_BASE_URL: parameter null or not set") {
				t.Errorf("with TOLLGATE_BASE_URL unset: exit %d, want a failure naming it\n%s", code, out)
			}
			if got := reportsUnder(dir); len(got) > 0 {
				t.Errorf("with TOLLGATE_BASE_URL unset tollgate ran and wrote %v", got)
			}
		})
	}
}
