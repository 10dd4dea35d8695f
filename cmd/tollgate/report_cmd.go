package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/foreign"
)

const reportUsage = "Usage: tollgate report REPORT.json [--html PATH] [--junit PATH] [--markdown PATH] [--csv PATH] [--baseline OLD.json]\n\n" +
	"Render a saved tollgate JSON report: one self-contained HTML page (charts, gates,\n" +
	"target and host; with --baseline, set against an older report), JUnit,\n" +
	"Markdown, CSV or a vLLM result, exactly as tollgate run would have written them.\n" +
	"REPORT.json (and OLD.json) may be another tool's result, recognised by its content:\n" +
	"vLLM bench serve, GuideLLM, AIPerf, llm-d; the page then shows its definition notes.\n" +
	"A baseline must come from the same scenario, model and host, as tollgate compare and\n" +
	"run --baseline require; one that does not is refused (exit 2) naming what differs,\n" +
	"unless --baseline-any.\n\n" +
	"tollgate report --trend A.json B.json DIR... --html trend.html [--markdown PATH] [--fail-on METRIC.STAT:±N%]...\n" +
	"sets saved reports side by side over time: grouped by scenario (name and sha256), ordered by\n" +
	"run time, each one compared with the one before as tollgate compare compares them, a chart per\n" +
	"metric and slice with compare's noise band, and marked where compare would flag it (with the\n" +
	"same --fail-on: a regression; without: worse beyond noise). A DIR gives its *.json files.\n" +
	"Each point is labelled by its file name (report-$GIT_SHA.json labels it by commit). Fewer than\n" +
	"two reports of one scenario, or a file that is not a report, exits 2.\n\nFlags:\n"

type reportOptions struct {
	out         *outputs
	baseline    string
	baselineAny bool
	trend       bool
	failOn      []string
}

func reportFlags(stderr io.Writer) (*pflag.FlagSet, *reportOptions) {
	o := &reportOptions{}
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o.out = addOutputFlags(fs, false)
	fs.StringVar(&o.baseline, "baseline", "", "compare with an older report `OLD.json`: deltas and old-vs-new overlays")
	fs.BoolVar(&o.baselineAny, "baseline-any", false, "accept a baseline from another scenario, model or host (with --trend: reports of one scenario from other hosts or models)")
	fs.BoolVar(&o.trend, "trend", false, "render the REPORT.json files and DIRs given as a trend over time (--html, --markdown)")
	fs.StringArrayVar(&o.failOn, "fail-on", nil, "with --trend: mark a point a regression where tollgate compare PREV CUR --fail-on `METRIC.STAT:±N%` would fail (repeatable)")
	fs.Usage = func() { fmt.Fprintf(stderr, "%s%s", reportUsage, fs.FlagUsages()) }
	return fs, o
}

// cmdReport renders an existing report; it judges nothing, so it exits 0
// whatever the report's verdict, 2 for a bad invocation or a file that is not
// a tollgate report, and 3 when the page cannot be written.
func cmdReport(args []string, stdout, stderr io.Writer) error {
	fs, o := reportFlags(stderr)
	// A mistake is followed by the usage (less its last newline: the
	// error's line ends it).
	help := strings.TrimSuffix(reportUsage+fs.FlagUsages(), "\n")
	if err := parseFlags(fs, args, help); err != nil {
		return err
	}
	if o.trend {
		return cmdTrend(fs, o, stdout, stderr)
	}
	if len(o.failOn) > 0 {
		return invalid(errors.New("--fail-on marks regressions on a trend: add --trend, or use tollgate compare OLD.json NEW.json --fail-on"))
	}
	if fs.NArg() != 1 {
		return invalid(fmt.Errorf("expected one REPORT.json, got %d arguments\n%s", fs.NArg(), help))
	}
	if !o.out.any() {
		return invalid(errors.New("nothing to write: give --html, --junit, --markdown, --csv or --vllm-out PATH"))
	}
	if err := o.out.check(fs, map[string]string{"report": fs.Arg(0), "baseline": o.baseline}); err != nil {
		return err // errOutputs: invalid
	}
	r, err := foreign.ReadFile(fs.Arg(0))
	if err != nil {
		return invalid(err)
	}
	if o.baselineAny && o.baseline == "" {
		return invalid(errors.New("--baseline-any accepts a baseline from another scenario, model or host, and none is given: add --baseline OLD.json, or drop --baseline-any"))
	}
	var base *report.Report
	if o.baseline != "" {
		if base, err = foreign.ReadFile(o.baseline); err != nil {
			return invalid(fmt.Errorf("--baseline: %w", err))
		}
		if !foreign.Align(base, r) {
			foreign.Align(r, base)
		}
		// As compare and run --baseline: the same scenario, model and host.
		if err := baselineComparable(base, r, o.baselineAny); err != nil {
			return invalid(fmt.Errorf("--baseline %s: %w", o.baseline, err))
		}
	}
	if err := o.out.checkVLLM(r, fs.Arg(0)); err != nil {
		return err
	}
	wrote := stdout
	if o.out.toStdout() {
		wrote = stderr
	}
	if err := o.out.write(r, base, stdout, wrote); err != nil {
		return notJudged(err)
	}
	return nil
}
