package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
)

// compareUsage is the help of tollgate compare.
const compareUsage = `Usage: tollgate compare OLD.json NEW.json [--fail-on METRIC.STAT:±N%]... [--baseline-any]

Compares two reports of the same scenario metric by metric: old and new p50,
p95 and mean with the change in percent, and whether the change is beyond
run-to-run noise (a seeded bootstrap interval when both reports kept samples;
exact for seam runs, which are deterministic; unknown otherwise).

--fail-on ttft_ms.p50:+10% fails (exit 1) when a ttft_ms p50 rises more than
10% and, where samples tell, beyond noise; decode_tokens_per_s.p50:-5% when it
drops more than 5%. METRIC may be any dotted suffix of a metric's path, e.g.
prefill.256.ttft_ms or runs["a/b"].phases.decode.seam_latency_ms.

Exit codes: 0 no regression, 1 a --fail-on regression, 2 bad input (unreadable,
not a report, incomparable reports, bad --fail-on).
`

type compareOptions struct {
	failOn      []string
	baselineAny bool
}

func compareFlags(stderr io.Writer) (*pflag.FlagSet, *compareOptions) {
	o := &compareOptions{}
	fs := pflag.NewFlagSet("compare", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringArrayVar(&o.failOn, "fail-on", nil, "fail (exit 1) when `METRIC.STAT:±N%` is breached beyond noise, e.g. ttft_ms.p50:+10% (repeatable)")
	fs.BoolVar(&o.baselineAny, "baseline-any", false, "compare reports of different scenarios, models or hosts")
	fs.Usage = func() { fmt.Fprintf(stderr, "%s\nFlags:\n%s", compareUsage, fs.FlagUsages()) }
	return fs, o
}

// cmdCompare is tollgate compare OLD.json NEW.json.
func cmdCompare(args []string, stdout, stderr io.Writer) int {
	fs, o := compareFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitPass
		}
		fmt.Fprintf(stderr, "tollgate compare: %v\nrun 'tollgate compare --help' for the flags\n", err)
		return ExitInvalid
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "tollgate compare: expected OLD.json and NEW.json, got %d arguments\n", fs.NArg())
		return ExitInvalid
	}
	opts := compare.Options{AllowAny: o.baselineAny}
	bad := false
	for _, s := range o.failOn {
		t, err := compare.ParseThreshold(s)
		if err != nil {
			fmt.Fprintf(stderr, "tollgate compare: %v\n", err)
			bad = true
			continue
		}
		opts.FailOn = append(opts.FailOn, t)
	}
	if bad {
		return ExitInvalid
	}
	oldR, err := report.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "tollgate compare: %v\n", err)
		return ExitInvalid
	}
	newR, err := report.ReadFile(fs.Arg(1))
	if err != nil {
		fmt.Fprintf(stderr, "tollgate compare: %v\n", err)
		return ExitInvalid
	}
	res, err := compare.Compare(oldR, newR, opts)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate compare: %s vs %s: %v\n", fs.Arg(0), fs.Arg(1), err)
		return ExitInvalid
	}
	if err := compare.Table(stdout, res); err != nil {
		fmt.Fprintf(stderr, "tollgate compare: %v\n", err)
		return ExitNotJudged
	}
	if len(res.Regressions) > 0 {
		fmt.Fprintf(stderr, "tollgate compare: %d regression(s) beyond --fail-on\n", len(res.Regressions))
		return ExitGateFailed
	}
	return ExitPass
}
