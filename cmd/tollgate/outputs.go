package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/csv"
	"github.com/tollgate-dev/tollgate/report/html"
	"github.com/tollgate-dev/tollgate/report/junit"
	"github.com/tollgate-dev/tollgate/report/markdown"
)

// format is one file a run or a saved report can be written as: its flag,
// its usage, and its writer. A new output format is one entry here.
type format struct {
	flag  string
	usage string
	// runOnly formats are not offered by tollgate report (the JSON report
	// is what it reads).
	runOnly bool
	write   func(w io.Writer, rep, base *report.Report) error
}

var formats = []format{
	{flag: "json-out", runOnly: true, usage: "write the JSON report to `PATH` (atomically, after validating it against the report schema)",
		write: func(w io.Writer, rep, _ *report.Report) error {
			data, err := report.Marshal(rep)
			if err == nil {
				_, err = w.Write(data)
			}
			return err
		}},
	{flag: "html", usage: "write a self-contained HTML report to `PATH` (with a baseline: old vs new)",
		write: func(w io.Writer, rep, base *report.Report) error { return html.Write(w, rep, base) }},
	{flag: "junit", usage: "write JUnit XML (one testcase per gate) to `PATH`",
		write: func(w io.Writer, rep, _ *report.Report) error { return junit.Write(w, rep) }},
	{flag: "markdown", usage: "write a Markdown summary to `PATH` (a run appends it to $GITHUB_STEP_SUMMARY too when set)",
		write: func(w io.Writer, rep, _ *report.Report) error { return markdown.Write(w, rep) }},
	{flag: "csv", usage: "write the per-request samples kept in the report as CSV to `PATH`",
		write: func(w io.Writer, rep, _ *report.Report) error { return csv.Write(w, rep) }},
}

// outputs are the paths given for each format, in registry order.
type outputs struct {
	paths []*string
	fmts  []format
	// extra are further paths a command checks with the others (e.g.
	// --samples-out, written as the run goes).
	extra map[string]*string
}

// addOutputFlags registers one flag per format on fs.
func addOutputFlags(fs *pflag.FlagSet, forRun bool) *outputs {
	o := &outputs{extra: map[string]*string{}}
	for _, f := range formats {
		if f.runOnly && !forRun {
			continue
		}
		p := new(string)
		fs.StringVar(p, f.flag, "", f.usage)
		o.paths = append(o.paths, p)
		o.fmts = append(o.fmts, f)
	}
	return o
}

// any reports whether a file format was asked for.
func (o *outputs) any() bool {
	for _, p := range o.paths {
		if *p != "" {
			return true
		}
	}
	return false
}

// check refuses, before anything is sent, a path that could not be written:
// an hour of measurements must never be lost to a typo in a path.
func (o *outputs) check() error {
	for i, f := range o.fmts {
		if err := checkPath("--"+f.flag, *o.paths[i]); err != nil {
			return err
		}
	}
	for flag, p := range o.extra {
		if err := checkPath(flag, *p); err != nil {
			return err
		}
	}
	return nil
}

func checkPath(flag, path string) error {
	if path == "" {
		return nil
	}
	if err := report.CheckWritable(path); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}

// write renders each requested file and writes it atomically; every one is
// attempted even when another fails, and each success is named on wrote.
func (o *outputs) write(rep, base *report.Report, wrote io.Writer) error {
	var errs []error
	for i, f := range o.fmts {
		path := *o.paths[i]
		if path == "" {
			continue
		}
		var b bytes.Buffer
		err := f.write(&b, rep, base)
		if err == nil {
			err = report.WriteFile(path, b.Bytes())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", f.flag, err))
			continue
		}
		fmt.Fprintf(wrote, "wrote %s (%s)\n", path, f.flag)
	}
	return errors.Join(errs...)
}
