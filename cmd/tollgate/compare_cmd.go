package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
	"github.com/tollgate-dev/tollgate/report/foreign"
	"github.com/tollgate-dev/tollgate/report/markdown"
)

// compareUsage is the help of tollgate compare.
const compareUsage = `Usage: tollgate compare OLD.json NEW.json [--fail-on METRIC.STAT:±N%]... [--accept-inconclusive] [--fail-on-unknown] [--alpha P] [--confidence C] [--markdown PATH] [--baseline-any]

Compares two reports of the same scenario metric by metric, like with like.
Either may be another tool's result, recognised by its content: a vLLM bench
serve --save-result file, a GuideLLM benchmarks.json, an AIPerf
profile_export_aiperf.json or an llm-d benchmark report (JSON, v0.1 or
v0.2.x) (docs/report.md, "Other tools' results"); the
comparison then lists the definition notes: where that tool defines a metric
otherwise than tollgate. Compared:
per prompt size, variant and load point (a phase's distribution pooled over
several of them is never compared). For each, old and new p50, p95 and mean
with the change in percent, and whether the change is beyond run-to-run noise
(a seeded bootstrap interval when both reports kept samples, or over whole
runs when both were run with --repeat-runs 5 or more; exact for seam
runs, which are deterministic; "cannot tell" otherwise).

--fail-on ttft_ms.p50:+10% fails (exit 1) when a ttft_ms p50 rose more than
10% beyond noise: a one-sided test of "within +10%" (Yuen's trimmed-mean t
test on the logarithms, with the spread shared by the slices of a phase, for
a p50 and for anything repeated over runs; a bootstrap for p90, p95, p99 and
the mean), corrected (Holm–Bonferroni) across every slice the thresholds
select so that an unchanged build fails with at most 1% probability
(--alpha). decode_tokens_per_s.p50:-5% fails when it dropped more than 5%.
METRIC may be any dotted suffix of a metric's path, e.g. prefill.256.ttft_ms
or runs["a/b"].phases.decode.seam_latency_ms. The limit must not be 0%.

Every selected statistic is a regression, no regression or inconclusive: over
its limit but not beyond noise, or with noise that cannot be told (fewer than
5 samples per slice, or none kept). Inconclusive exits 4 unless
--accept-inconclusive is given (--fail-on-unknown makes a breach that cannot
be told a regression). The summary lists, per slice, the smallest change its
data could detect and the samples per side that would detect the limit's.

--markdown PATH writes the same comparison, judged the same way, as Markdown
for a job summary or pull-request comment (- for stdout instead of the table).

Exit codes: 0 no regression, 1 a --fail-on regression, 2 bad input (unreadable,
not a report, incomparable reports, bad --fail-on or one naming no metric, an
--alpha or --confidence out of range), 4 inconclusive (0 with --accept-inconclusive).
`

type compareOptions struct {
	failOn        []string
	failOnUnknown bool
	acceptInconcl bool
	baselineAny   bool
	markdown      string
	alpha         float64
	confidence    float64
}

func compareFlags(stderr io.Writer) (*pflag.FlagSet, *compareOptions) {
	o := &compareOptions{}
	fs := pflag.NewFlagSet("compare", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringArrayVar(&o.failOn, "fail-on", nil, "fail (exit 1) when `METRIC.STAT:±N%` is breached beyond noise, e.g. ttft_ms.p50:+10% (repeatable)")
	fs.BoolVar(&o.failOnUnknown, "fail-on-unknown", false, "also fail on a --fail-on breach whose noise cannot be told (too few samples, or none)")
	fs.BoolVar(&o.acceptInconcl, "accept-inconclusive", false, "exit 0, not 4, when a --fail-on statistic cannot be decided (over its limit within noise, or noise unknown)")
	fs.Float64Var(&o.confidence, "confidence", compare.DefaultConfidence, "confidence level of the noise intervals the table shows, in (0, 1)")
	fs.StringVar(&o.markdown, "markdown", "", "also write the comparison as Markdown to `PATH` (- for stdout instead of the table)")
	fs.Float64Var(&o.alpha, "alpha", compare.DefaultAlpha, "family-wise error rate of the --fail-on tests: the most often an unchanged build may fail, in (0, 0.5]")
	fs.BoolVar(&o.baselineAny, "baseline-any", false, "compare reports of different scenarios, models or hosts")
	fs.Usage = func() { fmt.Fprintf(stderr, "%s\nFlags:\n%s", compareUsage, fs.FlagUsages()) }
	return fs, o
}

// cmdCompare is tollgate compare OLD.json NEW.json.
func cmdCompare(args []string, stdout, stderr io.Writer) error {
	fs, o := compareFlags(stderr)
	if err := parseFlags(fs, args, "run 'tollgate compare --help' for the flags"); err != nil {
		return err
	}
	opts, err := o.check(fs)
	if err != nil {
		return err
	}
	oldR, err := foreign.ReadFile(fs.Arg(0))
	if err != nil {
		return invalid(err)
	}
	newR, err := foreign.ReadFile(fs.Arg(1))
	if err != nil {
		return invalid(err)
	}
	if err := otherTools(oldR, newR, fs.Arg(0), fs.Arg(1), o.baselineAny); err != nil {
		return invalid(err)
	}
	res, err := compare.Compare(oldR, newR, opts)
	if err != nil {
		return invalid(fmt.Errorf("%s vs %s: %w", fs.Arg(0), fs.Arg(1), err))
	}
	if err := writeComparison(res, o.markdown, stdout); err != nil {
		return notJudged(err)
	}
	// A report whose measurement is invalid (a late shard, a client behind
	// its schedule) is compared but not judged: exit 3, whatever it shows.
	var bad []error
	for i, r := range []*report.Report{oldR, newR} {
		for _, err := range invalidErrs(r) {
			bad = append(bad, fmt.Errorf("%s: %w", fs.Arg(i), err))
		}
	}
	if len(bad) > 0 {
		return notJudged(lines(bad...))
	}
	switch res.Verdict() {
	case compare.Regressed:
		return gateFailed(fmt.Errorf("%d regression(s) beyond --fail-on", len(res.Regressions)))
	case compare.Inconclusive:
		n := 0
		for _, r := range res.Tested {
			if r.Decision == compare.Inconclusive {
				n++
			}
		}
		if o.acceptInconcl {
			return nil
		}
		return inconclusiveVerdict(fmt.Errorf("inconclusive: %d --fail-on statistic(s) could not be told from noise (exit %d); more samples per slice decide them (see the table), --accept-inconclusive accepts it",
			n, ExitInconclusive))
	}
	return nil
}

// otherTools refuses, unless allowAny, comparing the results of two
// tools (tollgate and vLLM, vLLM and GuideLLM), which never share a
// scenario identity; when allowed, the imported side takes the other's
// run and load phase names (foreign.Align), so that like meets like.
func otherTools(oldR, newR *report.Report, oldPath, newPath string, allowAny bool) error {
	tool := func(r *report.Report) string {
		if r.Imported != nil {
			return r.Imported.Tool
		}
		return "tollgate"
	}
	if to, tn := tool(oldR), tool(newR); to != tn && !allowAny {
		return fmt.Errorf("%w: %s is a %s result and %s a %s one: results of two tools never share a scenario identity; "+
			"pass --baseline-any to compare them (the comparison then says where their definitions differ)", compare.ErrIncomparable, oldPath, to, newPath, tn)
	}
	if !foreign.Align(newR, oldR) {
		foreign.Align(oldR, newR)
	}
	return nil
}

// check refuses, before any report is read, arguments and flags that are
// not a comparison: every bad --fail-on is named.
func (o *compareOptions) check(fs *pflag.FlagSet) (compare.Options, error) {
	opts := compare.Options{AllowAny: o.baselineAny, FailOnUnknown: o.failOnUnknown, Alpha: o.alpha, Confidence: o.confidence}
	if fs.NArg() != 2 {
		return opts, invalid(fmt.Errorf("expected OLD.json and NEW.json, got %d arguments", fs.NArg()))
	}
	if !(o.alpha > 0 && o.alpha <= 0.5) {
		return opts, invalid(fmt.Errorf("--alpha %v: want a probability in (0, 0.5], e.g. 0.01", o.alpha))
	}
	if !(o.confidence > 0 && o.confidence < 1) {
		return opts, invalid(fmt.Errorf("--confidence %v: want a level in (0, 1), e.g. 0.95", o.confidence))
	}
	var err error
	if opts.FailOn, err = parseFailOn(o.failOn); err != nil {
		return opts, err
	}
	switch {
	case o.markdown != "" && o.markdown != stdoutPath:
		for _, in := range []string{fs.Arg(0), fs.Arg(1)} {
			if samePath(o.markdown, in) {
				return opts, invalid(fmt.Errorf("--markdown %s: %w: it is an input report and would be overwritten", o.markdown, errOutputs))
			}
		}
		if err := report.CheckWritable(o.markdown); err != nil {
			return opts, invalid(fmt.Errorf("--markdown: %w", err))
		}
	case o.markdown == "" && fs.Changed("markdown"):
		return opts, invalid(fmt.Errorf("--markdown: %w: an empty path (give a file, or - for stdout)", errOutputs))
	}
	return opts, nil
}

// writeComparison writes the text table to stdout and, when asked, the
// Markdown to its file (atomically) or, for -, to stdout in its place.
func writeComparison(res *compare.Result, md string, stdout io.Writer) error {
	if md == stdoutPath {
		return markdown.WriteComparison(stdout, res)
	}
	if err := compare.Table(stdout, res); err != nil {
		return err
	}
	if md == "" {
		return nil
	}
	var b bytes.Buffer
	if err := markdown.WriteComparison(&b, res); err != nil {
		return err
	}
	if err := report.WriteFile(md, b.Bytes()); err != nil {
		return fmt.Errorf("--markdown: %w", err)
	}
	return nil
}

// parseFailOn parses --fail-on thresholds, naming every bad one at once.
func parseFailOn(specs []string) ([]compare.Threshold, error) {
	var out []compare.Threshold
	var bad []error
	for _, s := range specs {
		t, err := compare.ParseThreshold(s)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, t)
	}
	if len(bad) > 0 {
		return nil, invalid(lines(bad...))
	}
	return out, nil
}
