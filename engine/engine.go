// Package engine runs a loaded scenario: every run's phases against its
// target, collected into a report.
package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/engine/embedded"
	"github.com/tollgate-dev/tollgate/engine/live"
	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Options for a run.
type Options struct {
	ToolVersion string
	// Now is the wall clock for report timestamps (tests pin it).
	Now func() time.Time
	// LookupEnv resolves secrets named by the scenario (api_key_env).
	LookupEnv func(string) (string, bool)
	// OnProgress, when set, gets a live view of load phases.
	OnProgress func(live.Progress)
	// SampleSink, when set, receives every live request sample as it completes.
	SampleSink func(run string, s report.RequestSample)
	// Grace lets requests in flight finish after an interrupt (default 5s).
	Grace time.Duration
	// Shard, when set, runs this process's share of a sharded run.
	Shard *live.Shard
}

// ErrRunFailed marks a report with at least one run that could not complete.
var ErrRunFailed = errors.New("a run could not complete")

// New returns an empty report for a scenario, with every run present and
// status unset, ready for Run to fill.
func New(sc *scenarios.Scenario, opts Options) *report.Report {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	r := &report.Report{
		SchemaVersion: report.SchemaVersion,
		Tool:          report.Tool{Name: "tollgate", Version: opts.ToolVersion},
		Scenario: report.ScenarioInfo{
			Name: sc.Name, Description: sc.Description, File: sc.File, SHA256: sc.SHA256, Identity: sc.Identity, Vars: redactedVars(sc.Vars),
		},
		Host:      HostFacts(),
		StartedAt: now().UTC(),
		Runs:      map[string]*report.Run{},
		Gates:     []report.GateResult{},
	}
	for _, run := range sc.Runs {
		r.RunOrder = append(r.RunOrder, run.Name)
	}
	return r
}

// Run executes every run of the scenario in order and fills r. A run that
// fails is recorded with its error and the others still run; the returned
// error wraps ErrRunFailed, or is the context's error when interrupted.
func Run(ctx context.Context, sc *scenarios.Scenario, r *report.Report, opts Options) error {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	var failed []string
	for _, run := range sc.Runs {
		if err := ctx.Err(); err != nil {
			r.EndedAt = now().UTC()
			return err
		}
		rr, err := runOne(ctx, run, sc, opts)
		if rr == nil {
			rr = &report.Run{Phases: map[string]*report.Phase{}}
		}
		decorate(rr, run)
		switch {
		case ctx.Err() != nil:
			rr.Status, rr.Error = "incomplete", "interrupted; holds what was measured before the interrupt"
		case err != nil:
			rr.Status = "error"
			rr.Error = runRedactor(run).String(err.Error())
			failed = append(failed, run.Name+": "+rr.Error)
		}
		r.Runs[run.Name] = rr
		r.Invalid = append(r.Invalid, rr.Invalid...)
	}
	r.EndedAt = now().UTC()
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %s", ErrRunFailed, strings.Join(failed, "; "))
	}
	return nil
}

func runOne(ctx context.Context, run *scenarios.Run, sc *scenarios.Scenario, opts Options) (*report.Run, error) {
	d, err := driverOf(run)
	if err != nil {
		return nil, err
	}
	grace := opts.Grace
	if grace == 0 {
		grace = 5 * time.Second
	}
	ro := RunOptions{Samples: sc.Samples, LookupEnv: opts.LookupEnv, OnProgress: opts.OnProgress, Grace: grace, Shard: opts.Shard}
	for _, g := range sc.Gates {
		if strings.Contains(g.Expr, "session_id") {
			ro.SessionGates = append(ro.SessionGates, g.Name)
		}
	}
	if opts.SampleSink != nil {
		ro.SampleSink = func(s report.RequestSample) { opts.SampleSink(run.Name, s) }
	}
	return d.Run(ctx, run, ro)
}

func decorate(rr *report.Run, run *scenarios.Run) {
	rr.Name = run.Name
	rr.Params = map[string]string{}
	for _, p := range run.Params {
		rr.Params[p.Key] = p.Value
	}
	t := run.Target
	rr.Target.Name, rr.Target.Kind = t.Name, t.Kind
	if t.Seam != nil {
		rr.Target.Description = t.Seam.Description
		rr.Target.Config = redactedSeam(t.Seam)
	}
	if t.OpenAI != nil {
		if t.Embedded() && t.Kind == scenarios.KindOpenAI {
			// (another protocol's kind keeps its name: it says which
			// protocol ran.)
			rr.Target.Kind = scenarios.KindEmbedded
		}
		rr.Target.Description = t.OpenAI.Description
		cfg := redactedConfig(t.OpenAI)
		rr.Target.Config = cfg
		if t.Embedded() {
			// Report what the simulator really used, defaults included.
			if eff, err := embedded.Effective(t.OpenAI.Sim); err == nil {
				rr.Target.Config = struct {
					*scenarios.OpenAITarget
					Sim map[string]any `json:"sim"`
				}{cfg, eff}
			}
		}
	}
	if rr.Status == "" {
		rr.Status = "ok"
	}
	if rr.Phases == nil {
		rr.Phases = map[string]*report.Phase{}
	}
	if rr.PhaseOrder == nil {
		rr.PhaseOrder = []string{}
	}
}

// Validate runs every driver's own checks (e.g. the simulator's config):
// an error is an invalid scenario, found before anything is sent, whether
// or not gates are judged.
func Validate(sc *scenarios.Scenario) error {
	for _, run := range sc.Runs {
		d, err := driverOf(run)
		if err != nil {
			return fmt.Errorf("run %s: %w", run.Name, err)
		}
		if err := d.Validate(run); err != nil {
			return fmt.Errorf("run %s: %w", run.Name, err)
		}
	}
	return nil
}

// Warnings are what a scenario asks that will not happen as written: the
// loader's (scenarios.Scenario.Warnings), a load point whose requests are
// fewer than its concurrency, and a load phase's concurrency over the
// open-file limit (each run's report repeats these two). Each has its
// position; all are found before anything is sent.
// A shard (sh, nil when the run is whole) is warned of its own share.
func Warnings(sc *scenarios.Scenario, openFileLimit uint64, sh *live.Shard) []string {
	out := append([]string(nil), sc.Warnings...)
	seen := map[string]bool{}
	for _, run := range sc.Runs {
		if run.Target.Kind == scenarios.KindSeam {
			continue
		}
		for _, p := range run.Phases {
			ws := live.ConcurrencyWarnings(p)
			if w := live.FileLimitWarning(run, p, openFileLimit, sh); w != "" {
				ws = append(ws, w)
			}
			for _, w := range ws {
				w = fmt.Sprintf("%s: phase %s: %s", p.Pos, p.Name, w)
				if !seen[w] { // the same phase in every run of a matrix
					seen[w] = true
					out = append(out, w)
				}
			}
		}
	}
	return out
}

// CheckEnv reports every live target whose api_key_env names a variable that
// is unset or empty in lookup, each at its position: a missing key is an
// invalid invocation found before anything is sent (like ${env.X}), not a
// run that fails after other targets were measured.
func CheckEnv(sc *scenarios.Scenario, lookup func(string) (string, bool)) error {
	var list scenarios.ErrorList
	seen := map[string]bool{}
	for _, run := range sc.Runs {
		name, at, path := "", scenarios.Pos{}, "api_key_env"
		if o := run.Target.OpenAI; o != nil {
			name, at = o.APIKeyEnv, o.At("api_key_env")
		} else if s := run.Target.Seam; s.Live() {
			name, at, path = s.Endpoint.APIKeyEnv, s.Endpoint.At("api_key_env"), "endpoint.api_key_env"
		}
		if name == "" || seen[run.Target.Name] {
			continue
		}
		seen[run.Target.Name] = true
		if v, ok := lookup(name); !ok || v == "" {
			list = append(list, &scenarios.Error{Pos: at,
				Msg: fmt.Sprintf("targets.%s.%s: environment variable %s is not set (or empty); nothing was sent", run.Target.Name, path, name)})
		}
	}
	if len(list) == 0 {
		return nil
	}
	return list
}

// Shape returns a report with the shape a real run of sc will have: every
// run, phase and metric present, built by each driver from the same code
// that fills a real report. Gates are checked against it when the scenario
// loads, so a misspelt run or metric fails before anything is sent.
//
// Shape does not repeat Validate, which a caller runs first (the simulator
// checks its config by starting; once at start-up is enough).
func Shape(sc *scenarios.Scenario) (*report.Report, error) {
	r := New(sc, Options{Now: func() time.Time { return time.Time{} }})
	for _, run := range sc.Runs {
		d, err := driverOf(run)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", run.Name, err)
		}
		rr, err := d.Shape(run, sc.Samples)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", run.Name, err)
		}
		decorate(rr, run)
		r.Runs[run.Name] = rr
		r.Invalid = append(r.Invalid, rr.Invalid...)
	}
	return r, nil
}

// redactedConfig copies a live target's config with secret header values
// and the base URL's password replaced, for the report.
func redactedConfig(o *scenarios.OpenAITarget) *scenarios.OpenAITarget {
	c := *o
	c.BaseURL = redact.URL(o.BaseURL)
	if len(o.Headers) > 0 {
		c.Headers = make(map[string]string, len(o.Headers))
		for k, v := range o.Headers {
			if redact.IsSecretHeader(k, o.SecretHeaders) {
				v = redact.Value
			}
			c.Headers[k] = v
		}
	}
	return &c
}

// redactedSeam copies a seam target's config with a live endpoint's secret
// header values and base URL password replaced, for the report.
func redactedSeam(s *scenarios.SeamTarget) *scenarios.SeamTarget {
	if s.Endpoint == nil {
		return s
	}
	c, ep := *s, *s.Endpoint
	ep.BaseURL = redact.URL(ep.BaseURL)
	if len(ep.Headers) > 0 {
		ep.Headers = make(map[string]string, len(s.Endpoint.Headers))
		for k, v := range s.Endpoint.Headers {
			if redact.IsSecretHeader(k, ep.SecretHeaders) {
				v = redact.Value
			}
			ep.Headers[k] = v
		}
	}
	c.Endpoint = &ep
	return &c
}

// redactedVars copies the scenario's vars with the string values of
// secret-looking names replaced, and URL passwords in any string value:
// gates read sc.Vars, the report shows these.
func redactedVars(vars map[string]any) map[string]any {
	out := make(map[string]any, len(vars))
	for k, v := range vars {
		if str, ok := v.(string); ok {
			if redact.IsSecretName(k) {
				v = redact.Value
			} else {
				v = redact.URL(str) // vars.base_url=http://user:pw@host
			}
		}
		out[k] = v
	}
	return out
}

// runRedactor knows the secrets a run's scenario names (secret header
// values, the base URL's password), for its error message.
func runRedactor(run *scenarios.Run) *redact.Redactor {
	if s := run.Target.Seam; s.Live() {
		secrets := redact.URLSecrets(s.Endpoint.BaseURL)
		for k, v := range s.Endpoint.Headers {
			if redact.IsSecretHeader(k, s.Endpoint.SecretHeaders) {
				secrets = append(secrets, v)
			}
		}
		return redact.New(secrets...)
	}
	o := run.Target.OpenAI
	if o == nil {
		return redact.New()
	}
	secrets := redact.URLSecrets(o.BaseURL)
	for k, v := range o.Headers {
		if redact.IsSecretHeader(k, o.SecretHeaders) {
			secrets = append(secrets, v)
		}
	}
	return redact.New(secrets...)
}

// HostFacts describes the client machine.
func HostFacts() report.Host {
	h := report.Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUCores: runtime.NumCPU(), GoVersion: runtime.Version()}
	h.Hostname, _ = os.Hostname()
	h.CPUModel = cpuModel()
	return h
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// driverOf is run's target kind's entry in Drivers.
func driverOf(run *scenarios.Run) (Driver, error) {
	d, ok := Drivers()[run.Target.Kind]
	if !ok {
		return nil, fmt.Errorf("target kind %q has no driver", run.Target.Kind)
	}
	return d, nil
}
