package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// yamlDocs parses every document of a YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			if err.Error() == "EOF" {
				return docs
			}
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, d)
	}
}

// at walks a parsed YAML tree by keys and list indices.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: not a map at %q", path, k)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: no item %d", path, k)
			}
			v = l[k]
		}
	}
	return v
}

func envOf(t *testing.T, container any) map[string]any {
	out := map[string]any{}
	for _, e := range at(t, container, "env").([]any) {
		m := e.(map[string]any)
		if v, ok := m["value"]; ok {
			out[m["name"].(string)] = v
		} else {
			out[m["name"].(string)] = m["valueFrom"]
		}
	}
	return out
}

// TestKubernetesManifests checks the fields of deploy/kubernetes/shards.yaml
// that make it a sharded run: an Indexed Job of N pods at once, N said the
// same everywhere, the shards and the judge sharing the scenario and the
// report volume, and the commands tollgate needs.
func TestKubernetesManifests(t *testing.T) {
	docs := yamlDocs(t, "../../deploy/kubernetes/shards.yaml")
	byName := map[string]map[string]any{}
	for _, d := range docs {
		byName[at(t, d, "kind").(string)+"/"+at(t, d, "metadata", "name").(string)] = d
	}
	shards, judge := byName["Job/tollgate-shards"], byName["Job/tollgate-judge"]
	pvc := byName["PersistentVolumeClaim/tollgate-reports"]
	if shards == nil || judge == nil || pvc == nil || byName["ConfigMap/tollgate-run"] == nil {
		t.Fatalf("want the Jobs tollgate-shards and tollgate-judge, the PVC tollgate-reports and the ConfigMap tollgate-run; got %v", byName)
	}
	if m := at(t, pvc, "spec", "accessModes", 0); m != "ReadWriteMany" {
		t.Errorf("the report volume is %v: every shard writes to it at once, it must be ReadWriteMany", m)
	}
	spec := at(t, shards, "spec").(map[string]any)
	n := spec["completions"]
	if spec["completionMode"] != "Indexed" || spec["parallelism"] != n {
		t.Errorf("shards: completionMode %v, completions %v, parallelism %v: want Indexed with every shard at once", spec["completionMode"], n, spec["parallelism"])
	}
	shard := at(t, spec, "template", "spec", "containers", 0)
	env := envOf(t, shard)
	if env["TOLLGATE_SHARD_COUNT"] != fmt.Sprint(n) {
		t.Errorf("TOLLGATE_SHARD_COUNT %v, completions %v", env["TOLLGATE_SHARD_COUNT"], n)
	}
	// Every pod of one Job, and only they, share a run id: the Job's uid.
	if got := fmt.Sprint(env["TOLLGATE_RUN_ID"]); !strings.Contains(got, "metadata.labels['batch.kubernetes.io/controller-uid']") {
		t.Errorf("TOLLGATE_RUN_ID is %v: want the Job's uid from the pod's label batch.kubernetes.io/controller-uid", got)
	}
	wait := at(t, judge, "spec", "template", "spec", "initContainers", 0)
	if envOf(t, wait)["SHARDS"] != fmt.Sprint(n) {
		t.Errorf("the judge waits for %v reports, there are %v shards", envOf(t, wait)["SHARDS"], n)
	}
	cmd := strings.Join(strings.Fields(fmt.Sprint(at(t, shard, "command", 2))), " ")
	for _, want := range []string{"tollgate run /scenario/scenario.yaml", `--start-at "$START_AT"`, `--json-out "/reports/shard-$JOB_COMPLETION_INDEX.json"`} {
		if !strings.Contains(cmd, want) {
			t.Errorf("shard command %q lacks %q", cmd, want)
		}
	}
	mj := at(t, judge, "spec", "template", "spec", "containers", 0)
	jcmd := strings.Join(strings.Fields(fmt.Sprint(at(t, mj, "command", 2))), " ")
	for _, want := range []string{"tollgate merge /reports/shard-*.json --json-out /reports/merged.json &&", "exec tollgate judge /scenario/scenario.yaml /reports/merged.json"} {
		if !strings.Contains(jcmd, want) {
			t.Errorf("judge command %q lacks %q", jcmd, want)
		}
	}
	for _, job := range []map[string]any{shards, judge} {
		ps := at(t, job, "spec", "template", "spec")
		if at(t, ps, "restartPolicy") != "Never" || at(t, job, "spec", "backoffLimit") != 0 {
			t.Errorf("%v: want restartPolicy Never and backoffLimit 0 (a rerun shard starts late; a verdict is the first answer)", at(t, job, "metadata", "name"))
		}
		vols := map[string]any{}
		for _, v := range at(t, ps, "volumes").([]any) {
			vols[at(t, v, "name").(string)] = v
		}
		if at(t, vols["scenario"], "configMap", "name") != "tollgate-scenario" || at(t, vols["reports"], "persistentVolumeClaim", "claimName") != "tollgate-reports" {
			t.Errorf("%v: volumes %v", at(t, job, "metadata", "name"), vols)
		}
	}
}

var ghMatrixExpr = regexp.MustCompile(`\$\{\{\s*([^}]+?)\s*\}\}`)

// TestGitHubMatrixWorkflow checks deploy/github/sharded-load.yml and runs
// its tollgate commands for real, as its jobs would: every matrix shard
// against one tollgate serve, then the judge job's merge and judge.
func TestGitHubMatrixWorkflow(t *testing.T) {
	wf := yamlDocs(t, "../../deploy/github/sharded-load.yml")[0]
	shards := at(t, wf, "jobs", "shard", "strategy", "matrix", "shard").([]any)
	if at(t, wf, "jobs", "judge", "needs") != "shard" || at(t, wf, "jobs", "judge", "if") != "always()" {
		t.Error("the judge job must need the shard jobs and run even when one failed (it then names the missing shard)")
	}
	runs := func(job string) []string {
		var out []string
		for _, s := range at(t, wf, "jobs", job, "steps").([]any) {
			if r, ok := s.(map[string]any)["run"].(string); ok && strings.HasPrefix(r, "bin/tollgate ") {
				out = append(out, strings.Join(strings.Fields(r), " "))
			}
		}
		return out
	}
	shardRun, judgeRuns := runs("shard"), runs("judge")
	if len(shardRun) != 1 || len(judgeRuns) != 2 {
		t.Fatalf("tollgate steps: shard %q, judge %q", shardRun, judgeRuns)
	}
	if want := fmt.Sprintf("--shard ${{ matrix.shard }}/%d", len(shards)); !strings.Contains(shardRun[0], want) {
		t.Errorf("shard step %q lacks %q (the matrix has %d shards)", shardRun[0], want, len(shards))
	}
	url := startServeWith(t, perfBin)
	// Whole seconds, as the plan job writes it: a lead of 7 to 8 s, so that
	// every shard is on time (within 100 ms) on a busy machine.
	start := time.Now().Add(8 * time.Second).UTC().Format(time.RFC3339)
	sh := func(line string, shard any) string {
		return ghMatrixExpr.ReplaceAllStringFunc(line, func(m string) string {
			switch ghMatrixExpr.FindStringSubmatch(m)[1] {
			case "matrix.shard":
				return fmt.Sprint(shard)
			case "needs.plan.outputs.start_at":
				return start
			case "inputs.base_url":
				return url
			case "github.run_id":
				return "4711"
			case "github.run_attempt":
				return "1"
			}
			t.Fatalf("unknown expression %s", m)
			return ""
		})
	}
	repo := newRepoCopy(t)
	if err := os.MkdirAll(filepath.Join(repo, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(perfBin, filepath.Join(repo, "bin", "tollgate")); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, len(shards))
	for _, s := range shards {
		go func(s any) {
			_, err := runShell(repo, sh(shardRun[0], s))
			errs <- err
		}(s)
	}
	for range shards {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range judgeRuns {
		if out, err := runShell(repo, sh(line, nil)); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
}

// runShell runs a workflow step's line with sh in dir.
func runShell(dir, line string) (string, error) {
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w\n%s", line, err, out)
	}
	return string(out), nil
}
