package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The CI files docs/ci.md shows are parsed, checked for the structure
// GitHub Actions and GitLab CI require, and run: their run: steps and
// script: lines, through the small stand-ins of the two runners below.
// The stand-ins do what the runners do with the parts the docs use
// (checkout, artifacts between jobs and runs, step and job conditions,
// GITHUB_PATH, ${{ }} expressions, CI variables) and refuse anything else,
// so a recipe that grows a feature they do not know fails here rather than
// being skipped.

// ciKind tells a workflow block by its first line, the file it names.
func ciKind(text string) string {
	first, _, _ := strings.Cut(text, "\n")
	switch {
	case strings.HasPrefix(first, "# .github/workflows/"):
		return "github"
	case first == "# .gitlab-ci.yml":
		return "gitlab"
	}
	return ""
}

// fakeKey stands for the API key secret: the test fails if it shows up in
// anything the recipe writes.
const fakeKey = "sk-docs-test-0123456789abcdef"

// runWorkflow runs a CI file of the docs against a tollgate serve standing
// for the inference server, and returns the jobs it did not run.
//
// The server decodes at 2 ms a step, not the default 10 ms: the serving
// recipes run the ci profile of examples/serving.yaml (20 decodes of 128
// tokens, two or three times per workflow), whose decode phase was 26 s
// of each 39 s run, and no verdict these workflows reach depends on that
// speed. The scenario's gates compare TTFTs (prompt sizes, prefix-cache
// variants), which the decode step does not enter, and hold the decode rate
// above a floor of 20 tokens/s, which 100/s and 500/s both clear by far;
// their tollgate compare of two runs of this one server is a verdict
// whatever it says (runScript: exit 0, 1 or 4), so only a recipe that is
// wrong (exit 2) fails. What a 10 % slower server must make the recipe
// decide is TestDocsPRRecipeFailsOnASlowerServer's, at the default speed.
func runWorkflow(t *testing.T, b docBlock) []string {
	srv := startServeWith(t, perfBin, "--model", "Qwen/Qwen3-8B", "--decode-step", "2ms")
	if ciKind(b.text) == "gitlab" {
		return runGitLab(t, b, srv)
	}
	runGitHub(t, b, srv)
	return nil
}

type ghWorkflow struct {
	Name string
	On   yaml.Node
	Jobs map[string]ghJob
}

type ghJob struct {
	RunsOn yaml.Node `yaml:"runs-on"`
	Steps  []ghStep
}

type ghStep struct {
	ID               string
	Name             string
	Uses             string
	Run              string
	If               string
	Env              map[string]string
	With             map[string]any
	WorkingDirectory string `yaml:"working-directory"`
	ContinueOnError  bool   `yaml:"continue-on-error"`
}

// parseGitHub parses a workflow strictly (an unknown key is an error) and
// checks what GitHub requires of it.
func parseGitHub(text string) (ghWorkflow, error) {
	var wf ghWorkflow
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&wf); err != nil {
		return wf, fmt.Errorf("not a workflow this test knows: %w", err)
	}
	var errs []error
	if len(wf.On.Content) == 0 && wf.On.Value == "" {
		errs = append(errs, errors.New("no on: (the events that start it)"))
	}
	if len(wf.Jobs) == 0 {
		errs = append(errs, errors.New("no jobs"))
	}
	for _, id := range slices.Sorted(maps.Keys(wf.Jobs)) {
		j := wf.Jobs[id]
		if j.RunsOn.Value == "" && len(j.RunsOn.Content) == 0 {
			errs = append(errs, fmt.Errorf("jobs.%s: no runs-on", id))
		}
		if len(j.Steps) == 0 {
			errs = append(errs, fmt.Errorf("jobs.%s: no steps", id))
		}
		for i, s := range j.Steps {
			if (s.Uses == "") == (s.Run == "") {
				errs = append(errs, fmt.Errorf("jobs.%s.steps[%d]: want exactly one of uses and run", id, i))
			}
			if s.Run != "" && len(s.With) > 0 {
				errs = append(errs, fmt.Errorf("jobs.%s.steps[%d]: with: on a run step", id, i))
			}
		}
	}
	return wf, errors.Join(errs...)
}

// events are what the workflow's on: starts it for.
func (wf ghWorkflow) events() []string {
	switch wf.On.Kind {
	case yaml.ScalarNode:
		return []string{wf.On.Value}
	case yaml.SequenceNode:
		var out []string
		for _, n := range wf.On.Content {
			out = append(out, n.Value)
		}
		return out
	case yaml.MappingNode:
		var out []string
		for i := 0; i < len(wf.On.Content); i += 2 {
			out = append(out, wf.On.Content[i].Value)
		}
		return out
	}
	return nil
}

// ghRun is one run of a workflow: the event, the ref, and the artifacts
// that outlive it (for the next run to download).
type ghRun struct {
	event, ref string
	srv        string
	artifacts  map[string]string // name → folder holding its files
	keep       string            // where artifacts outlive the job that made them
}

// runGitHub runs the workflow for a push to main, then for a pull request
// (which then finds main's artifacts), when it is started by both.
func runGitHub(t *testing.T, b docBlock, srv string) {
	wf, err := parseGitHub(b.text)
	if err != nil {
		t.Fatal(err)
	}
	ev := wf.events()
	run := &ghRun{srv: srv, artifacts: map[string]string{}, keep: t.TempDir()}
	// A push to main first only when a step tells them apart (main's run
	// leaves the artifacts a pull request's run fetches): otherwise the two
	// runs would be one run twice.
	var order []string
	if slices.Contains(ev, "push") && (strings.Contains(b.text, "github.ref") || strings.Contains(b.text, "github.event_name")) {
		order = append(order, "push")
	}
	if slices.Contains(ev, "pull_request") {
		order = append(order, "pull_request")
	}
	if len(order) == 0 {
		t.Fatalf("started by %v: the test runs push and pull_request workflows (mark others not run)", ev)
	}
	for _, e := range order {
		run.event, run.ref = e, "refs/heads/main"
		if e == "pull_request" {
			run.ref = "refs/pull/1/merge"
		}
		for _, id := range slices.Sorted(maps.Keys(wf.Jobs)) {
			t.Run(e+"/"+id, func(t *testing.T) { run.job(t, wf.Jobs[id]) })
		}
	}
}

var ghExpr = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// expand replaces the ${{ }} expressions the docs use.
func (r *ghRun) expand(t *testing.T, s string) string {
	return ghExpr.ReplaceAllStringFunc(s, func(m string) string {
		switch e := ghExpr.FindStringSubmatch(m)[1]; {
		case strings.HasPrefix(e, "secrets."):
			return fakeKey
		case e == "vars.TOLLGATE_BASE_URL":
			return r.srv
		case e == "github.run_id":
			return "1"
		default:
			t.Fatalf("the test does not know the expression %s", m)
			return ""
		}
	})
}

var (
	ghEq       = regexp.MustCompile(`^github\.(event_name|ref) == '([^']*)'$`)
	ghHashFile = regexp.MustCompile(`^hashFiles\('([^']*)'\) != ''$`)
)

// cond evaluates a step's if: as GitHub would, for the forms the docs use.
func (r *ghRun) cond(t *testing.T, dir, expr string, failed bool) bool {
	expr = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(expr), "${{"), "}}"))
	switch {
	case expr == "":
		return !failed
	case expr == "always()":
		return true
	}
	if m := ghEq.FindStringSubmatch(expr); m != nil {
		got := r.event
		if m[1] == "ref" {
			got = r.ref
		}
		return !failed && got == m[2]
	}
	if m := ghHashFile.FindStringSubmatch(expr); m != nil {
		_, err := os.Stat(filepath.Join(dir, m[1]))
		return !failed && err == nil
	}
	t.Fatalf("the test does not know the condition %q", expr)
	return false
}

// job runs one job in a fresh checkout: uses steps are done by the test
// (checkout and setup-go need nothing here; artifacts are kept in r), run
// steps by bash -e, as the runner's default shell.
func (r *ghRun) job(t *testing.T, j ghJob) {
	dir := newRepoCopy(t)
	tmp := t.TempDir()
	pathFile, summary := filepath.Join(tmp, "github_path"), filepath.Join(tmp, "step_summary.md")
	for _, f := range []string{pathFile, summary} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	failed := false
	for i, s := range j.Steps {
		name := firstNonEmpty(s.Name, s.Uses, firstLine(s.Run))
		if !r.cond(t, dir, s.If, failed) {
			t.Logf("step %d (%s): skipped (if: %s)", i, name, s.If)
			continue
		}
		if s.Uses != "" {
			r.uses(t, dir, s)
			continue
		}
		// PATH as the runner makes it: GITHUB_PATH's lines first, and no
		// tollgate but the one the workflow builds.
		added, _ := os.ReadFile(pathFile)
		path := os.Getenv("PATH")
		for l := range strings.Lines(string(added)) {
			path = strings.TrimSpace(l) + string(os.PathListSeparator) + path
		}
		env := append(docEnv(), "PATH="+path, "CI=true", "GITHUB_ACTIONS=true",
			"GITHUB_PATH="+pathFile, "GITHUB_STEP_SUMMARY="+summary,
			"GITHUB_EVENT_NAME="+r.event, "GITHUB_REF="+r.ref, "GITHUB_WORKSPACE="+dir)
		for k, v := range s.Env {
			env = append(env, k+"="+r.expand(t, v))
		}
		wd := filepath.Join(dir, s.WorkingDirectory)
		out := runScript(t, wd, env, []string{"bash", "-e", "-c"}, r.expand(t, s.Run))
		if strings.Contains(out, fakeKey) {
			t.Errorf("step %s printed the API key", name)
		}
		if t.Failed() {
			failed = true
		}
	}
	assertNoKey(t, dir)
	sum, _ := os.ReadFile(summary)
	if strings.Contains(string(sum), fakeKey) {
		t.Error("the step summary holds the API key")
	}
	ranRun := slices.ContainsFunc(j.Steps, func(s ghStep) bool { return strings.Contains(s.Run, "tollgate run ") })
	if ranRun && !strings.Contains(string(sum), "#") {
		t.Errorf("tollgate run wrote no Markdown to $GITHUB_STEP_SUMMARY:\n%s", sum)
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// uses does what the actions the docs name do, to the checkout.
func (r *ghRun) uses(t *testing.T, dir string, s ghStep) {
	action, _, _ := strings.Cut(s.Uses, "@")
	str := func(k string) string { v, _ := s.With[k].(string); return r.expand(t, v) }
	switch action {
	case "actions/checkout", "actions/setup-go", "mikepenz/action-junit-report":
		// The checkout is dir (with the submodule), Go is this Go, and a
		// JUnit reporter reads what is there: checked below for upload.
		if action == "mikepenz/action-junit-report" {
			if m, _ := filepath.Glob(filepath.Join(dir, str("report_paths"))); len(m) == 0 {
				t.Errorf("%s: no file matches %s", s.Uses, str("report_paths"))
			}
		}
	case "actions/upload-artifact":
		from := filepath.Join(dir, str("path"))
		st, err := os.Stat(from)
		if err != nil {
			t.Errorf("%s: %s was not written: %v", s.Uses, str("path"), err)
			return
		}
		keep, err := os.MkdirTemp(r.keep, "artifact-")
		if err != nil {
			t.Fatal(err)
		}
		copyInto(t, from, st.IsDir(), keep)
		r.artifacts[str("name")] = keep
	case "dawidd6/action-download-artifact":
		got, ok := r.artifacts[str("name")]
		if !ok {
			if !s.ContinueOnError {
				t.Errorf("%s: no artifact %s", s.Uses, str("name"))
			}
			return
		}
		if err := os.CopyFS(filepath.Join(dir, str("path")), os.DirFS(got)); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("the test does not know the action %s", s.Uses)
	}
}

// assertNoKey fails when any file under dir holds the fake API key.
func assertNoKey(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), fakeKey) {
				t.Errorf("%s holds the API key", p)
			}
		}
		return nil
	})
}

// glJob is a GitLab job, after extends.
type glJob struct {
	name         string
	Extends      string
	Image        string
	Stage        string
	Tags         []string
	Timeout      string
	Needs        []string
	BeforeScript []string `yaml:"before_script"`
	Script       []string
	Rules        []struct {
		If   string
		When string
	}
	Artifacts struct {
		When     string
		ExposeAs string `yaml:"expose_as"`
		Paths    []string
		Reports  struct {
			Junit any
		}
	}
}

// glKeywords are the top-level keys of .gitlab-ci.yml that are not jobs.
var glKeywords = map[string]bool{"stages": true, "variables": true, "default": true, "include": true, "workflow": true,
	"image": true, "services": true, "before_script": true, "after_script": true, "cache": true}

type glPipeline struct {
	stages    []string
	variables map[string]string
	jobs      []*glJob // in file order, after extends
}

// parseGitLab parses .gitlab-ci.yml and checks what GitLab requires: every
// job has a script and a stage from stages, extends names a template and
// needs a job.
func parseGitLab(text string) (glPipeline, error) {
	var p glPipeline
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(text), &root); err != nil {
		return p, err
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return p, errors.New("not a mapping")
	}
	doc := root.Content[0]
	raw := map[string]*yaml.Node{}
	var names []string
	for i := 0; i < len(doc.Content); i += 2 {
		k, v := doc.Content[i].Value, doc.Content[i+1]
		var err error
		switch {
		case k == "stages":
			err = v.Decode(&p.stages)
		case k == "variables":
			err = v.Decode(&p.variables)
		case glKeywords[k]:
			err = errors.New("the test does not know this keyword")
		default:
			raw[k] = v
			if !strings.HasPrefix(k, ".") {
				names = append(names, k)
			}
		}
		if err != nil {
			return p, fmt.Errorf("%s: %w", k, err)
		}
	}
	if len(p.stages) == 0 || len(names) == 0 {
		return p, errors.New("no stages or no jobs")
	}
	var errs []error
	for _, name := range names {
		// extends: the template's keys first, the job's own over them.
		j := &glJob{name: name}
		var ext struct{ Extends string }
		_ = raw[name].Decode(&ext)
		if ext.Extends != "" {
			tpl, ok := raw[ext.Extends]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: extends %s, which is not defined", name, ext.Extends))
				continue
			}
			if err := tpl.Decode(j); err != nil {
				return p, fmt.Errorf("%s: %w", ext.Extends, err)
			}
		}
		out, err := yaml.Marshal(raw[name])
		if err != nil {
			return p, err
		}
		dec := yaml.NewDecoder(bytes.NewReader(out))
		dec.KnownFields(true)
		if err := dec.Decode(j); err != nil {
			return p, fmt.Errorf("%s: not a job this test knows: %w", name, err)
		}
		if len(j.Script) == 0 {
			errs = append(errs, fmt.Errorf("%s: no script", name))
		}
		if !slices.Contains(p.stages, j.Stage) {
			errs = append(errs, fmt.Errorf("%s: stage %q is not one of %v", name, j.Stage, p.stages))
		}
		for _, n := range j.Needs {
			if _, ok := raw[n]; !ok || strings.HasPrefix(n, ".") {
				errs = append(errs, fmt.Errorf("%s: needs %s, which is not a job", name, n))
			}
		}
		p.jobs = append(p.jobs, j)
	}
	return p, errors.Join(errs...)
}

var glRule = regexp.MustCompile(`^\$(\w+) == (?:"([^"]*)"|\$(\w+))$`)

// included reports whether a job's rules put it in a pipeline with vars.
func (j *glJob) included(t *testing.T, vars map[string]string) bool {
	if len(j.Rules) == 0 {
		return true
	}
	for _, r := range j.Rules {
		m := glRule.FindStringSubmatch(r.If)
		if m == nil {
			t.Fatalf("%s: the test does not know the rule %q", j.name, r.If)
		}
		want := m[2]
		if m[3] != "" {
			want = vars[m[3]]
		}
		if got, ok := vars[m[1]]; ok && got == want {
			return r.When != "never"
		}
	}
	return false
}

// runGitLab runs the pipeline of a push to the default branch (whose perf
// report the GitLab API then serves as main's), then a merge request's.
// Jobs run stage by stage, each in a fresh checkout with the artifacts of
// the jobs it needs (or of every earlier job), its before_script and script
// in one bash -eo pipefail, as the runner does. A job in neither pipeline
// is not run; its tollgate commands are validated.
func runGitLab(t *testing.T, b docBlock, srv string) (notRun []string) {
	p, err := parseGitLab(b.text)
	if err != nil {
		t.Fatal(err)
	}
	var mainReport []byte
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v4/projects/7/jobs/artifacts/main/raw/out/serving.json" || r.URL.Query().Get("job") != "perf" ||
			r.Header.Get("JOB-TOKEN") != "job-token" || mainReport == nil {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(mainReport)
	}))
	defer api.Close()
	ran := map[string]bool{}
	keepRoot := t.TempDir() // artifacts outlive the job that made them
	for _, pl := range []map[string]string{
		{"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main"},
		{"CI_PIPELINE_SOURCE": "merge_request_event"},
	} {
		vars := map[string]string{"CI": "true", "GITLAB_CI": "true", "CI_DEFAULT_BRANCH": "main", "CI_PROJECT_ID": "7",
			"CI_JOB_TOKEN": "job-token", "CI_API_V4_URL": api.URL + "/api/v4", "TOLLGATE_BASE_URL": srv, "OPENAI_API_KEY": fakeKey}
		for k, v := range p.variables {
			vars[k] = v
		}
		for k, v := range pl {
			vars[k] = v
		}
		artifacts := map[string]string{} // job → folder, for the later stages
		stageOf := map[string]string{}
		for _, stage := range p.stages {
			for _, j := range p.jobs {
				if j.Stage != stage || !j.included(t, vars) {
					continue
				}
				ran[j.name] = true
				t.Run(pl["CI_PIPELINE_SOURCE"]+"/"+j.name, func(t *testing.T) {
					dir := newRepoCopy(t)
					for name, from := range artifacts {
						if (len(j.Needs) == 0 && stageOf[name] != stage) || slices.Contains(j.Needs, name) {
							if err := os.CopyFS(dir, os.DirFS(from)); err != nil {
								t.Fatal(err)
							}
						}
					}
					env := docEnv()
					for k, v := range vars {
						env = append(env, k+"="+v)
					}
					script := strings.Join(append(slices.Clone(j.BeforeScript), j.Script...), "\n") + "\n"
					out := runScript(t, dir, env, []string{"bash", "-e", "-o", "pipefail", "-c"}, script)
					if strings.Contains(out, fakeKey) {
						t.Error("the job printed the API key")
					}
					assertNoKey(t, dir)
					// The artifacts: what the commands wrote, kept for the
					// jobs after.
					keep, err := os.MkdirTemp(keepRoot, j.name+"-")
					if err != nil {
						t.Fatal(err)
					}
					for _, a := range append(slices.Clone(j.Artifacts.Paths), glJunit(j)...) {
						from := filepath.Join(dir, a)
						st, err := os.Stat(from)
						if err != nil {
							t.Errorf("artifact %s was not written: %v", a, err)
							continue
						}
						if st.IsDir() {
							err = os.CopyFS(filepath.Join(keep, a), os.DirFS(from))
						} else {
							copyFile(t, from, filepath.Join(keep, a))
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					artifacts[j.name], stageOf[j.name] = keep, stage
					if j.name == "perf" && pl["CI_PIPELINE_SOURCE"] == "push" {
						mainReport, _ = os.ReadFile(filepath.Join(dir, "out", "serving.json"))
					}
				})
			}
		}
	}
	for _, j := range p.jobs {
		if ran[j.name] {
			continue
		}
		notRun = append(notRun, j.name)
		t.Run(j.name+" (validated)", func(t *testing.T) {
			// Its artifacts must be files its commands write.
			script := strings.Join(j.Script, "\n")
			for _, a := range append(slices.Clone(j.Artifacts.Paths), glJunit(j)...) {
				if !strings.Contains(script, " "+a) {
					t.Errorf("artifact %s is written by none of its commands", a)
				}
			}
			validateCommands(t, docBlock{file: b.file, line: b.line, text: script})
		})
	}
	return notRun
}

// glJunit is the job's artifacts:reports:junit, a path or a list of them.
func glJunit(j *glJob) []string {
	switch v := j.Artifacts.Reports.Junit.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, p := range v {
			out = append(out, fmt.Sprint(p))
		}
		return out
	}
	return nil
}

// The structure checks catch what GitHub and GitLab would refuse.
func TestCIConfigChecks(t *testing.T) {
	t.Parallel()
	const gh = `on: {pull_request: }
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: tollgate validate perf/*.yaml
`
	const gl = `stages: [perf]
.t: {image: golang:1.26, before_script: [make]}
perf:
  extends: .t
  stage: perf
  script: [tollgate validate perf/*.yaml]
`
	for _, tc := range []struct {
		name, kind, text, err string
	}{
		{"github: a good workflow", "github", gh, ""},
		{"github: no on", "github", strings.Replace(gh, "on: {pull_request: }\n", "", 1), "no on:"},
		{"github: no runs-on", "github", strings.Replace(gh, "    runs-on: ubuntu-latest\n", "", 1), "jobs.a: no runs-on"},
		{"github: runs-on misspelt", "github", strings.Replace(gh, "runs-on", "runs_on", 1), "field runs_on not found"},
		{"github: a step with uses and run", "github", strings.Replace(gh, "- uses: actions/checkout@v4", "- {uses: actions/checkout@v4, run: make}", 1), "steps[0]: want exactly one of uses and run"},
		{"github: a step with neither", "github", strings.Replace(gh, "- uses: actions/checkout@v4", "- name: nothing", 1), "steps[0]: want exactly one"},
		{"github: no steps", "github", gh[:strings.Index(gh, "    steps:")], "jobs.a: no steps"},
		{"gitlab: a good pipeline", "gitlab", gl, ""},
		{"gitlab: no script", "gitlab", strings.Replace(gl, "  script: [tollgate validate perf/*.yaml]\n", "", 1), "perf: no script"},
		{"gitlab: a stage not in stages", "gitlab", strings.Replace(gl, "stage: perf", "stage: test", 1), `perf: stage "test" is not one of [perf]`},
		{"gitlab: extends nothing", "gitlab", strings.Replace(gl, "extends: .t", "extends: .u", 1), "extends .u, which is not defined"},
		{"gitlab: needs nothing", "gitlab", gl + "  needs: [build]\n", "needs build, which is not a job"},
		{"gitlab: a misspelt key", "gitlab", gl + "  artefacts: {paths: [out/]}\n", "field artefacts not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.kind == "github" {
				_, err = parseGitHub(tc.text)
			} else {
				_, err = parseGitLab(tc.text)
			}
			if tc.err == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
}
