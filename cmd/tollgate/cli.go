package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/engine/live"
	"github.com/tollgate-dev/tollgate/gates"
	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/annotations"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/report/markdown"
	"github.com/tollgate-dev/tollgate/report/text"
	"github.com/tollgate-dev/tollgate/report/view"
	"github.com/tollgate-dev/tollgate/scenarios"
	"github.com/tollgate-dev/tollgate/schema"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func toolVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

const usage = `tollgate: declarative performance scenarios for LLM serving, gated in CI.

Usage:
  tollgate run SCENARIO [flags]       run a scenario, write the report, judge the gates
  tollgate validate SCENARIO...       load, validate and compile gates; sends nothing
  tollgate schema scenario|report     print a JSON Schema
  tollgate serve [--addr HOST:PORT]   run the embedded OpenAI-compatible simulator alone
  tollgate compare OLD.json NEW.json  compare two reports metric by metric, with noise
  tollgate report REPORT.json --html PATH   render a saved report (with --baseline OLD.json)
  tollgate judge SCENARIO REPORT.json judge a saved report again with the scenario's gates
  tollgate merge SHARD.json... --json-out PATH   merge the reports of run --shard I/N exactly
  tollgate version                    print the version
  tollgate help [COMMAND]             show help

Exit codes:
  0  ran; every gate passed
  1  ran; at least one gate failed
  2  invalid invocation or scenario; nothing was sent
  3  the run could not complete or be judged (target unreachable, a run failed, a gate errored)
  4  inconclusive: a gate's no_regression (or compare's --fail-on) could not tell a change from noise; 0 with --accept-inconclusive
  130 interrupted; a partial report was written and marked incomplete

Run 'tollgate help run' for the flags of run.
`

// Main is the whole CLI, minus os.Exit, so tests can call it in-process too.
// It prints a command's error once and maps it to the exit code once.
func Main(args []string, stdout, stderr io.Writer) int {
	// Errors may quote a URL given on the command line or in a scenario;
	// none prints its password.
	stderr = redact.New().Writer(stderr)
	if len(args) == 0 {
		return exit(stderr, "tollgate", invalid(bare(errors.New(strings.TrimSuffix(usage, "\n")))))
	}
	return exit(stderr, "tollgate "+args[0], dispatch(args, stdout, stderr))
}

// commands are the subcommands, by name.
var commands = map[string]func(args []string, stdout, stderr io.Writer) error{
	"run":      cmdRun,
	"validate": cmdValidate,
	"schema":   cmdSchema,
	"serve":    cmdServe,
	"compare":  cmdCompare,
	"report":   cmdReport,
	"judge":    cmdJudge,
	"merge":    cmdMerge,
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if cmd, ok := commands[args[0]]; ok {
		return cmd(args[1:], stdout, stderr)
	}
	switch args[0] {
	case "version", "--version":
		fmt.Fprintf(stdout, "tollgate %s\n", toolVersion())
		return nil
	case "help", "-h", "--help":
		if len(args) == 1 {
			fmt.Fprint(stdout, usage)
			return nil
		}
		text, ok := help(args[1], stderr)
		if !ok {
			return invalid(bare(fmt.Errorf("tollgate help: unknown command %q\n\n%s", args[1], strings.TrimSuffix(usage, "\n"))))
		}
		fmt.Fprint(stdout, text)
		return nil
	}
	return invalid(bare(fmt.Errorf("tollgate: unknown command %q\n\n%s", args[0], strings.TrimSuffix(usage, "\n"))))
}

// help is the help of a command, false for one there is none of.
func help(cmd string, stderr io.Writer) (string, bool) {
	switch cmd {
	case "run":
		fs, _ := runFlags(stderr)
		return fmt.Sprintf("Usage: tollgate run SCENARIO [flags]\n\nFlags:\n%s\n%s", fs.FlagUsages(), runOutputsHelp), true
	case "validate":
		fs, _ := validateFlags(stderr)
		return fmt.Sprintf("Usage: tollgate validate SCENARIO... [flags]\n\nFlags:\n%s", fs.FlagUsages()), true
	case "serve":
		fs, _ := serveFlags(stderr)
		return fmt.Sprintf("Usage: tollgate serve [flags]\n\nFlags:\n%s", fs.FlagUsages()), true
	case "compare":
		fs, _ := compareFlags(stderr)
		return compareUsage + fs.FlagUsages(), true
	case "report":
		fs, _ := reportFlags(stderr)
		return reportUsage + fs.FlagUsages(), true
	case "judge":
		fs, _ := judgeFlags(stderr)
		return judgeUsage + fs.FlagUsages(), true
	case "merge":
		fs, _, _ := mergeFlags(stderr)
		return mergeUsage + fs.FlagUsages(), true
	}
	return "", false
}

// parseFlags parses a command's flags: helpShown after --help, an invalid
// invocation (with hint, if any, on the next line) for a bad flag.
func parseFlags(fs *pflag.FlagSet, args []string, hint string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pflag.ErrHelp):
		return helpShown
	case hint != "":
		return invalid(fmt.Errorf("%w\n%s", err, hint))
	}
	return invalid(err)
}

const runOutputsHelp = `Outputs:
  Each output path is checked before anything is sent: one that cannot be
  written, that is empty (--json-out=), that names the scenario file or the
  baseline, or that two outputs share, exits 2. Missing parent
  directories are made (out/ in a fresh checkout). "-" writes --json-out,
  --junit, --markdown or --csv to standard output (one of them at most);
  the text summary, the "wrote" lines and GitHub annotations then go to
  standard error. An output that cannot be written is named on stderr and
  the exit code is at least 3 (1 when a gate failed).

Remote write:
  --remote-write URL pushes the report's figures as Prometheus series
  (remote-write 1.0) after every file is written, timed at the run's end;
  docs/report.md ("Prometheus series") lists them. Headers come from
  $TOLLGATE_REMOTE_WRITE_HEADERS (name=value pairs, comma-separated,
  values percent-encoded, as OTEL_EXPORTER_OTLP_HEADERS), basic auth from
  $TOLLGATE_REMOTE_WRITE_USERNAME and $TOLLGATE_REMOTE_WRITE_PASSWORD;
  no value of theirs is ever shown. A push is tried up to 3 times (after a
  connection error, a 5xx or a 429) within --remote-write-timeout (30s).
  One that fails is said on stderr and exits 3 (1 when a gate failed):
  the report and the verdict stand. A bad URL, label or header exits 2
  before anything is sent.
`

type runOptions struct {
	out             *outputs
	noGate          bool
	sets            []string
	vars            []string
	profile         string
	quiet           bool
	samplesOut      string
	baseline        string
	baselineAny     bool
	requireBaseline bool
	// acceptInconclusive: --accept-inconclusive.
	acceptInconclusive bool
	repeatRuns         int
	shard              shardOptions
	allowOutside       []string
	remote             *remoteWriteOptions
}

// maxRepeatRuns bounds --repeat-runs: every repetition is kept in memory
// until the last one is summarised.
const maxRepeatRuns = 100

func runFlags(stderr io.Writer) (*pflag.FlagSet, *runOptions) {
	o := &runOptions{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o.out = addOutputFlags(fs, true)
	fs.BoolVar(&o.noGate, "no-gate", false, "measure and report without judging the gates")
	fs.StringArrayVar(&o.sets, "set", nil, "override a scenario value: `PATH=VALUE`, VALUE parsed as YAML (repeatable), e.g. --set targets.route.activation_bytes=8192")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "print nothing on stdout and no progress; errors still go to stderr")
	fs.StringVar(&o.samplesOut, "samples-out", "", "stream every live request sample to `PATH` as JSON lines, written out at least every second and on every signal (with report.samples: false the run keeps none in memory)")
	o.out.extra["--samples-out"] = &o.samplesOut
	fs.StringArrayVar(&o.vars, "var", nil, "set a scenario var: `NAME=VALUE` (repeatable; applied after the file and profile, before --set)")
	fs.StringVar(&o.profile, "profile", "", "apply the scenario's profile `NAME` (e.g. ci, nightly)")
	addAllowOutsideFlag(fs, &o.allowOutside)
	addBaselineFlags(fs, &o.baseline, &o.baselineAny, &o.requireBaseline, &o.acceptInconclusive)
	addShardFlags(fs, &o.shard)
	fs.IntVar(&o.repeatRuns, "repeat-runs", 1, "run the whole scenario `N` times; the report keeps the last run and, under repetitions, every figure's mean, median and cv across the N (gates may read repetitions.runs.….median)")
	o.remote = addRemoteWriteFlags(fs)
	return fs, o
}

type validateOptions struct {
	load  loadOptions
	print bool
}

func validateFlags(stderr io.Writer) (*pflag.FlagSet, *validateOptions) {
	o := &validateOptions{}
	fs := pflag.NewFlagSet("validate", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringArrayVar(&o.load.sets, "set", nil, "override a scenario value: `PATH=VALUE` (repeatable)")
	fs.StringArrayVar(&o.load.vars, "var", nil, "set a scenario var: `NAME=VALUE` (repeatable)")
	fs.StringVar(&o.load.profile, "profile", "", "apply the scenario's profile `NAME`")
	addAllowOutsideFlag(fs, &o.load.allowOutside)
	fs.BoolVar(&o.print, "print", false, "print the effective scenario (includes, profile, vars and --set applied; secrets redacted)")
	fs.IntVar(&o.load.repeatRuns, "repeat-runs", 1, "check the gates as for run --repeat-runs `N` (they may read repetitions)")
	return fs, o
}

// loadOptions are the flags that change what a scenario file means.
type loadOptions struct {
	sets, vars []string
	profile    string
	// repeatRuns > 1 gives the gates' shape a repetitions tree, as a run
	// with --repeat-runs writes.
	repeatRuns int
	// allowOutside: --allow-outside.
	allowOutside []string
	// shard, when the run is one, sizes the open-file warning to its share.
	shard *live.Shard
}

// addAllowOutsideFlag adds --allow-outside. The opt-in is a flag, not a
// scenario key: the person who runs a scenario decides what it may read,
// so a scenario (from a pull request, from another team's repository)
// cannot grant itself a runner's files.
func addAllowOutsideFlag(fs *pflag.FlagSet, dirs *[]string) {
	fs.StringArrayVar(dirs, "allow-outside", nil, "let the scenario's includes, datasets, traces and prompt files resolve into `DIR`, outside the scenario file's directory tree (repeatable)")
}

// prepared is a scenario that loaded and whose gates compiled.
type prepared struct {
	sc    *scenarios.Scenario
	gates *gates.Set
}

// prepare loads a scenario and compiles its gates against the report shape
// and, for baseline, the baseline's (the report's own shape when there is
// none: gates that read it are checked all the same, and skipped when
// judged). The error, an invalid scenario, has every problem with its
// position.
func prepare(path string, lo loadOptions, compileGates bool, baseline map[string]any, stderr io.Writer) (*prepared, error) {
	sc, err := scenarios.Load(path, scenarios.Options{Sets: lo.sets, Vars: lo.vars, Profile: lo.profile, LookupEnv: os.LookupEnv, AllowOutside: lo.allowOutside})
	if err != nil {
		return nil, loadError(err)
	}
	p := &prepared{sc: sc, gates: &gates.Set{}}
	// The drivers' own checks hold whether or not gates are judged.
	if err := engine.Validate(sc); err != nil {
		return nil, scenarioError(path, err)
	}
	if err := engine.CheckEnv(sc, os.LookupEnv); err != nil {
		return nil, loadError(err)
	}
	for _, w := range engine.Warnings(sc, live.ProcessFileLimit(), lo.shard) {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if !compileGates {
		return p, nil
	}
	shape, err := engine.Shape(sc)
	if err != nil {
		return nil, scenarioError(path, err)
	}
	if lo.repeatRuns > 1 {
		// The repetitions tree has the keys of runs: two copies of the
		// shape give it.
		if shape.Repetitions, err = fold.Repeat([]*report.Report{shape, shape}); err != nil {
			return nil, scenarioError(path, err)
		}
	}
	env, err := gates.Env(shape, sc.Vars)
	if err != nil {
		return nil, scenarioError(path, err)
	}
	if baseline == nil {
		baseline = gates.BaselineOf(env)
	}
	env["baseline"] = baseline
	set, problems := gates.Compile(gateSpecs(sc), env)
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, pr := range problems {
			errs[i] = pr
		}
		return nil, bare(errors.Join(errs...)) // gates.Problem: invalid
	}
	p.gates = set
	return p, nil
}

// scenarioError is a scenario the engine refuses, named by its file.
func scenarioError(path string, err error) error {
	return invalid(bare(fmt.Errorf("%s: %w", path, err)))
}

// loadError is a scenario that did not load: each problem on its line,
// with their count when there are several (scenarios.ErrorList: invalid).
func loadError(err error) error {
	if list, ok := errors.AsType[scenarios.ErrorList](err); ok && len(list) > 1 {
		err = fmt.Errorf("%w\n%d problems", err, len(list))
	}
	return bare(err)
}

func gateSpecs(sc *scenarios.Scenario) []gates.Spec {
	out := make([]gates.Spec, 0, len(sc.Gates))
	for _, g := range sc.Gates {
		p := gates.Position{File: g.ExprPos.File, Line: g.ExprPos.Line, Col: g.ExprPos.Col,
			Block: g.ExprBlock, Indent: g.ExprIndent, Quoted: g.ExprQuoted}
		if g.ExprPos.Set != "" {
			p.Where = g.ExprPos.String()
		}
		out = append(out, gates.Spec{Name: g.Name, Expr: g.Expr, Description: g.Description, Optional: g.Optional, Pos: p})
	}
	return out
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs, o := runFlags(stderr)
	if err := parseFlags(fs, args, "run 'tollgate help run' for the flags"); err != nil {
		return err
	}
	r, err := o.setUp(fs, stderr)
	if err != nil {
		return err
	}
	samples, err := openSamples(o.samplesOut)
	if err != nil {
		return invalid(fmt.Errorf("--samples-out: %w", err))
	}
	// GitHub workflow commands are for the runner, not the reader: they go
	// out even with --quiet. An output given "-" owns stdout: the summary
	// and the workflow commands then go to stderr, so that stdout can be
	// piped into a parser.
	dataStdout, ciStdout := stdout, stdout
	if o.out.toStdout() {
		stdout, ciStdout = stderr, stderr
	}
	if o.quiet {
		stdout = io.Discard
	}

	ctx, stop := signalContext(stderr, samples)
	defer stop()
	if !o.quiet {
		// Said once the signals are tollgate's to handle: a harness (or a
		// test) that waits for this line may interrupt the run from here.
		fmt.Fprintf(stderr, "tollgate: running %s; an interrupt (SIGINT or SIGTERM) stops it and writes the partial report\n", r.path)
	}

	opts := engine.Options{ToolVersion: toolVersion(), LookupEnv: os.LookupEnv, Shard: r.shard}
	if samples != nil {
		opts.SampleSink = samples.write
	}
	var pl *progressLine
	if !o.quiet && isTerminal(os.Stderr) {
		pl = newProgressLine(stderr)
		opts.OnProgress = pl.update
	}
	rep, runErr := runRepeated(ctx, r.p.sc, opts, o.repeatRuns, stderr, o.quiet)
	stopped := ctx.Err() != nil
	if pl != nil {
		pl.finish()
	}

	if r.shard != nil {
		rep.Shard = r.shard.Info(hostname())
		if l := rep.Shard.StartLatenessMS; l != nil && *l > 0 {
			fmt.Fprintf(stderr, "warning: shard %d/%d began its first load point %.1f ms after --start-at %s\n", r.shard.Index, r.shard.Count, *l, o.shard.startAt)
		}
	}
	// Every error from here on is printed, each on its line, once the
	// outputs are written; the verdict decides the exit code.
	verdict, errs := judge(rep, r, o, runErr == nil, stopped)
	if runErr != nil && !stopped {
		if errors.Is(runErr, engine.ErrRunFailed) {
			// Said once, from the report, each cause on its line.
			errs = append(errs, runFailures(rep, runPrefix(runErr))...)
		} else {
			errs = append(errs, runErr)
		}
	}
	rep.Status, _ = gates.Verdict(verdict)

	// Every output is attempted even when one fails: what was measured is
	// kept wherever it can be.
	if failed := writeOutputs(rep, r.base, o.out, placesOf(r.path, r.p.sc), outStreams{summary: stdout, data: dataStdout, ci: ciStdout}); len(failed) > 0 {
		errs = append(errs, failed...)
		verdict.OutputFailed = true
	}
	if err := samples.close(); err != nil {
		errs = append(errs, fmt.Errorf("--samples-out %s: %w", o.samplesOut, err))
		verdict.OutputFailed = true
	}
	// The series go last: a receiver that never answers cannot keep a
	// file from being written.
	if ctx.Err() != nil {
		errs = append(errs, o.remote.skipped())
	} else if err := o.remote.push(ctx, rep, stdout); err != nil {
		errs = append(errs, err)
		verdict.OutputFailed = true
	}
	if ctx.Err() != nil {
		// Interrupted, or a signal while the outputs were written: they
		// were finished, and the exit code still says the run was.
		return interrupted(lines(errs...))
	}
	_, code := gates.Verdict(verdict)
	return withCode(code, lines(append(errs, undecided(rep, code))...))
}

// runSetup is what run checked and prepared before anything is sent.
type runSetup struct {
	path    string
	p       *prepared
	base    *report.Report
	baseEnv map[string]any
	shard   *live.Shard
}

// setUp checks everything run can before it sends anything: the scenario
// and its gates, the baseline, the shard and every output path. Each
// problem is an invalid invocation.
func (o *runOptions) setUp(fs *pflag.FlagSet, stderr io.Writer) (*runSetup, error) {
	if fs.NArg() != 1 {
		return nil, invalid(fmt.Errorf("expected one SCENARIO file, got %d arguments", fs.NArg()))
	}
	r := &runSetup{path: fs.Arg(0)}
	if o.repeatRuns < 1 || o.repeatRuns > maxRepeatRuns {
		return nil, invalid(fmt.Errorf("--repeat-runs %d: want 1 to %d", o.repeatRuns, maxRepeatRuns))
	}
	if err := o.remote.resolve(fs, os.LookupEnv); err != nil {
		return nil, err // invalid
	}
	lo := loadOptions{sets: o.sets, vars: o.vars, profile: o.profile, repeatRuns: o.repeatRuns, allowOutside: o.allowOutside}
	var err error
	if r.base, r.baseEnv, err = openBaseline(o.baseline, o.requireBaseline, o.baselineAny, stderr, scenarioShape(r.path, lo)); err != nil {
		return nil, invalid(err)
	}
	if r.shard, err = o.shard.resolve(os.LookupEnv, stderr); err != nil {
		return nil, err // errShard: invalid
	}
	if r.shard != nil {
		o.noGate = true // a shard measures part of the load: the merge is judged
		if o.remote.url != "" {
			return nil, invalid(errors.New("--remote-write with --shard: a shard measures part of the load, and every shard would write the same series; push from tollgate merge (or judge) instead"))
		}
	}
	lo.shard = r.shard
	if r.p, err = prepare(r.path, lo, !o.noGate, r.baseEnv, stderr); err != nil {
		return nil, err
	}
	if r.shard != nil {
		if err := checkShardable(r.p.sc, r.shard, o.repeatRuns); err != nil {
			return nil, err // errShard: invalid
		}
	}
	if r.base != nil {
		// Before anything is sent: the same scenario and host hardware.
		if err := baselineComparable(r.base, engine.New(r.p.sc, engine.Options{}), o.baselineAny); err != nil {
			return nil, invalid(fmt.Errorf("--baseline %s: %w", o.baseline, err))
		}
	}
	if err := o.out.check(fs, map[string]string{"scenario file": r.path, "baseline": o.baseline}); err != nil {
		return nil, err // errOutputs: invalid
	}
	if o.out.path("vllm-out") != "" {
		shape, err := engine.Shape(r.p.sc)
		if err == nil {
			err = o.out.checkVLLM(shape, r.path)
		}
		if err != nil {
			return nil, invalid(err)
		}
	}
	if o.out.path("csv") != "" && !r.p.sc.Samples {
		// The CSV is the samples; refused now rather than after the run.
		return nil, invalid(fmt.Errorf("--csv: %s has report.samples: false, so the report keeps no per-request rows to write; "+
			"turn samples on, or stream them with --samples-out", r.path))
	}
	return r, nil
}

// runRepeated runs the scenario n times and returns the last report, with
// the repetitions summarised when at least two completed. It stops at the
// first repetition that fails or is interrupted: a broken run is not noise.
func runRepeated(ctx context.Context, sc *scenarios.Scenario, opts engine.Options, n int, stderr io.Writer, quiet bool) (*report.Report, error) {
	var done []*report.Report
	for i := 1; ; i++ {
		if n > 1 && !quiet {
			fmt.Fprintf(stderr, "repetition %d of %d\n", i, n)
		}
		rep := engine.New(sc, opts)
		err := engine.Run(ctx, sc, rep, opts)
		if err == nil && ctx.Err() == nil {
			done = append(done, rep)
		}
		if err != nil || ctx.Err() != nil || i == n {
			if len(done) >= 2 {
				r, rerr := fold.Repeat(done)
				if rerr != nil {
					return rep, errors.Join(err, rerr)
				}
				rep.Repetitions = r
			}
			if err != nil && n > 1 {
				err = &repetitionError{fmt.Sprintf("repetition %d of %d", i, n), err}
			}
			return rep, err
		}
		// Only the last repetition's samples are written with the report.
		for _, run := range rep.Runs {
			for _, ph := range run.Phases {
				ph.Samples = nil
			}
		}
	}
}

// repetitionError is the error of the repetition that stopped a repeated
// run, named.
type repetitionError struct {
	which string // "repetition 2 of 3"
	err   error
}

func (e *repetitionError) Error() string { return e.which + ": " + e.err.Error() }
func (e *repetitionError) Unwrap() error { return e.err }

// runPrefix is what names the part of a repeated run that failed ("" when
// the run was not repeated).
func runPrefix(err error) string {
	if e, ok := errors.AsType[*repetitionError](err); ok {
		return e.which + ": "
	}
	return ""
}

// runFailures says why the runs of rep that failed did not complete, one
// error per cause: runs that failed alike (a matrix against one server
// that is down) share one line. The summary does not repeat them.
func runFailures(rep *report.Report, prefix string) []error {
	var causes []string
	runs := map[string][]string{}
	for _, run := range view.FailedRuns(rep) {
		if runs[run.Error] == nil {
			causes = append(causes, run.Error)
		}
		runs[run.Error] = append(runs[run.Error], run.Name)
	}
	errs := make([]error, 0, len(causes))
	for _, cause := range causes {
		names := runs[cause]
		which := "run " + names[0]
		if len(names) > 1 {
			which = "runs " + strings.Join(names, ", ")
		}
		errs = append(errs, fmt.Errorf("%s%s did not complete: %s", prefix, which, cause))
	}
	return errs
}

// outStreams are where a command's outputs go: the summary, outputs given
// "-", and GitHub workflow commands.
type outStreams struct{ summary, data, ci io.Writer }

// writeOutputs writes everything a judged report goes to (the summary,
// every output flag, the CI step summary and annotations), attempting each
// even when one fails, and returns what could not be written, one error
// each. A report that fails its schema is an output failure even when no
// JSON file was asked for; --json-out then says so itself, and keeps it as
// PATH.invalid.json.
func writeOutputs(rep, base *report.Report, out *outputs, at annotations.Places, w outStreams) []error {
	var errs []error
	// Another tool's result was checked as it was read (report/foreign),
	// and is never written as a tollgate report: no host to validate.
	if _, err := report.Marshal(rep); err != nil && out.path("json-out") == "" && rep.Imported == nil {
		errs = append(errs, err)
	}
	if err := text.Summary(w.summary, rep); err != nil {
		errs = append(errs, fmt.Errorf("writing summary: %w", err))
	}
	if err := out.write(rep, base, w.data, w.summary); err != nil {
		errs = append(errs, err)
	}
	if err := ciOutputs(rep, at, w.ci); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// judge evaluates the gates over a finished run (unless interrupted or
// --no-gate) and returns what the verdict policy needs, and why the gates
// could not be judged, if they could not (one error each).
func judge(rep *report.Report, r *runSetup, o *runOptions, completed, stopped bool) (gates.Outcome, []error) {
	// An invalid measurement is judged (its gates may say why) but exits
	// 3, as a run that did not complete does.
	errs := invalidErrs(rep)
	verdict := gates.Outcome{Completed: completed && len(errs) == 0, Interrupted: stopped, NotGated: o.noGate, AcceptInconclusive: o.acceptInconclusive}
	if stopped {
		rep.Incomplete = true
	}
	if stopped || o.noGate || view.RunsFailed(rep) != "" {
		return verdict, errs // a run that did not complete: its gates would only say so again
	}
	env, err := gates.Env(rep, r.p.sc.Vars)
	if err != nil {
		errs = append(errs, err)
		verdict.Unjudged = true
	} else {
		if r.baseEnv != nil {
			env["baseline"] = r.baseEnv
		}
		rep.Gates = r.p.gates.EvaluateReports(env, gates.Reports{Run: rep, Baseline: r.base, AllowAny: o.baselineAny})
		verdict.Results = rep.Gates
	}
	if r.base != nil {
		// Models are known only now: a baseline of another model is
		// refused here, after the run, as a run that cannot be judged.
		if err := baselineComparable(r.base, rep, o.baselineAny); err != nil {
			errs = append(errs, fmt.Errorf("--baseline %s: %w", o.baseline, err))
			verdict.Unjudged = true
		}
	}
	return verdict, errs
}

// ciOutputs writes the GitHub Actions step summary and annotations when
// running there.
func ciOutputs(rep *report.Report, at annotations.Places, stdout io.Writer) error {
	var errs []error
	if summary := os.Getenv("GITHUB_STEP_SUMMARY"); summary != "" {
		var b bytes.Buffer
		err := markdown.Write(&b, rep)
		if err == nil {
			err = appendFile(summary, b.Bytes())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("$GITHUB_STEP_SUMMARY: %w", err))
		}
	}
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		if err := annotations.WriteAt(stdout, rep, at); err != nil {
			errs = append(errs, fmt.Errorf("annotations: %w", err))
		}
	}
	return errors.Join(errs...)
}

// placesOf says where the scenario at path writes each gate and phase,
// for annotations: the line each starts on, in the file it is written in
// (an included file's own); one that came from --set or --var points at
// the scenario file as a whole.
func placesOf(path string, sc *scenarios.Scenario) annotations.Places {
	at := annotations.Places{Scenario: path, Gates: map[string]annotations.Place{}, Phases: map[string]annotations.Place{}}
	place := func(p scenarios.Pos) (annotations.Place, bool) {
		if p.Set != "" || p.File == "" || p.Line == 0 {
			return annotations.Place{}, false
		}
		return annotations.Place{File: p.File, Line: p.Line}, true
	}
	for _, g := range sc.Gates {
		if pl, ok := place(g.Pos); ok {
			at.Gates[g.Name] = pl
		}
	}
	for _, p := range sc.Phases {
		if pl, ok := place(p.Pos); ok {
			at.Phases[p.Name] = pl
		}
	}
	return at
}

func appendFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// cmdValidate checks every scenario given, each in turn; the error has the
// problems of every one that is invalid.
func cmdValidate(args []string, stdout, stderr io.Writer) error {
	fs, vo := validateFlags(stderr)
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return invalid(errors.New("expected at least one SCENARIO file"))
	}
	var errs []error
	for _, path := range fs.Args() {
		p, err := prepare(path, vo.load, true, nil, stderr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if vo.print {
			if _, err := stdout.Write(p.sc.Printable()); err != nil {
				return notJudged(lines(append(errs, err)...))
			}
			continue
		}
		// A large matrix would print a screenful of names; the first few
		// say what the runs are called.
		const shown = 8
		names := make([]string, 0, shown+1)
		for i, r := range p.sc.Runs {
			if i == shown {
				names = append(names, fmt.Sprintf("… and %d more", len(p.sc.Runs)-shown))
				break
			}
			names = append(names, r.Name)
		}
		fmt.Fprintf(stdout, "%s: ok — %s (%s), %s, %s\n", path, plural(len(p.sc.Runs), "run"),
			strings.Join(names, ", "), plural(len(p.sc.Phases), "phase"), plural(len(p.gates.Gates), "gate"))
	}
	return lines(errs...) // each an invalid scenario
}

func cmdSchema(args []string, stdout, _ io.Writer) error {
	if len(args) != 1 {
		return invalid(bare(errors.New("usage: tollgate schema scenario|report")))
	}
	var b []byte
	switch args[0] {
	case "scenario":
		b = schema.Scenario()
	case "report":
		b = schema.Report()
	default:
		return invalid(fmt.Errorf("unknown schema %q (scenario or report)", args[0]))
	}
	if _, err := stdout.Write(b); err != nil {
		return notJudged(err)
	}
	return nil
}

// plural is "1 run", "2 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
