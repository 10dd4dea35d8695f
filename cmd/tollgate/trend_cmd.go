package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
	"github.com/tollgate-dev/tollgate/report/foreign"
	"github.com/tollgate-dev/tollgate/report/html"
	"github.com/tollgate-dev/tollgate/report/markdown"
	"github.com/tollgate-dev/tollgate/report/trend"
)

// errNoReports is a --trend argument (a directory) that holds no report.
var errNoReports = errors.New("no reports")

// cmdTrend is tollgate report --trend: it judges nothing, so it exits 0
// whatever it marks, 2 for bad input (a file that is not a report, a
// directory with none, fewer than two reports of one scenario, reports
// compare refuses), 3 when a page cannot be written.
func cmdTrend(fs *pflag.FlagSet, o *reportOptions, stdout, stderr io.Writer) error {
	htmlPath, mdPath := o.out.path("html"), o.out.path("markdown")
	for _, f := range []string{"junit", "csv", "vllm-out", "baseline"} {
		if fs.Changed(f) {
			return invalid(fmt.Errorf("--%s: a trend is written as --html or --markdown only", f))
		}
	}
	if htmlPath == "" && mdPath == "" {
		return invalid(errors.New("nothing to write: give --html PATH or --markdown PATH for the trend"))
	}
	if fs.NArg() == 0 {
		return invalid(errors.New("--trend: give the reports, as files or directories of *.json, e.g. tollgate report --trend nightly/ --html trend.html"))
	}
	opts := compare.Options{AllowAny: o.baselineAny}
	var err error
	if opts.FailOn, err = parseFailOn(o.failOn); err != nil {
		return err
	}
	files, err := trendFiles(fs.Args())
	if err != nil {
		return invalid(err)
	}
	inputs := map[string]string{}
	for i, f := range files {
		inputs[fmt.Sprintf("report %d", i+1)] = f
	}
	if err := o.out.check(fs, inputs); err != nil {
		return invalid(err) // errOutputs
	}
	var in []trend.Input
	var bad []error
	for _, f := range files {
		r, err := foreign.ReadFile(f)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		in = append(in, trend.Input{Path: f, Report: r})
	}
	if len(bad) > 0 {
		return invalid(lines(bad...))
	}
	t, err := trend.Build(in, opts)
	if err != nil {
		return invalid(fmt.Errorf("--trend: %w", err))
	}
	for _, p := range t.Alone {
		fmt.Fprintf(stderr, "tollgate: --trend: %s shares its scenario with no other report given: listed, not charted\n", p.File)
	}
	wrote := stdout
	if mdPath == stdoutPath {
		wrote = stderr
	}
	if htmlPath != "" {
		var b bytes.Buffer
		if err := html.WriteTrend(&b, t); err != nil {
			return notJudged(err)
		}
		if err := report.WriteFile(htmlPath, b.Bytes()); err != nil {
			return notJudged(fmt.Errorf("--html: %w", err))
		}
		fmt.Fprintf(wrote, "wrote %s (html)\n", htmlPath)
	}
	if mdPath != "" {
		var b bytes.Buffer
		if err := markdown.WriteTrend(&b, t); err != nil {
			return notJudged(err)
		}
		if mdPath == stdoutPath {
			if _, err := stdout.Write(b.Bytes()); err != nil {
				return notJudged(err)
			}
			return nil
		}
		if err := report.WriteFile(mdPath, b.Bytes()); err != nil {
			return notJudged(fmt.Errorf("--markdown: %w", err))
		}
		fmt.Fprintf(wrote, "wrote %s (markdown)\n", mdPath)
	}
	return nil
}

// trendFiles are the files the arguments name: a file as it is, a
// directory as its *.json files (not its subdirectories), sorted. A
// directory without one is refused, naming it; so is a path that is
// neither.
func trendFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("--trend %s: %w", a, err)
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return nil, fmt.Errorf("--trend %s: %w", a, err)
		}
		n := 0
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
				files = append(files, filepath.Join(a, e.Name()))
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("--trend %s: %w: the directory holds no *.json file", a, errNoReports)
		}
	}
	if len(files) > trend.MaxReports {
		return nil, fmt.Errorf("--trend: %d files: a trend reads at most %d reports", len(files), trend.MaxReports)
	}
	slices.Sort(files) // the order given does not matter: run time orders the points
	return slices.Compact(files), nil
}
