package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// prometheusBin is the Prometheus server the remote-write tests push to
// (.ci/run installs it with apt-get when it can).
const prometheusBin = "/usr/bin/prometheus"

// prometheus is a real Prometheus server on loopback with its
// remote-write receiver on, started for one test and stopped after it.
type prometheus struct {
	base string // http://127.0.0.1:PORT
	log  *bytes.Buffer
}

func (p *prometheus) writeURL() string { return p.base + "/api/v1/write" }

func startPrometheus(t *testing.T) *prometheus {
	t.Helper()
	if _, err := os.Stat(prometheusBin); err != nil {
		t.Skipf("no Prometheus server at %s (apt-get install -y prometheus to run this test; .ci/run does)", prometheusBin)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A port that was free a moment ago; Prometheus says so and the test
	// fails plainly if another process took it in between.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	p := &prometheus{base: "http://" + addr, log: &bytes.Buffer{}}
	cmd := exec.CommandContext(ctx, prometheusBin, "--web.enable-remote-write-receiver",
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--config.file="+cfg)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prometheus exited before it was ready: %v\n%s", err, p.log)
		default:
		}
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, p.base+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		rcancel()
		if err == nil && resp.StatusCode == http.StatusOK {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 60s (%v)\n%s", err, p.log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// promSeries is one series of an instant query's answer over a range
// selector: its labels and every sample in the range, [time, "value"].
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// query runs an instant query at time at through Prometheus' HTTP API; q
// is a range selector, so that each sample comes with its own time.
func (p *prometheus) query(t *testing.T, q, at string) []promSeries {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := p.base + "/api/v1/query?" + url.Values{"query": {q}, "time": {at}}.Encode()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Status != "success" {
		t.Fatalf("query %s: %v %s %s", q, err, out.Status, out.Error)
	}
	return out.Data.Result
}

// seriesKey writes a series' labels as name{a="b",…}, sorted, without the
// labels given in drop.
func seriesKey(labels map[string]string, drop ...string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if k != "__name__" && !slices.Contains(drop, k) {
			parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
		}
	}
	return labels["__name__"] + "{" + strings.Join(parts, ",") + "}"
}

// rwScenario is small, on the embedded simulator, and has a slice of
// every common kind: prompt sizes, load points, a capacity search, gates.
const rwScenario = `name: rw-small
targets:
  sim: {kind: embedded, sim: {decode_step: 1ms, max_running_seqs: 2}, metrics: false, metadata: false}
phases:
  prefill: {prompt_tokens: [32, 64], repeat: 2, max_tokens: 2}
  decode: {prompt_tokens: 16, max_tokens: 8, repeat: 2}
  load: {sweep: {concurrency: [1, 2]}, requests: 4, prompt_tokens: 16, max_tokens: 3}
  capacity:
    kind: capacity
    capacity:
      by: concurrency
      min: 1
      max: 4
      start: 1
      precision: 50%
      budget: 10s
      probe: {warmup: 100ms, duration: 400ms, min_requests: 2, repeat: 1, hold: 0s}
      objectives: ["ttft_ms.p99 <= 1000"]
    prompt_tokens: 16
    max_tokens: 3
gates:
  - name: decode is fast
    expr: runs.sim.phases.decode.decode_tokens_per_s.p50 > 1
  - name: ttft under a minute
    expr: runs.sim.phases.prefill.ttft_ms.p99 < 60000
`

func writeScenario(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rw.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// expectedSeries derives, from the JSON report alone, every series a push
// of it should have made and its value: the report's figures in base
// units (ms ÷ 1000), by run, phase and slice, with the gates' and the
// capacity's. It reads the JSON, not the report package, so a mapping
// that went wrong in the writer shows here.
func expectedSeries(t *testing.T, rep map[string]any, user map[string]string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	scenario := rep["scenario"].(map[string]any)["name"].(string)
	put := func(name string, labels map[string]string, v float64) {
		l := maps.Clone(user)
		maps.Copy(l, labels)
		l["__name__"] = name
		l["scenario"] = scenario
		k := seriesKey(l)
		if _, dup := out[k]; dup {
			t.Fatalf("the expectation has %s twice", k)
		}
		out[k] = v
	}
	quantileOf := map[string]string{"min": "0", "p50": "0.5", "p90": "0.9", "p95": "0.95", "p99": "0.99", "max": "1"}
	statKeys := []string{"prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "sse_token_events"}
	slice := func(labels map[string]string, obj map[string]any) {
		for k, v := range obj {
			switch val := v.(type) {
			case map[string]any:
				name, scale := "", 1.0
				switch {
				case strings.HasSuffix(k, "_ms"):
					name, scale = "tollgate_"+strings.TrimSuffix(k, "_ms")+"_seconds", 1000
				case strings.HasSuffix(k, "_per_s"):
					name = "tollgate_" + strings.TrimSuffix(k, "_per_s") + "_per_second"
				case slices.Contains(statKeys, k):
					name = "tollgate_" + k
				case k == "errors":
					for class, n := range val["by_class"].(map[string]any) {
						put("tollgate_requests_failed", with(labels, "class", class), n.(float64))
					}
					continue
				default:
					continue
				}
				if val["count"].(float64) == 0 {
					continue
				}
				for f, q := range quantileOf {
					put(name, with(labels, "quantile", q), val[f].(float64)/scale)
				}
				put(name+"_mean", labels, val["mean"].(float64)/scale)
				put(name+"_count", labels, val["count"].(float64))
			case float64:
				switch {
				case k == "requests":
					put("tollgate_requests", labels, val)
				case k == "succeeded":
					put("tollgate_requests_succeeded", labels, val)
				case k == "concurrency":
					put("tollgate_offered_concurrency", labels, val)
				case k == "duration_s":
					put("tollgate_point_duration_seconds", labels, val)
				case k == "achieved_concurrency" || k == "peak_in_flight":
					put("tollgate_"+k, labels, val)
				case strings.HasSuffix(k, "_per_s"):
					put("tollgate_"+strings.TrimSuffix(k, "_per_s")+"_per_second", labels, val)
				}
			}
		}
	}
	for rn, r := range rep["runs"].(map[string]any) {
		run := r.(map[string]any)
		base := map[string]string{"run": rn, "target": run["target"].(map[string]any)["name"].(string)}
		ok := 0.0
		if run["status"] == "ok" {
			ok = 1
		}
		put("tollgate_run_ok", base, ok)
		for pn, p := range run["phases"].(map[string]any) {
			ph := p.(map[string]any)
			at := func(s string) map[string]string { return with(with(base, "phase", pn), "slice", s) }
			if _, ok := ph["requests"]; ok {
				slice(at("all"), ph)
			}
			for _, bd := range []string{"by_prompt_tokens", "variants"} {
				if m, ok := ph[bd].(map[string]any); ok {
					for k, v := range m {
						slice(at(k), v.(map[string]any))
					}
				}
			}
			if pts, ok := ph["points"].([]any); ok {
				for _, v := range pts {
					pt := v.(map[string]any)
					slice(at(fmt.Sprintf("concurrency %v", pt["concurrency"])), pt)
				}
			}
			if c, ok := ph["capacity"].(map[string]any); ok {
				name := "tollgate_capacity_rate_per_second"
				found := c["max_rate_per_s"]
				if c["by"] == "concurrency" {
					name, found = "tollgate_capacity_concurrency", c["max_concurrency"]
				}
				if found != nil {
					put(name, with(at("all"), "estimate", "found"), found.(float64))
				}
				for side, v := range c["interval"].(map[string]any) {
					if side == "low" || side == "high" {
						put(name, with(at("all"), "estimate", "interval_"+side), v.(float64))
					}
				}
				confirmed := 0.0
				if c["confirmed"] == true {
					confirmed = 1
				}
				put("tollgate_capacity_confirmed", at("all"), confirmed)
				put("tollgate_capacity_probes", at("all"), c["probe_count"].(float64))
			}
		}
	}
	gatesOf, _ := rep["gates"].([]any)
	for _, g := range gatesOf {
		gate := g.(map[string]any)
		passed := 0.0
		if gate["status"] == "pass" {
			passed = 1
		}
		put("tollgate_gate_passed", map[string]string{"gate": gate["name"].(string), "status": gate["status"].(string)}, passed)
	}
	if st := rep["status"].(string); st != "not_gated" {
		passed := 0.0
		if st == "pass" {
			passed = 1
		}
		put("tollgate_report_passed", map[string]string{"status": st}, passed)
	}
	return out
}

// equalNumbers fails for every key whose number differs between want and
// got, or that only one has (the first 20 of them, sorted), naming the
// sides by wantIn and gotIn.
func equalNumbers(t *testing.T, want, got map[string]float64, wantIn, gotIn string) {
	t.Helper()
	var diffs []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %v in %s, absent from %s", k, v, wantIn, gotIn))
		} else if g != v {
			diffs = append(diffs, fmt.Sprintf("%s: %v in %s, %v in %s", k, v, wantIn, g, gotIn))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %v in %s, absent from %s", k, v, gotIn, wantIn))
		}
	}
	slices.Sort(diffs)
	for i, d := range diffs {
		if i == 20 {
			t.Errorf("… and %d more", len(diffs)-20)
			break
		}
		t.Error(d)
	}
}

func with(m map[string]string, k, v string) map[string]string {
	c := maps.Clone(m)
	c[k] = v
	return c
}

var pushedLine = regexp.MustCompile(`pushed (\d+) series to (\S+) \(remote-write\)`)

// pushed is the series count a command said it pushed; 0 when it said none.
func pushed(out string) int {
	m := pushedLine.FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// compareWithPrometheus queries every series labelled test=id back at the
// report's end and holds them to expectedSeries of the JSON report: the
// same set of series, each value equal (Prometheus writes a float in the
// shortest form that reads back as the same float64), each sample at
// ended_at to the millisecond.
func compareWithPrometheus(t *testing.T, prom *prometheus, rep map[string]any, user map[string]string, wantPushed int) {
	t.Helper()
	want := expectedSeries(t, rep, user)
	end := rep["ended_at"].(string)
	endAt, err := time.Parse(time.RFC3339Nano, end)
	if err != nil {
		t.Fatal(err)
	}
	wantTS := float64(endAt.UnixMilli()) / 1000
	got := map[string]float64{}
	for _, s := range prom.query(t, fmt.Sprintf(`{__name__=~"tollgate_.+", test=%q}[10m]`, user["test"]), end) {
		if len(s.Values) != 1 || s.Values[0][0].(float64) != wantTS {
			t.Errorf("%s: samples %v, want one at the report's end %s", seriesKey(s.Metric), s.Values, end)
			continue
		}
		v, err := strconv.ParseFloat(s.Values[0][1].(string), 64)
		if err != nil {
			t.Fatal(err)
		}
		got[seriesKey(s.Metric)] = v
	}
	if len(got) != wantPushed {
		t.Errorf("Prometheus has %d series, the command said it pushed %d", len(got), wantPushed)
	}
	equalNumbers(t, want, got, "the report", "Prometheus")
	t.Logf("%d series queried back from Prometheus equal the report's figures", len(want))
}

// A real run on the embedded simulator pushes its figures to a real
// Prometheus; queried back at the run's end, every series equals the JSON
// report's figure. judge pushes the same series again (accepted: same
// values, same time), and a sharded run's merge and the judge of the
// merge push theirs.
func TestRemoteWriteToPrometheus(t *testing.T) {
	t.Parallel()
	prom := startPrometheus(t)
	sc := writeScenario(t, rwScenario)
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	user := map[string]string{"test": "run", "branch": "main"}
	r := runBin(t, perfBin, "run", sc, "--json-out", out, "--remote-write", prom.writeURL(), "--label", "test=run", "--label", "branch=main")
	if r.code != ExitPass {
		t.Fatalf("run: exit %d\n%s\n%s\n%s", r.code, r.stdout, r.stderr, prom.log)
	}
	n := pushed(r.stdout)
	if n == 0 {
		t.Fatalf("run did not say it pushed:\n%s", r.stdout)
	}
	rep := readJSONReport(t, out)
	compareWithPrometheus(t, prom, rep, user, n)

	j := runBin(t, perfBin, "judge", sc, out, "--remote-write", prom.writeURL(), "--label", "test=run", "--label", "branch=main")
	if j.code != ExitPass || pushed(j.stdout) != n {
		t.Fatalf("judge: exit %d, pushed %d, want 0 and %d\n%s\n%s", j.code, pushed(j.stdout), n, j.stdout, j.stderr)
	}
	compareWithPrometheus(t, prom, rep, user, n)

	shard, merged := filepath.Join(dir, "shard.json"), filepath.Join(dir, "merged.json")
	if s := runBin(t, perfBin, "run", sc, "--shard", "0/1", "--json-out", shard, "-q"); s.code != ExitPass {
		t.Fatalf("shard: exit %d\n%s", s.code, s.stderr)
	}
	mergeUser := map[string]string{"test": "merge"}
	m := runBin(t, perfBin, "merge", shard, "--json-out", merged, "--remote-write", prom.writeURL(), "--label", "test=merge")
	if m.code != ExitPass {
		t.Fatalf("merge: exit %d\n%s\n%s", m.code, m.stdout, m.stderr)
	}
	compareWithPrometheus(t, prom, readJSONReport(t, merged), mergeUser, pushed(m.stdout))
	judged := filepath.Join(dir, "judged.json")
	jm := runBin(t, perfBin, "judge", sc, merged, "--json-out", judged, "--remote-write", prom.writeURL(), "--label", "test=merge")
	if jm.code != ExitPass {
		t.Fatalf("judge of the merge: exit %d\n%s\n%s", jm.code, jm.stdout, jm.stderr)
	}
	// The judge adds the verdicts to the merge's series.
	compareWithPrometheus(t, prom, readJSONReport(t, judged), mergeUser, pushed(jm.stdout))
	if pushed(jm.stdout) <= pushed(m.stdout) {
		t.Errorf("the judge pushed %d series, the merge %d: want the gates' on top", pushed(jm.stdout), pushed(m.stdout))
	}

	dashboardQueriesRun(t, prom, rep["ended_at"].(string))
}

// dashboardQueriesRun runs every query of the Grafana dashboards, as
// Grafana would with every variable at All, on the Prometheus the test
// pushed to: each must be one this Prometheus evaluates, and the latency,
// gate and capacity panels must find series.
func dashboardQueriesRun(t *testing.T, prom *prometheus, at string) {
	t.Helper()
	files, _ := filepath.Glob("../../deploy/grafana/*.json")
	if len(files) == 0 {
		t.Fatal("no dashboards under deploy/grafana")
	}
	vars := regexp.MustCompile(`\$\{?[A-Za-z_]+\}?`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		found := map[string]int{}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				// Every variable at All; prom.query fails on a query
				// this Prometheus refuses.
				q := strings.NewReplacer("$__interval", "10m", "$__range", "1h").Replace(tg.Expr)
				q = vars.ReplaceAllString(q, ".*")
				for _, s := range prom.query(t, q, at) {
					found[p.Title] += len(s.Values) + 1
				}
			}
		}
		for _, title := range []string{"TTFT by slice (quantile $quantile)", "TPOT by slice (quantile $quantile)", "Gate verdicts over time", "Capacity found"} {
			if found[title] == 0 {
				t.Errorf("%s: panel %q finds no series", filepath.Base(f), title)
			}
		}
	}
}

// runEnv runs the binary in the repository root with env on top of this
// environment.
func runEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// A push that fails never loses the report nor changes the verdict: it is
// said on stderr, and the exit is 3, or the gate's 1 when one failed.
func TestRemoteWriteFailures(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-token-value"
	// refused: a port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/api/v1/write"
	ln.Close()
	// silent: accepts, reads, never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	// bad: a 400 that echoes the credentials it was sent.
	var badCalls atomic.Int32
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		badCalls.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "out of bounds sample; you sent %q and %q", r.Header.Get("Authorization"), r.Header.Get("X-Token"))
	}))
	t.Cleanup(bad.Close)
	// Two decodes: the gate passes when it wants 2, fails when it wants 3.
	const decodes = `name: rw-fail
targets:
  sim: {kind: embedded, sim: {decode_step: 1ms}, metrics: false, metadata: false}
phases:
  decode: {prompt_tokens: 16, max_tokens: 4, repeat: 2}
gates:
  - name: decode happened
    expr: runs.sim.phases.decode.succeeded == %d
`
	sc, failing := writeScenario(t, fmt.Sprintf(decodes, 2)), writeScenario(t, fmt.Sprintf(decodes, 3))
	for _, c := range []struct {
		name     string
		scenario string
		url      string
		env      []string
		args     []string
		code     int
		status   string
		stderr   []string
		maxTime  time.Duration
	}{
		{name: "refused", scenario: sc, url: refused, code: ExitNotJudged, status: "pass",
			stderr: []string{"--remote-write: remote write failed: pushing to " + refused, "connection refused", "attempt 3 of 3", "the series were not written; every other output was"}},
		{name: "never answers", scenario: sc, url: "http://" + silent.Addr().String() + "/api/v1/write", args: []string{"--remote-write-timeout", "1s"},
			code: ExitNotJudged, status: "pass", stderr: []string{"no answer within 1s"}, maxTime: 20 * time.Second},
		{name: "4xx, secrets echoed", scenario: sc, url: bad.URL + "/api/v1/write",
			env:  []string{envRemoteWriteHeaders + "=X-Token=" + secret + ",X-Scope-OrgID=team-a", envRemoteWriteUsername + "=tollgate", envRemoteWritePassword + "=" + secret},
			code: ExitNotJudged, status: "pass", stderr: []string{"the receiver answered 400 Bad Request: out of bounds sample", redactedWord}},
		{name: "a gate failed too", scenario: failing, url: refused, code: ExitGateFailed, status: "fail",
			stderr: []string{"connection refused", "the series were not written"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "r.json")
			start := time.Now()
			args := append([]string{"run", c.scenario, "--json-out", out, "--remote-write", c.url, "--label", "branch=main"}, c.args...)
			r := runEnv(t, c.env, args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, c.code, r.stdout, r.stderr)
			}
			if d := time.Since(start); c.maxTime > 0 && d > c.maxTime {
				t.Errorf("took %s", d)
			}
			if st := readJSONReport(t, out)["status"]; st != c.status {
				t.Errorf("the report's status is %v, want %s: a push does not change the verdict", st, c.status)
			}
			for _, w := range c.stderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr+r.stdout, secret) {
				t.Errorf("a secret leaked:\n%s\n%s", r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "wrote "+out) {
				t.Errorf("stdout does not name the report written:\n%s", r.stdout)
			}
		})
	}
	t.Run("judge and merge say it too", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.json")
		if r := runBin(t, bin, "run", sc, "--json-out", out, "-q"); r.code != ExitPass {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
		judged := filepath.Join(t.TempDir(), "judged.json")
		j := runBin(t, bin, "judge", sc, out, "--json-out", judged, "--remote-write", refused)
		if j.code != ExitNotJudged || !strings.Contains(j.stderr, "connection refused") {
			t.Errorf("judge: exit %d, want 3 saying why\n%s", j.code, j.stderr)
		}
		if st := readJSONReport(t, judged)["status"]; st != "pass" {
			t.Errorf("the judged report's status is %v", st)
		}
		shard := filepath.Join(t.TempDir(), "shard.json")
		if r := runBin(t, bin, "run", sc, "--shard", "0/1", "--json-out", shard, "-q"); r.code != ExitPass {
			t.Fatalf("shard: exit %d\n%s", r.code, r.stderr)
		}
		merged := filepath.Join(t.TempDir(), "merged.json")
		m := runBin(t, bin, "merge", shard, "--json-out", merged, "--remote-write", bad.URL)
		if m.code != ExitNotJudged || !strings.Contains(m.stderr, "400 Bad Request") {
			t.Errorf("merge: exit %d, want 3 saying why\n%s", m.code, m.stderr)
		}
		readJSONReport(t, merged)
	})
}

const redactedWord = "[REDACTED]"

// What is wrong with the flags or the environment is said before anything
// is sent: exit 2, no request, no report.
func TestRemoteWriteInvalid(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { calls.Add(1) }))
	defer srv.Close()
	sc := writeScenario(t, "name: rw-invalid\nphases:\n  decode: {prompt_tokens: 16, max_tokens: 2, repeat: 1}\n")
	for _, c := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"label name", []string{"--label", "team-name=a"}, nil, `--label: invalid label "team-name=a": "team-name" is not a label name`},
		{"label reserved", []string{"--label", "phase=x"}, nil, "tollgate sets phase itself"},
		{"label __", []string{"--label", "__tenant=x"}, nil, "reserved by Prometheus"},
		{"label empty", []string{"--label", "branch="}, nil, "an empty value"},
		{"label twice", []string{"--label", "a=1", "--label", "a=2"}, nil, "a is given twice"},
		{"url", []string{"--remote-write", "localhost:9090/api/v1/write"}, nil, "want an http:// or https:// URL"},
		{"timeout", []string{"--remote-write-timeout", "0s"}, nil, "--remote-write-timeout 0s: want a duration above 0"},
		{"headers", nil, []string{envRemoteWriteHeaders + "=Content-Encoding=gzip"}, "$TOLLGATE_REMOTE_WRITE_HEADERS: invalid remote write configuration: headers: Content-Encoding is set by the remote-write protocol"},
		{"two credentials", nil, []string{envRemoteWriteHeaders + "=Authorization=Bearer%20x", envRemoteWriteUsername + "=u"}, "both basic auth and an Authorization header"},
		{"shard", []string{"--shard", "0/2"}, nil, "--remote-write with --shard"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"run", sc, "--json-out", out}, c.args...)
			if !slices.Contains(args, "--remote-write") {
				args = append(args, "--remote-write", srv.URL)
			}
			r := runEnv(t, c.env, args...)
			if r.code != ExitInvalid || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, want 2 saying %q\n%s", r.code, c.want, r.stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a report was written: the run should not have started")
			}
		})
	}
	for _, c := range []struct{ name, flag, value string }{{"label alone", "--label", "a=b"}, {"timeout alone", "--remote-write-timeout", "5s"}} {
		t.Run(c.name, func(t *testing.T) {
			r := runBin(t, bin, "run", sc, c.flag, c.value)
			if r.code != ExitInvalid || !strings.Contains(r.stderr, c.flag+" is for --remote-write") {
				t.Errorf("exit %d\n%s", r.code, r.stderr)
			}
		})
	}
	t.Run("judge and merge check first", func(t *testing.T) {
		j := runBin(t, bin, "judge", sc, "nonexistent.json", "--remote-write", srv.URL, "--label", "9=x")
		if j.code != ExitInvalid || !strings.Contains(j.stderr, "not a label name") {
			t.Errorf("judge: exit %d\n%s", j.code, j.stderr)
		}
		m := runBin(t, bin, "merge", "nonexistent.json", "--remote-write", "ftp://x")
		if m.code != ExitInvalid || !strings.Contains(m.stderr, "want an http:// or https:// URL") {
			t.Errorf("merge: exit %d\n%s", m.code, m.stderr)
		}
	})
	if n := calls.Load(); n != 0 {
		t.Errorf("%d pushes reached the receiver", n)
	}
}

// An interrupted run writes its partial report and pushes nothing: its
// series would read as a whole run's.
func TestRemoteWriteNotOnInterrupt(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "r.json")
	// Not -q: the run says when its signals are its own, and is
	// interrupted then (a signal after a fixed sleep reached a binary on a
	// busy machine before its handler: exit "signal: interrupt").
	cmd := exec.Command(bin, "run", "examples/load-sweep.yaml", "--json-out", out, "--remote-write", srv.URL,
		"--set", "phases.load.duration=30s", "--set", "phases.load.requests=100000")
	cmd.Dir = "../.."
	cmd.Stdout = io.Discard
	r := startLive(t, cmd)
	r.waitFor(t, sayRunning)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := r.exitCode(t); code != ExitInterrupted {
		t.Fatalf("exit %d, want 130\n%s", code, r.stderr())
	}
	if !strings.Contains(r.stderr(), "--remote-write: not pushed: the run was interrupted") {
		t.Errorf("stderr does not say nothing was pushed:\n%s", r.stderr())
	}
	if rep := readJSONReport(t, out); rep["status"] != "incomplete" {
		t.Errorf("status %v", rep["status"])
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d pushes after an interrupt", n)
	}
}
