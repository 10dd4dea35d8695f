package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/peertest"
)

// A run that cannot happen says why once, with its cause first, exits 3,
// and says once that the gates were not judged instead of erroring each.
func TestFailedRunLeadsWithItsCause(t *testing.T) {
	t.Parallel()
	url := startServeWith(t, bin, "--decode-step", "1ms")
	closed := peertest.Refused()
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string // the one line on stderr
		cause  string // said once in stdout and stderr together
	}{
		{
			name: "a model the server does not serve",
			args: []string{"--set", "vars.base_url=" + url, "--set", "vars.model=Qwen/Qwen3-8B"},
			stderr: `tollgate run: run server did not complete: model "Qwen/Qwen3-8B" is not served at ` + url +
				` (HTTP 404): its /v1/models lists "tollgate-sim"; set targets.server.model to one of them, or leave it empty for the first` + "\n",
			cause: "is not served",
		},
		{
			name: "connection refused",
			args: []string{"--set", "vars.base_url=" + closed, "--set", "targets.server.ready_timeout=300ms"},
			stderr: "tollgate run: run server did not complete: connection refused at " + closed +
				" (retried for 300ms): nothing listens there; check base_url, or start the server (and let it listen) before tollgate runs\n",
			cause: "connection refused",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			r := tollgate(t, append([]string{"run", "examples/serving.yaml", "--json-out", out}, tc.args...)...)
			// The notice that the run handles interrupts is not an error;
			// after it, the cause is all stderr says.
			stderr := r.stderr
			if strings.HasPrefix(stderr, sayRunning) {
				_, stderr, _ = strings.Cut(stderr, "\n")
			}
			if r.code != ExitNotJudged || stderr != tc.stderr {
				t.Fatalf("exit %d, stderr\n%s\nwant exit 3 and\n%s\nstdout:\n%s", r.code, r.stderr, tc.stderr, r.stdout)
			}
			if n := strings.Count(r.stdout+r.stderr, tc.cause); n != 1 {
				t.Errorf("%q said %d times, want once:\n%s%s", tc.cause, n, r.stdout, r.stderr)
			}
			if !strings.HasPrefix(r.stdout, "serving — 1 run, gates not judged (run server did not complete): ERROR\n") || strings.Contains(r.stdout, "gates:") {
				t.Errorf("the summary must say once that the gates were not judged, and list none:\n%s", r.stdout)
			}
			rep := readJSONReport(t, out)
			if rep["status"] != "error" || len(rep["gates"].([]any)) != 0 {
				t.Errorf("report status %v, gates %v", rep["status"], rep["gates"])
			}
			run := rep["runs"].(map[string]any)["server"].(map[string]any)
			if !strings.Contains(run["error"].(string), tc.cause) {
				t.Errorf("the report's run error %q lacks %q", run["error"], tc.cause)
			}

			// The summary on stderr (an output to stdout), or none at all
			// (--quiet): the cause is still said, once.
			q := tollgate(t, append([]string{"run", "examples/serving.yaml", "--json-out", "-", "-q"}, tc.args...)...)
			if q.code != ExitNotJudged || q.stderr != tc.stderr {
				t.Errorf("--json-out - -q: exit %d, stderr\n%s\nwant\n%s", q.code, q.stderr, tc.stderr)
			}
			s := tollgate(t, append([]string{"run", "examples/serving.yaml", "--json-out", "-"}, tc.args...)...)
			if n := strings.Count(s.stderr, tc.cause); s.code != ExitNotJudged || n != 1 {
				t.Errorf("--json-out -: exit %d, %q said %d times on stderr, want once:\n%s", s.code, tc.cause, n, s.stderr)
			}

			// judge of the saved report: the same, from the report.
			j := tollgate(t, append([]string{"judge", "examples/serving.yaml", out}, tc.args...)...)
			if n := strings.Count(j.stdout+j.stderr, tc.cause); j.code != ExitNotJudged || n != 1 || strings.Contains(j.stdout, "gates:") {
				t.Errorf("judge: exit %d, %q said %d times, want 3 and once:\n%s%s", j.code, tc.cause, n, j.stdout, j.stderr)
			}
		})
	}
}

// A load point whose request count is below its concurrency is said
// before anything is sent, naming the point.
func TestValidateWarnsOfAConcurrencyNoPointReaches(t *testing.T) {
	t.Parallel()
	r := tollgate(t, "validate", "examples/load-sweep.yaml", "--profile", "ci")
	want := fmt.Sprintf("warning: examples/load-sweep.yaml:%d:5: phase load:", lineOf(t, "examples/load-sweep.yaml", "    kind: load")) + " point concurrency 64 sends at most 32 requests (requests: 32), so never more than 32 are in flight"
	if r.code != ExitPass || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "concurrency 32 sends") {
		t.Fatalf("exit %d, stderr\n%s\nwant %q", r.code, r.stderr, want)
	}
	if r := tollgate(t, "validate", "examples/load-sweep.yaml"); strings.Contains(r.stderr, "sends at most") {
		t.Errorf("96 requests reach every point; stderr:\n%s", r.stderr)
	}
}

// report --baseline refuses a baseline of another scenario, as compare
// and run --baseline do, unless --baseline-any.
func TestReportBaselineOfAnotherScenario(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b, other := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"), filepath.Join(dir, "other.json")
	for _, rc := range []struct {
		out  string
		args []string
	}{{a, nil}, {b, nil}, {other, []string{"--set", "targets.route.activation_bytes=8192"}}} {
		if r := tollgate(t, append([]string{"run", example, "--no-gate", "-q", "--json-out", rc.out}, rc.args...)...); r.code != ExitPass {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
	}
	html := filepath.Join(dir, "p.html")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"the same scenario", []string{b, "--baseline", a}, ExitPass, ""},
		{"another scenario", []string{other, "--baseline", a}, ExitInvalid, "the baseline measured another scenario; it differs in:\n  targets.route.activation_bytes"},
		{"another scenario, accepted", []string{other, "--baseline", a, "--baseline-any"}, ExitPass, ""},
		{"--baseline-any alone", []string{other, "--baseline-any"}, ExitInvalid, "--baseline-any accepts a baseline from another scenario, model or host, and none is given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tollgate(t, append([]string{"report", "--html", html}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d with %q\n%s", r.code, tc.code, tc.stderr, r.stderr)
			}
		})
	}
}
