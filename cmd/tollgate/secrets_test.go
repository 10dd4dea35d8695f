package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/peertest"
)

// Every place a user can put a secret, each holding a distinct one.
var planted = map[string]string{
	"api key (env)":        "sk-plant-apikey-1111aaaa",
	"base_url password":    "plant-urlpass-2222",
	"base_url query token": "plant-querytoken-3333",
	"secret header":        "plant-tenant-4444",
	"authorization header": "plant-bearer-5555",
	"cookie header":        "plant-cookie-6666",
	"secret-named var":     "plant-vartoken-7777",
	"password var":         "plant-varpass-8888",
}

// hostileServer answers every request with status and a body that echoes
// the request's headers and URL back, as some gateways do.
func hostileServer(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		fmt.Fprintf(&b, "you sent %s ", r.URL.String())
		for k, v := range r.Header {
			fmt.Fprintf(&b, "%s=%s ", k, strings.Join(v, ","))
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"message":` + fmt.Sprintf("%q", b.String()) + `}}`))
	}
}

// A distinct secret planted in every place a user can put one appears in no
// output of any command, on success and on every error path: a server that
// answers 401 echoing the request (to the readiness probe, or only to the
// requests), one that is not listening, one whose
// certificate is not trusted, one that redirects to another origin (which
// must receive no credential), and the embedded simulator.
func TestPlantedSecretsLeakNowhere(t *testing.T) {
	t.Parallel()
	unauthorized := httptest.NewServer(hostileServer(http.StatusUnauthorized))
	defer unauthorized.Close()
	unauthorizedRequests := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return // ready; only the requests are refused
		}
		hostileServer(http.StatusUnauthorized)(w, r)
	}))
	defer unauthorizedRequests.Close()
	badCA := httptest.NewUnstartedServer(hostileServer(http.StatusOK))
	badCA.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
	badCA.StartTLS()
	defer badCA.Close()
	var (
		mu       sync.Mutex
		received []string // everything the other origin was sent
	)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = append(received, r.URL.String())
		for k, v := range r.Header {
			received = append(received, k+"="+strings.Join(v, ","))
		}
		mu.Unlock()
		hostileServer(http.StatusOK)(w, r)
	}))
	defer other.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return // ready
		}
		http.Redirect(w, r, other.URL+r.URL.Path+"?"+r.URL.RawQuery, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	refused := peertest.Refused()

	for _, tc := range []struct {
		name, base string
		wantExit   int
		wantText   string // in stdout+stderr: proves the path was taken
	}{
		{name: "embedded simulator", base: "", wantExit: ExitGateFailed, wantText: "http_status"},
		{name: "401 echoing the request", base: unauthorized.URL, wantExit: ExitNotJudged, wantText: "refused the credentials"},
		{name: "401 on every request, echoing it", base: unauthorizedRequests.URL, wantExit: ExitGateFailed, wantText: "401"},
		{name: "connection refused", base: refused, wantExit: ExitNotJudged, wantText: "connection refused at"},
		{name: "untrusted certificate", base: badCA.URL, wantExit: ExitNotJudged, wantText: "certificate"},
		{name: "redirect to another origin", base: redirector.URL, wantExit: ExitGateFailed, wantText: "redirect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			scenario := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(scenario, []byte(plantedScenario(tc.base)), 0o644); err != nil {
				t.Fatal(err)
			}
			outputs := map[string]string{}
			files := map[string]string{}
			for _, f := range []string{"r.json", "r.html", "j.xml", "m.md", "c.csv", "s.jsonl"} {
				files[f] = filepath.Join(dir, f)
			}
			env := append(os.Environ(), "TOLLGATE_PLANT_KEY="+planted["api key (env)"], "GITHUB_ACTIONS=true")
			exit, out := runBinary(t, env, "run", scenario, "--json-out", files["r.json"], "--html", files["r.html"],
				"--junit", files["j.xml"], "--markdown", files["m.md"], "--csv", files["c.csv"], "--samples-out", files["s.jsonl"])
			outputs["run"] = out
			if exit != tc.wantExit || !strings.Contains(out, tc.wantText) {
				t.Fatalf("run exit %d (want %d), want %q in its output:\n%s", exit, tc.wantExit, tc.wantText, out)
			}
			for name, path := range files {
				b, err := os.ReadFile(path)
				if err != nil {
					if name == "s.jsonl" || name == "c.csv" {
						continue // a run that never sent keeps no samples
					}
					t.Fatalf("%s: %v", name, err)
				}
				outputs[name] = string(b)
			}
			_, outputs["validate"] = runBinary(t, env, "validate", scenario)
			_, outputs["validate --print"] = runBinary(t, env, "validate", "--print", scenario)
			_, outputs["compare"] = runBinary(t, env, "compare", files["r.json"], files["r.json"], "--fail-on", "ttft_ms.p50:+10%")
			rendered := filepath.Join(dir, "again.html")
			_, outputs["report"] = runBinary(t, env, "report", files["r.json"], "--html", rendered, "--markdown", "-", "--junit", "-")
			if b, err := os.ReadFile(rendered); err == nil {
				outputs["report --html"] = string(b)
			}
			// Without the key in the environment: the missing-key error path.
			_, outputs["run without the key"] = runBinary(t, nil, "run", scenario)
			for name, text := range outputs {
				for where, secret := range planted {
					if strings.Contains(text, secret) {
						t.Errorf("%s leaks the %s", name, where)
					}
				}
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	for _, got := range received {
		for where, secret := range planted {
			if strings.Contains(got, secret) {
				t.Errorf("the other origin of a redirect was sent the %s", where)
			}
		}
	}
}

// plantedScenario targets base ("" for the embedded simulator, whose
// unknown model fails every request) with every secret planted.
func plantedScenario(base string) string {
	target := "kind: embedded\n    model: no-such-model\n    sim: {decode_step: 1ms}"
	if base != "" {
		u, _ := url.Parse(base)
		u.User = url.UserPassword("me", planted["base_url password"])
		u.RawQuery = "api_key=" + planted["base_url query token"]
		target = fmt.Sprintf("kind: openai\n    base_url: %q\n    model: m\n    metrics: false\n    metadata: false\n    ready_timeout: 1s", u.String())
	}
	return fmt.Sprintf(`vars:
  session_token: %s
  db_password: %s
targets:
  s:
    %s
    api_key_env: TOLLGATE_PLANT_KEY
    headers: {X-Tenant: %s, X-Auth: "Bearer %s", Cookie: "sid=%s", X-Session: "${vars.session_token}", X-Db: "${vars.db_password}"}
    secret_headers: [X-Tenant, X-Auth, X-Session, X-Db]
phases:
  decode: {prompt: {text: hello}, max_tokens: 2, repeat: 2, max_error_rate: 1}
gates:
  - name: no errors
    expr: runs.s.phases.decode.errors.count == 0
`, planted["secret-named var"], planted["password var"], target,
		planted["secret header"], planted["authorization header"], planted["cookie header"])
}

// runBinary runs the tollgate binary with env (nil: the environment without
// the planted key) and returns its exit code and its stdout and stderr.
func runBinary(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if env == nil {
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "TOLLGATE_PLANT_KEY=") {
				env = append(env, kv)
			}
		}
	}
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("%v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}
