package live

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// A run that cannot start says why in one message, its cause first: the
// address refuses connections, the model is not served, the prompts
// cannot be calibrated. Each is a run error (exit 3).

// RefusedRetry is how long a target whose address refuses connections is
// retried before the run fails, whatever its ready_timeout: a server that
// answers at all (503 while its model loads) is waited on for the whole
// ready_timeout, but nothing listening is usually a wrong address or a
// server that is not running, and waiting two minutes to say so helps
// nobody. A server that binds its port only once its model has loaded
// (vLLM, SGLang) is waited for before tollgate runs.
const RefusedRetry = 10 * time.Second

// ErrConnectionRefused marks a target whose address refused every
// connection for RefusedRetry (or its shorter ready_timeout).
var ErrConnectionRefused = errors.New("connection refused")

// ErrModelNotServed marks a request refused because the model it names
// is not one the server lists.
var ErrModelNotServed = errors.New("model not served")

// causeError is a failure said in its own words, with what it was
// diagnosed from kept for errors.Is and errors.As, not printed.
type causeError struct {
	msg   string
	kind  error // ErrConnectionRefused, ErrModelNotServed, …
	cause error
}

func (e *causeError) Error() string   { return e.msg }
func (e *causeError) Unwrap() []error { return []error{e.kind, e.cause} }

// waitReady waits for the target: refused connections for RefusedRetry at
// most, any other failure (a 503 while the model loads, a timeout) for the
// whole ready_timeout.
func waitReady(ctx context.Context, client measure.Client, cfg *scenarios.OpenAITarget, baseURL string) error {
	start := time.Now()
	full := cfg.ReadyTimeout.Duration
	first := min(full, RefusedRetry)
	err := client.WaitReady(ctx, start.Add(first))
	waited := first
	if err != nil && first < full && !refused(err) && !errors.Is(err, measure.ErrCredentialsRefused) && ctx.Err() == nil {
		err, waited = client.WaitReady(ctx, start.Add(full)), full
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, measure.ErrCredentialsRefused):
		return fmt.Errorf("target refused the credentials: %w", err)
	case ctx.Err() == nil && refused(err):
		return &causeError{kind: ErrConnectionRefused, cause: err,
			msg: fmt.Sprintf("connection refused at %s (retried for %s): nothing listens there; check base_url, or start the server (and let it listen) before tollgate runs",
				redact.URL(baseURL), waited)}
	}
	return fmt.Errorf("target not ready within %s: %w", full, err)
}

// refused reports whether err is a connection refused by its address.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// maxModelsShown bounds the model ids a message lists: a gateway may serve
// hundreds.
const maxModelsShown = 10

// refusedModel matches the answers a server gives a request for a model it
// does not have (vLLM, Ollama and OpenAI: 404; LiteLLM, SGLang: 400). The
// token-counting endpoints' errors carry their status only in their text.
var refusedModel = regexp.MustCompile(`\bHTTP (400|404)\b`)

// unservedModel is the run's error when a phase failed on a request the
// server refused (400 or 404) for a model the scenario named and the
// server's /v1/models does not list; nil otherwise (the phase's own error
// stands). A server that serves a model under an alias it does not list
// (Ollama's "llama3" for "llama3:latest") answers it, so nothing is
// checked until something failed.
func (r *runner) unservedModel(ctx context.Context, client measure.Client, err error) error {
	if r.out.Target.ModelSource != "scenario" || ctx.Err() != nil || errors.Is(err, ErrConnectionRefused) {
		return nil
	}
	status := 0
	if e, ok := errors.AsType[*measure.Error](err); ok && (e.Status == 400 || e.Status == 404) {
		status = e.Status
	} else if m := refusedModel.FindStringSubmatch(err.Error()); m != nil {
		status = map[string]int{"400": 400, "404": 404}[m[1]]
	}
	if status == 0 {
		return nil
	}
	ids, lerr := client.Models(ctx)
	if lerr != nil || len(ids) == 0 || slices.Contains(ids, r.model) {
		return nil
	}
	listed := make([]string, 0, maxModelsShown+1)
	for i, id := range ids {
		if i == maxModelsShown {
			listed = append(listed, fmt.Sprintf("… and %d more", len(ids)-maxModelsShown))
			break
		}
		listed = append(listed, fmt.Sprintf("%q", id))
	}
	return &causeError{kind: ErrModelNotServed, cause: err,
		msg: fmt.Sprintf("model %q is not served at %s (HTTP %d): its /v1/models lists %s; set targets.%s.model to one of them, or leave it empty for the first",
			r.model, r.out.Target.BaseURL, status, strings.Join(listed, ", "), r.run.Target.Name)}
}

// calibrationError says why the prompts of what could not be calibrated
// to target tokens, in one message: each way of counting tokens the
// server was asked, and what it answered.
func calibrationError(what string, target int, err error) error {
	why := oneLine(err.Error())
	if j, ok := errors.AsType[interface {
		error
		Unwrap() []error
	}](err); ok {
		// transport.CountTokens: one error per method it tried.
		var each []string
		for _, e := range j.Unwrap() {
			each = append(each, oneLine(e.Error()))
		}
		why = "no way of counting tokens worked: " + strings.Join(each, "; ")
	}
	return &causeError{kind: ErrCalibration, cause: err,
		msg: fmt.Sprintf("cannot calibrate %s to %d tokens: %s (prompt.calibrate: false sizes prompts by word count instead)", what, target, why)}
}

// ErrCalibration marks prompts that could not be calibrated: the server
// gave no token count by any method.
var ErrCalibration = errors.New("calibration impossible")

// oneLine folds a multi-line error (an errors.Join) onto one line.
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}
