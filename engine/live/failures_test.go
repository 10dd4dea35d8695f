package live

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/tollgate-dev/tollgate/engine/sim"
	"github.com/tollgate-dev/tollgate/internal/peertest"
)

// countless is a server that lists model "m", is ready, and counts no
// token by any method: no count_tokens, no /tokenize, and a completion
// that fails.
func countless(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			w.WriteHeader(http.StatusOK)
		case "/v1/models":
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
		case "/v1/chat/completions":
			http.Error(w, `{"error":{"message":"the backend is down"}}`, http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A run that cannot start says why in one message, its cause first.
func TestFailuresLeadWithTheirCause(t *testing.T) {
	_, simURL := startSim(t, sim.Config{DecodeStep: 0})
	closed := peertest.Refused()
	empty := countless(t)

	for _, tc := range []struct {
		name, target, phases string
		is                   []error
		want, never          []string
	}{
		{
			name:   "a model the server does not list, calibrated prompts",
			target: fmt.Sprintf("{kind: openai, base_url: %q, model: Qwen/Qwen3-8B}", simURL),
			phases: "warmup: {requests: 1}",
			is:     []error{ErrModelNotServed},
			want:   []string{`model "Qwen/Qwen3-8B" is not served at ` + simURL + " (HTTP 404)", `its /v1/models lists "tollgate-sim"`, "set targets.t.model"},
			never:  []string{"count_tokens", "tokenize", "probe", "phase warmup", "\n"},
		},
		{
			name:   "a model the server does not list, fixed prompts",
			target: fmt.Sprintf("{kind: openai, base_url: %q, model: nope}", simURL),
			phases: "decode: {max_tokens: 4, prompt: {text: hello}}",
			is:     []error{ErrModelNotServed},
			want:   []string{`model "nope" is not served`, `"tollgate-sim"`},
			never:  []string{"phase decode", "\n"},
		},
		{
			name:   "connection refused, retried for the ready timeout when it is shorter",
			target: fmt.Sprintf("{kind: openai, base_url: %q, ready_timeout: 300ms}", closed),
			phases: "decode: {}",
			is:     []error{ErrConnectionRefused, syscall.ECONNREFUSED},
			want:   []string{"connection refused at " + closed + " (retried for 300ms)"},
			never:  []string{"not ready", "deadline", "\n"},
		},
		{
			name:   "calibration impossible",
			target: fmt.Sprintf("{kind: openai, base_url: %q}", empty),
			phases: "warmup: {requests: 1}",
			is:     []error{ErrCalibration},
			want: []string{"cannot calibrate warmup #0 to 64 tokens: no way of counting tokens worked: count_tokens: ",
				"; tokenize: ", "; probe: ", "the backend is down", "prompt.calibrate: false"},
			never: []string{"openai: calibrate to", "\n"},
		},
		{
			name:   "a listed model is not blamed for the server's 404s",
			target: fmt.Sprintf("{kind: openai, base_url: %q, model: m}", empty),
			phases: "warmup: {requests: 1}",
			is:     []error{ErrCalibration},
			want:   []string{"cannot calibrate warmup #0"},
			never:  []string{"is not served"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parse(t, fmt.Sprintf("targets:\n  t: %s\nphases:\n  %s\n", tc.target, tc.phases), nil)
			_, err := runFirst(t, sc, nil)
			if err == nil {
				t.Fatal("the run must fail")
			}
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(err, %v) is false: %v", target, err)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("want %q in\n%s", w, err)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(err.Error(), n) {
					t.Errorf("%q must not be in\n%s", n, err)
				}
			}
		})
	}
}

// A refused connection fails after RefusedRetry, however long the ready
// timeout, and says how long it retried.
func TestRefusedConnectionFailsFast(t *testing.T) {
	t.Parallel() // its own simulator; it waits on the clock
	closed := peertest.Refused()
	sc := parse(t, fmt.Sprintf("targets:\n  t: {kind: openai, base_url: %q, ready_timeout: 10m}\nphases:\n  decode: {}\n", closed), nil)
	_, err := runFirst(t, sc, nil) // runFirst's context ends after 60 s: a 10 m wait would fail with it
	if !errors.Is(err, ErrConnectionRefused) || !strings.Contains(err.Error(), fmt.Sprintf("(retried for %s)", RefusedRetry)) {
		t.Fatalf("err %v, want connection refused, retried for %s", err, RefusedRetry)
	}
}
