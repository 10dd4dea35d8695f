package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/engine/live"
	"github.com/tollgate-dev/tollgate/gates"
	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/annotations"
	"github.com/tollgate-dev/tollgate/report/markdown"
	"github.com/tollgate-dev/tollgate/report/text"
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
  130 interrupted; a partial report was written and marked incomplete

Run 'tollgate help run' for the flags of run.
`

// Main is the whole CLI, minus os.Exit, so tests can call it in-process too.
func Main(args []string, stdout, stderr io.Writer) int {
	// Errors may quote a URL given on the command line or in a scenario;
	// none prints its password.
	stderr = redact.New().Writer(stderr)
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitInvalid
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "schema":
		return cmdSchema(args[1:], stdout, stderr)
	case "serve":
		return cmdServe(args[1:], stdout, stderr)
	case "compare":
		return cmdCompare(args[1:], stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
	case "judge":
		return cmdJudge(args[1:], stdout, stderr)
	case "merge":
		return cmdMerge(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "tollgate %s\n", toolVersion())
		return ExitPass
	case "help", "-h", "--help":
		if len(args) > 1 {
			switch args[1] {
			case "run":
				fs, _ := runFlags(stderr)
				fmt.Fprintf(stdout, "Usage: tollgate run SCENARIO [flags]\n\nFlags:\n%s\n%s", fs.FlagUsages(), runOutputsHelp)
				return ExitPass
			case "validate":
				fs, _ := validateFlags(stderr)
				fmt.Fprintf(stdout, "Usage: tollgate validate SCENARIO... [flags]\n\nFlags:\n%s", fs.FlagUsages())
				return ExitPass
			case "serve":
				fs, _ := serveFlags(stderr)
				fmt.Fprintf(stdout, "Usage: tollgate serve [flags]\n\nFlags:\n%s", fs.FlagUsages())
				return ExitPass
			case "compare":
				fs, _ := compareFlags(stderr)
				fmt.Fprintf(stdout, "%s%s", compareUsage, fs.FlagUsages())
				return ExitPass
			case "report":
				fs, _ := reportFlags(stderr)
				fmt.Fprintf(stdout, "%s%s", reportUsage, fs.FlagUsages())
				return ExitPass
			case "judge":
				fs, _ := judgeFlags(stderr)
				fmt.Fprintf(stdout, "%s%s", judgeUsage, fs.FlagUsages())
				return ExitPass
			case "merge":
				fs, _ := mergeFlags(stderr)
				fmt.Fprintf(stdout, "%s%s", mergeUsage, fs.FlagUsages())
				return ExitPass
			default:
				fmt.Fprintf(stderr, "tollgate help: unknown command %q\n\n%s", args[1], usage)
				return ExitInvalid
			}
		}
		fmt.Fprint(stdout, usage)
		return ExitPass
	}
	fmt.Fprintf(stderr, "tollgate: unknown command %q\n\n%s", args[0], usage)
	return ExitInvalid
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
	repeatRuns      int
	shard           shardOptions
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
	addBaselineFlags(fs, &o.baseline, &o.baselineAny, &o.requireBaseline)
	addShardFlags(fs, &o.shard)
	fs.IntVar(&o.repeatRuns, "repeat-runs", 1, "run the whole scenario `N` times; the report keeps the last run and, under repetitions, every figure's mean, median and cv across the N (gates may read repetitions.runs.….median)")
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
}

// prepared is a scenario that loaded and whose gates compiled.
type prepared struct {
	sc    *scenarios.Scenario
	gates *gates.Set
}

// prepare loads a scenario and compiles its gates against the report shape
// and, for baseline, the baseline's (the report's own shape when there is
// none: gates that read it are checked all the same, and skipped when
// judged). Every problem is printed with its position; ok is false if
// there were any.
func prepare(path string, lo loadOptions, compileGates bool, baseline map[string]any, stderr io.Writer) (*prepared, bool) {
	sc, err := scenarios.Load(path, scenarios.Options{Sets: lo.sets, Vars: lo.vars, Profile: lo.profile, LookupEnv: os.LookupEnv})
	if err != nil {
		printLoadErrors(stderr, err)
		return nil, false
	}
	p := &prepared{sc: sc, gates: &gates.Set{}}
	// The drivers' own checks hold whether or not gates are judged.
	if err := engine.Validate(sc); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
		return nil, false
	}
	if err := engine.CheckEnv(sc, os.LookupEnv); err != nil {
		printLoadErrors(stderr, err)
		return nil, false
	}
	for _, w := range engine.Warnings(sc, live.ProcessFileLimit()) {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if !compileGates {
		return p, true
	}
	shape, err := engine.Shape(sc)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
		return nil, false
	}
	if lo.repeatRuns > 1 {
		// The repetitions tree has the keys of runs: two copies of the
		// shape give it.
		if shape.Repetitions, err = report.Repeat([]*report.Report{shape, shape}); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", path, err)
			return nil, false
		}
	}
	env, err := gates.Env(shape, sc.Vars)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
		return nil, false
	}
	if baseline == nil {
		if baseline, err = gates.BaselineEnv(shape); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", path, err)
			return nil, false
		}
	}
	env["baseline"] = baseline
	set, problems := gates.Compile(gateSpecs(sc), env)
	if len(problems) > 0 {
		for _, pr := range problems {
			fmt.Fprintln(stderr, pr.Error())
		}
		return nil, false
	}
	p.gates = set
	return p, true
}

func printLoadErrors(w io.Writer, err error) {
	var list scenarios.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Fprintln(w, e.Error())
		}
		if len(list) > 1 {
			fmt.Fprintf(w, "%d problems\n", len(list))
		}
		return
	}
	fmt.Fprintln(w, err)
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

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs, o := runFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitPass
		}
		fmt.Fprintf(stderr, "tollgate run: %v\nrun 'tollgate help run' for the flags\n", err)
		return ExitInvalid
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "tollgate run: expected one SCENARIO file, got %d arguments\n", fs.NArg())
		return ExitInvalid
	}
	path := fs.Arg(0)
	if o.repeatRuns < 1 || o.repeatRuns > maxRepeatRuns {
		fmt.Fprintf(stderr, "tollgate run: --repeat-runs %d: want 1 to %d\n", o.repeatRuns, maxRepeatRuns)
		return ExitInvalid
	}
	lo := loadOptions{sets: o.sets, vars: o.vars, profile: o.profile, repeatRuns: o.repeatRuns}
	base, baseEnv, err := openBaseline(o.baseline, o.requireBaseline, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate run: %v\n", err)
		return ExitInvalid
	}
	shard, err := o.shard.resolve(os.LookupEnv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate run: %v\n", err)
		return ExitInvalid
	}
	if shard != nil {
		o.noGate = true // a shard measures part of the load: the merge is judged
	}
	p, ok := prepare(path, lo, !o.noGate, baseEnv, stderr)
	if !ok {
		return ExitInvalid
	}
	if shard != nil {
		if err := checkShardable(p.sc, shard, o.repeatRuns); err != nil {
			fmt.Fprintf(stderr, "tollgate run: %v\n", err)
			return ExitInvalid
		}
	}
	if base != nil {
		// Before anything is sent: the same scenario and host hardware.
		if err := baselineComparable(base, engine.New(p.sc, engine.Options{}), o.baselineAny); err != nil {
			fmt.Fprintf(stderr, "tollgate run: --baseline %s: %v\n", o.baseline, err)
			return ExitInvalid
		}
	}
	if err := o.out.check(fs, map[string]string{"scenario file": path, "baseline": o.baseline}); err != nil {
		fmt.Fprintf(stderr, "tollgate run: %v\n", err)
		return ExitInvalid
	}
	if o.out.path("csv") != "" && !p.sc.Samples {
		// The CSV is the samples; refused now rather than after the run.
		fmt.Fprintf(stderr, "tollgate run: --csv: %s has report.samples: false, so the report keeps no per-request rows to write; "+
			"turn samples on, or stream them with --samples-out\n", path)
		return ExitInvalid
	}
	samples, err := openSamples(o.samplesOut)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate run: --samples-out: %v\n", err)
		return ExitInvalid
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

	opts := engine.Options{ToolVersion: toolVersion(), LookupEnv: os.LookupEnv, Shard: shard}
	if samples != nil {
		opts.SampleSink = samples.write
	}
	var pl *progressLine
	if !o.quiet && isTerminal(os.Stderr) {
		pl = newProgressLine(stderr)
		opts.OnProgress = pl.update
	}
	rep, runErr := runRepeated(ctx, p.sc, opts, o.repeatRuns, stderr, o.quiet)
	interrupted := ctx.Err() != nil
	if pl != nil {
		pl.finish()
	}

	if shard != nil {
		rep.Shard = shard.Info(hostname())
		if l := rep.Shard.StartLatenessMS; l != nil && *l > 0 {
			fmt.Fprintf(stderr, "warning: shard %d/%d began its first load point %.1f ms after --start-at %s\n", shard.Index, shard.Count, *l, o.shard.startAt)
		}
	}
	verdict := judge(rep, p, base, baseEnv, o, runErr == nil, interrupted, stderr)
	if runErr != nil && !interrupted {
		fmt.Fprintf(stderr, "tollgate run: %v\n", runErr)
	}
	rep.Status, _ = gates.Verdict(verdict)

	// Every output is attempted even when one fails: what was measured is
	// kept wherever it can be.
	if !writeOutputs("tollgate run", rep, base, o.out, path, outStreams{summary: stdout, data: dataStdout, ci: ciStdout, err: stderr}) {
		verdict.OutputFailed = true
	}
	if err := samples.close(); err != nil {
		fmt.Fprintf(stderr, "tollgate run: --samples-out %s: %v\n", o.samplesOut, err)
		verdict.OutputFailed = true
	}
	_, code := gates.Verdict(verdict)
	if ctx.Err() != nil {
		// A signal while the outputs were written: they were finished, and
		// the exit code still says the run was interrupted.
		code = ExitInterrupted
	}
	return code
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
				r, rerr := report.Repeat(done)
				if rerr != nil {
					return rep, errors.Join(err, rerr)
				}
				rep.Repetitions = r
			}
			if err != nil && n > 1 {
				err = fmt.Errorf("repetition %d of %d: %w", i, n, err)
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

// outStreams are where a command's outputs go: the summary, outputs given
// "-", GitHub workflow commands, and errors.
type outStreams struct{ summary, data, ci, err io.Writer }

// writeOutputs writes everything a judged report goes to (the summary,
// every output flag, the CI step summary and annotations), attempting each
// even when one fails, and reports whether all were written. A report that
// fails its schema is an output failure even when no JSON file was asked
// for; --json-out then says so itself, and keeps it as PATH.invalid.json.
func writeOutputs(cmd string, rep, base *report.Report, out *outputs, scenarioFile string, w outStreams) bool {
	ok := true
	if _, err := report.Marshal(rep); err != nil {
		ok = false
		if out.path("json-out") == "" {
			fmt.Fprintf(w.err, "%s: %v\n", cmd, err)
		}
	}
	if err := text.Summary(w.summary, rep); err != nil {
		fmt.Fprintf(w.err, "%s: writing summary: %v\n", cmd, err)
		ok = false
	}
	if err := out.write(rep, base, w.data, w.summary); err != nil {
		fmt.Fprintf(w.err, "%s: %v\n", cmd, err)
		ok = false
	}
	if err := ciOutputs(rep, scenarioFile, w.ci); err != nil {
		fmt.Fprintf(w.err, "%s: %v\n", cmd, err)
		ok = false
	}
	return ok
}

// judge evaluates the gates over a finished run (unless interrupted or
// --no-gate) and returns what the verdict policy needs.
func judge(rep *report.Report, p *prepared, base *report.Report, baseEnv map[string]any, o *runOptions, completed, interrupted bool, stderr io.Writer) gates.Outcome {
	verdict := gates.Outcome{Completed: completed, Interrupted: interrupted, NotGated: o.noGate}
	if interrupted {
		rep.Incomplete = true
	}
	if interrupted || o.noGate {
		return verdict
	}
	env, err := gates.Env(rep, p.sc.Vars)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate run: %v\n", err)
		verdict.Unjudged = true
	} else {
		if baseEnv != nil {
			env["baseline"] = baseEnv
		}
		rep.Gates = p.gates.Evaluate(env)
		verdict.Results = rep.Gates
	}
	if base != nil {
		// Models are known only now: a baseline of another model is
		// refused here, after the run, as a run that cannot be judged.
		if err := baselineComparable(base, rep, o.baselineAny); err != nil {
			fmt.Fprintf(stderr, "tollgate run: --baseline %s: %v\n", o.baseline, err)
			verdict.Unjudged = true
		}
	}
	return verdict
}

// ciOutputs writes the GitHub Actions step summary and annotations when
// running there.
func ciOutputs(rep *report.Report, scenarioFile string, stdout io.Writer) error {
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
		if err := annotations.Write(stdout, rep, scenarioFile); err != nil {
			errs = append(errs, fmt.Errorf("annotations: %w", err))
		}
	}
	return errors.Join(errs...)
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

// signalContext is canceled by the first SIGINT/SIGTERM, so the run stops
// sending and writes what it has; a second signal exits at once. Each
// signal writes out the samples streamed so far (samples may be nil).
func signalContext(stderr io.Writer, samples *sampleWriter) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			fmt.Fprintln(stderr, "tollgate: interrupted; finishing the partial report (interrupt again to quit now)")
			samples.flush()
			cancel()
		case <-done:
			return
		}
		select {
		case <-ch:
			samples.flushForExit()
			os.Exit(ExitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs, vo := validateFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitPass
		}
		fmt.Fprintf(stderr, "tollgate validate: %v\n", err)
		return ExitInvalid
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "tollgate validate: expected at least one SCENARIO file")
		return ExitInvalid
	}
	code := ExitPass
	for _, path := range fs.Args() {
		p, ok := prepare(path, vo.load, true, nil, stderr)
		if !ok {
			code = ExitInvalid
			continue
		}
		if vo.print {
			if _, err := stdout.Write(p.sc.Printable()); err != nil {
				fmt.Fprintf(stderr, "tollgate validate: %v\n", err)
				return ExitNotJudged
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
	return code
}

func cmdSchema(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: tollgate schema scenario|report")
		return ExitInvalid
	}
	var b []byte
	switch args[0] {
	case "scenario":
		b = schema.Scenario()
	case "report":
		b = schema.Report()
	default:
		fmt.Fprintf(stderr, "tollgate schema: unknown schema %q (scenario or report)\n", args[0])
		return ExitInvalid
	}
	if _, err := stdout.Write(b); err != nil {
		fmt.Fprintf(stderr, "tollgate schema: %v\n", err)
		return ExitNotJudged
	}
	return ExitPass
}

// plural is "1 run", "2 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
