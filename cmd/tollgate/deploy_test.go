package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

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
// same everywhere, and everything a run owns (its two Jobs, its ConfigMap,
// its folder on the report volume) named by the run, __RUN__ until the
// recipe puts the run's name in. TestKubernetesRecipe and TestKubernetesJobs
// run what it says.
func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	docs := yamlDocs(t, "../../deploy/kubernetes/shards.yaml")
	byName := map[string]map[string]any{}
	for _, d := range docs {
		byName[at(t, d, "kind").(string)+"/"+at(t, d, "metadata", "name").(string)] = d
	}
	shards, judge := byName["Job/"+runToken+"-shards"], byName["Job/"+runToken+"-judge"]
	pvc := byName["PersistentVolumeClaim/tollgate-reports"]
	if shards == nil || judge == nil || pvc == nil || len(byName) != 3 {
		t.Fatalf("want the Jobs %[1]s-shards and %[1]s-judge and the PVC tollgate-reports; got %v", runToken, byName)
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
	mj := at(t, judge, "spec", "template", "spec", "containers", 0)
	if envOf(t, mj)["SHARDS"] != fmt.Sprint(n) {
		t.Errorf("the judge waits for %v shards, there are %v", envOf(t, mj)["SHARDS"], n)
	}
	if at(t, judge, "spec", "template", "spec", "initContainers") != nil || len(at(t, judge, "spec", "template", "spec", "containers").([]any)) != 1 {
		t.Error("the judge's pod must be its one container: the recipe reads the verdict from its exit code")
	}
	if d, ok := at(t, judge, "spec", "activeDeadlineSeconds").(int); !ok || d <= 0 {
		t.Errorf("the judge's Job has no activeDeadlineSeconds (%v): a judge that hangs must end Failed", d)
	}
	for _, job := range []map[string]any{shards, judge} {
		name := at(t, job, "metadata", "name")
		ps := at(t, job, "spec", "template", "spec")
		if at(t, ps, "restartPolicy") != "Never" || at(t, job, "spec", "backoffLimit") != 0 {
			t.Errorf("%v: want restartPolicy Never and backoffLimit 0 (a rerun shard starts late; a verdict is the first answer)", name)
		}
		c := at(t, ps, "containers", 0)
		if envOf(t, c)["RUN"] != runToken {
			t.Errorf("%v: RUN is %v, want %s (the run's folder on the volume)", name, envOf(t, c)["RUN"], runToken)
		}
		for _, e := range at(t, c, "env").([]any) {
			from, _ := at(t, e, "valueFrom").(map[string]any)
			if ref, ok := from["configMapKeyRef"]; ok && at(t, ref, "name") != runToken {
				t.Errorf("%v: env %v is read from the ConfigMap %v, not the run's (%s)", name, at(t, e, "name"), at(t, ref, "name"), runToken)
			}
		}
		vols := map[string]any{}
		for _, v := range at(t, ps, "volumes").([]any) {
			vols[at(t, v, "name").(string)] = v
		}
		if at(t, vols["scenario"], "configMap", "name") != runToken || at(t, vols["reports"], "persistentVolumeClaim", "claimName") != "tollgate-reports" {
			t.Errorf("%v: volumes %v", name, vols)
		}
	}
}
