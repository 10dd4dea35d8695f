package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/report/text"
)

const mergeUsage = "Usage: tollgate merge SHARD.json... --json-out PATH [flags]\n\n" +
	"Merge the reports of the shards of one sharded run (tollgate run --shard I/N) into\n" +
	"the report one process sending the whole load would have written: counts add,\n" +
	"distributions merge exactly through their histograms, rates and throughput are\n" +
	"recomputed over the union of the shards' windows, each shard's own figures stay\n" +
	"under the merged phase. The result is validated against the report schema and not\n" +
	"gated: judge it with tollgate judge SCENARIO PATH.\n\n" +
	"The shards must prove they are one run: the same scenario, the same shard.run_id\n" +
	"(tollgate run --run-id, else $TOLLGATE_RUN_ID; none on every shard is the same)\n" +
	"and shard.start_at (--start-at), and for every load point windows in order, none\n" +
	"before start_at, that overlap (within 1 s plus the spread of the shards' measured\n" +
	"clock offsets). A shard that began its first load point more than\n" +
	"--max-start-lateness after start_at is merged, but the merge's measurement is\n" +
	"invalid: the report lists it under invalid, and judging it exits 3. So is a\n" +
	"merge of a shard whose own measurement was invalid (its client sent late).\n\n" +
	"Exits 0 merged, 2 bad input (a report that is not a shard or fails its checks,\n" +
	"shards of different scenarios, runs or schema versions, a shard given twice or\n" +
	"missing, windows that are not one run's), 3 merged but not to be trusted (a shard\n" +
	"started late, a shard's run did not complete) or an output could not be written\n" +
	"(a --remote-write push that failed among them: a sharded fleet pushes one set of\n" +
	"series from the merge, or from the judge of it, never from the shards).\n\nFlags:\n"

func mergeFlags(stderr io.Writer) (*pflag.FlagSet, *outputs, *remoteWriteOptions) {
	fs := pflag.NewFlagSet("merge", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := addOutputFlags(fs, true)
	remote := addRemoteWriteFlags(fs)
	fs.Usage = func() { fmt.Fprintf(stderr, "%s%s", mergeUsage, fs.FlagUsages()) }
	return fs, out, remote
}

func cmdMerge(args []string, stdout, stderr io.Writer) error {
	fs, out, remote := mergeFlags(stderr)
	quiet := fs.BoolP("quiet", "q", false, "print nothing on stdout; errors still go to stderr")
	maxLate := fs.Duration("max-start-lateness", fold.DefaultMaxStartLateness,
		"accept shards that began their first load point up to `DURATION` after --start-at; later makes the merge invalid (exit 3)")
	if err := parseFlags(fs, args, "run 'tollgate help merge' for the flags"); err != nil {
		return err
	}
	if *maxLate < 0 {
		return invalid(fmt.Errorf("--max-start-lateness %s: want a duration of 0 or more, e.g. 250ms", *maxLate))
	}
	if fs.NArg() == 0 {
		return invalid(errors.New("expected the shard reports (SHARD.json...)"))
	}
	if err := remote.resolve(fs, os.LookupEnv); err != nil {
		return err // invalid
	}
	if !out.any() && remote.client == nil {
		return invalid(errors.New("nothing to write: give --json-out PATH (or another output, or --remote-write URL)"))
	}
	inputs := map[string]string{}
	for i, f := range fs.Args() {
		inputs[fmt.Sprintf("shard report %d", i+1)] = f
	}
	if err := out.check(fs, inputs); err != nil {
		return err // errOutputs: invalid
	}
	var shards []*report.Report
	for _, f := range fs.Args() {
		r, err := report.ReadFile(f)
		if err != nil {
			return invalid(err)
		}
		shards = append(shards, r)
	}
	merged, err := fold.Merge(shards, fs.Args(), fold.MergeOptions{MaxStartLateness: *maxLate})
	if err != nil {
		return invalid(err)
	}
	dataStdout := stdout
	if out.toStdout() {
		stdout = stderr
	}
	if *quiet {
		stdout = io.Discard
	}
	// Every output is attempted; what failed, and every shard's run that
	// did not complete, is said once they are.
	var errs []error
	fmt.Fprintf(stdout, "merged %d shards of %s\n", len(shards), merged.Scenario.Name)
	if err := text.Summary(stdout, merged); err != nil {
		errs = append(errs, fmt.Errorf("writing summary: %w", err))
	}
	if err := out.write(merged, nil, dataStdout, stdout); err != nil {
		errs = append(errs, err)
	}
	if err := remote.push(context.Background(), merged, stdout); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, runFailures(merged, "")...)
	for _, f := range merged.Invalid {
		errs = append(errs, fmt.Errorf("the merged measurement is invalid (%s at %s): %s", f.Reason, f.Path, f.Message))
	}
	if len(errs) > 0 {
		return notJudged(lines(errs...))
	}
	return nil
}
