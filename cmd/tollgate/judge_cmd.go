package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/gates"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/foreign"
	"github.com/tollgate-dev/tollgate/report/view"
)

const judgeUsage = "Usage: tollgate judge SCENARIO REPORT.json [flags]\n\n" +
	"Judge a saved report again with the scenario's gates, as they are now: change a\n" +
	"threshold, re-judge without measuring again. The report must come from the same\n" +
	"scenario (its identity: what is measured, not gates, descriptions, vars or the\n" +
	"server's address); one from another is refused naming the fields that differ.\n" +
	"The report is checked first: against the report schema and its own invariants\n" +
	"(min ≤ p50 ≤ … ≤ max, succeeded + errors = requests, rates ≥ 0); one that fails is\n" +
	"refused naming the JSON path. A report whose measurement is invalid (a merge with a\n" +
	"shard that started late: its invalid list) is judged, but exits 3.\n" +
	"REPORT.json may be another tool's result (vLLM bench serve, GuideLLM, AIPerf, llm-d; see\n" +
	"docs/report.md): what it measured cannot be checked against the scenario, which\n" +
	"stderr says; its run and load phase take the scenario's names.\n" +
	"Exits like run: 0 every gate passed, 1 a gate failed, 2 bad input (a report from\n" +
	"another scenario, a file that is not a report or fails its checks), 3 the report's\n" +
	"run did not complete, its measurement is invalid, or a gate errored, 4 a gate's\n" +
	"no_regression could not tell a change from noise (0 with --accept-inconclusive).\n" +
	"With --remote-write the judged report's series (gate verdicts too) are pushed,\n" +
	"timed at the run's end, as tollgate help run says.\n\nFlags:\n"

type judgeOptions struct {
	out             *outputs
	load            loadOptions
	quiet           bool
	baseline        string
	baselineAny     bool
	requireBaseline bool
	// acceptInconclusive: --accept-inconclusive.
	acceptInconclusive bool
	remote             *remoteWriteOptions
}

func judgeFlags(stderr io.Writer) (*pflag.FlagSet, *judgeOptions) {
	o := &judgeOptions{}
	fs := pflag.NewFlagSet("judge", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o.out = addOutputFlags(fs, true)
	fs.StringArrayVar(&o.load.sets, "set", nil, "override a scenario value: `PATH=VALUE`, VALUE parsed as YAML (repeatable), e.g. --set vars.max_ratio=0.7")
	fs.StringArrayVar(&o.load.vars, "var", nil, "set a scenario var: `NAME=VALUE` (repeatable; applied after the file and profile, before --set)")
	fs.StringVar(&o.load.profile, "profile", "", "apply the scenario's profile `NAME` (e.g. ci, nightly)")
	addAllowOutsideFlag(fs, &o.load.allowOutside)
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "print nothing on stdout; errors still go to stderr")
	addBaselineFlags(fs, &o.baseline, &o.baselineAny, &o.requireBaseline, &o.acceptInconclusive)
	o.remote = addRemoteWriteFlags(fs)
	fs.Usage = func() { fmt.Fprintf(stderr, "%s%s", judgeUsage, fs.FlagUsages()) }
	return fs, o
}

// cmdJudge evaluates a scenario's gates over a saved report. Everything it
// reads is known before it judges, so any input it refuses (the report,
// the baseline, the scenario) is exit 2.
func cmdJudge(args []string, stdout, stderr io.Writer) error {
	fs, o := judgeFlags(stderr)
	if err := parseFlags(fs, args, "run 'tollgate help judge' for the flags"); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return invalid(fmt.Errorf("expected SCENARIO and REPORT.json, got %d arguments", fs.NArg()))
	}
	path, reportPath := fs.Arg(0), fs.Arg(1)
	if err := o.remote.resolve(fs, os.LookupEnv); err != nil {
		return err // invalid
	}
	rep, err := foreign.ReadFile(reportPath)
	if err != nil {
		return invalid(fmt.Errorf("%w (give a report written by tollgate run --json-out, or another tool's result)", err))
	}
	if rep.Imported != nil && o.out.path("json-out") != "" {
		return invalid(fmt.Errorf("--json-out: %w: %s is a %s result; tollgate judges it but does not write it as a tollgate report, which would claim a measurement tollgate did not make (--vllm-out writes a vLLM result)",
			errOutputs, reportPath, rep.Imported.Tool))
	}
	if rep.Shard != nil {
		return invalid(fmt.Errorf("%s is shard %d of %d of a sharded run: merge the shards first (tollgate merge SHARD.json... --json-out merged.json) and judge the merge",
			reportPath, rep.Shard.Index, rep.Shard.Count))
	}
	base, baseEnv, err := openBaseline(o.baseline, o.requireBaseline, o.baselineAny, stderr, scenarioShape(path, o.load))
	if err != nil {
		return invalid(err)
	}
	if rep.Repetitions != nil {
		o.load.repeatRuns = rep.Repetitions.Count // its gates may read them
	}
	p, err := prepare(path, o.load, true, baseEnv, stderr)
	if err != nil {
		return err
	}
	// The report must have measured what this scenario measures. Another
	// tool's result has no scenario identity to check: its run and load
	// phase take the scenario's names, and stderr says what is not checked.
	fresh := engine.New(p.sc, engine.Options{ToolVersion: toolVersion()}).Scenario
	if rep.Imported != nil {
		shape, err := engine.Shape(p.sc)
		if err != nil {
			return scenarioError(path, err)
		}
		names := "its run and load phase keep their names (" + strings.Join(rep.RunOrder, ", ") + "): the scenario has not one run with one load phase"
		if foreign.Align(rep, shape) {
			run := rep.Runs[rep.RunOrder[0]]
			names = fmt.Sprintf("gates read it as runs[%q].phases[%q]", run.Name, run.PhaseOrder[0])
		}
		fmt.Fprintf(stderr, "tollgate: %s; what it measured is not checked against %s (only a tollgate report has a scenario identity); %s\n",
			rep.Imported.Heading(), path, names)
	} else if err := sameScenario(rep.Scenario, fresh); err != nil {
		return fmt.Errorf("%s was not measured by %s: %w", reportPath, path, err) // errOtherScenario: invalid
	}
	if base != nil {
		if err := baselineComparable(base, rep, o.baselineAny); err != nil {
			return invalid(fmt.Errorf("--baseline %s: %w", o.baseline, err))
		}
	}
	if err := o.out.check(fs, map[string]string{"scenario file": path, "report": reportPath, "baseline": o.baseline}); err != nil {
		return err // errOutputs: invalid
	}
	if err := o.out.checkVLLM(rep, reportPath); err != nil {
		return err
	}
	dataStdout, ciStdout := stdout, stdout
	if o.out.toStdout() {
		stdout, ciStdout = stderr, stderr
	}
	if o.quiet {
		stdout = io.Discard
	}

	// The report now carries the scenario that judged it: its vars and
	// descriptions (its identity is the report's own).
	rep.Scenario = fresh
	verdict, errs := judgeSaved(rep, p, gates.Reports{Baseline: base, AllowAny: o.baselineAny}, baseEnv)
	verdict.AcceptInconclusive = o.acceptInconclusive
	status, _ := gates.Verdict(verdict)
	if !rep.Incomplete {
		rep.Status = status
	}

	if failed := writeOutputs(rep, base, o.out, placesOf(path, p.sc), outStreams{summary: stdout, data: dataStdout, ci: ciStdout}); len(failed) > 0 {
		errs = append(errs, failed...)
		verdict.OutputFailed = true
	}
	if err := o.remote.push(context.Background(), rep, stdout); err != nil {
		errs = append(errs, err)
		verdict.OutputFailed = true
	}
	_, code := gates.Verdict(verdict)
	return withCode(code, lines(append(errs, undecided(rep, code))...))
}

// judgeSaved evaluates the gates over a saved report, and says why its
// verdict is not theirs, if it is not (one error each). A report of a run
// that did not complete, or whose measurement is invalid, is judged (its
// gates may say why) but exits 3, as run would have; an interrupted one is
// partial and not judged.
func judgeSaved(rep *report.Report, p *prepared, rs gates.Reports, baseEnv map[string]any) (gates.Outcome, []error) {
	errs := runFailures(rep, "")
	verdict := gates.Outcome{Completed: len(errs) == 0 && len(rep.Invalid) == 0}
	errs = append(errs, invalidErrs(rep)...)
	if view.Interrupted(rep) {
		errs = append(errs, errors.New("the report is incomplete (its run was interrupted); its gates are not judged"))
		verdict.Completed, verdict.Unjudged = false, true
		return verdict, errs
	}
	if view.RunsFailed(rep) != "" {
		rep.Gates = []report.GateResult{} // a run that did not complete, as run would have
		return verdict, errs
	}
	env, err := gates.Env(rep, p.sc.Vars)
	if err != nil {
		verdict.Unjudged = true
		return verdict, append(errs, err)
	}
	if baseEnv != nil {
		env["baseline"] = baseEnv
	}
	rs.Run = rep
	rep.Gates = p.gates.EvaluateReports(env, rs)
	verdict.Results = rep.Gates
	return verdict, errs
}

// sameScenario checks that a saved report's scenario is the one given:
// the same name and identity.
func sameScenario(saved, sc report.ScenarioInfo) error {
	diffs := report.IdentityDiff(saved, sc, "the report", "the scenario")
	if saved.Name != sc.Name {
		diffs = slices.DeleteFunc(diffs, func(d string) bool { return d == "name" })
		diffs = append([]string{fmt.Sprintf("name (the report %q, the scenario %q)", saved.Name, sc.Name)}, diffs...)
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%w in:%s", errOtherScenario, fieldList(diffs))
}

// maxFieldsShown bounds the fields a refusal lists: past a dozen, the
// scenario is plainly another one.
const maxFieldsShown = 12

// fieldList is one indented line per field, the first maxFieldsShown.
func fieldList(fields []string) string {
	if len(fields) > maxFieldsShown {
		fields = append(fields[:maxFieldsShown:maxFieldsShown], fmt.Sprintf("… and %d more", len(fields)-maxFieldsShown))
	}
	return "\n  " + strings.Join(fields, "\n  ")
}

// errOtherScenario is a saved report measured by another scenario.
var errOtherScenario = errors.New("its scenario's identity differs")

// invalidErrs says why rep's measurement is invalid, one error each.
func invalidErrs(rep *report.Report) []error {
	var errs []error
	for _, f := range rep.Invalid {
		errs = append(errs, fmt.Errorf("the measurement is invalid (%s at %s): %s", f.Reason, f.Path, f.Message))
	}
	return errs
}
