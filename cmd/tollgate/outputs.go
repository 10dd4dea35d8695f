package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/csv"
	"github.com/tollgate-dev/tollgate/report/foreign"
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
	// stdout formats may be given "-" for standard output.
	stdout bool
	write  func(w io.Writer, rep, base *report.Report) error
}

var formats = []format{
	{flag: "json-out", runOnly: true, stdout: true, usage: "write the JSON report to `PATH` (atomically, after validating it against the report schema; - for stdout)",
		write: func(w io.Writer, rep, _ *report.Report) error {
			data, err := report.Marshal(rep)
			if err == nil {
				_, err = w.Write(data)
			}
			return err
		}},
	{flag: "html", usage: "write a self-contained HTML report to `PATH` (with a baseline: old vs new)",
		write: func(w io.Writer, rep, base *report.Report) error { return html.Write(w, rep, base) }},
	{flag: "junit", stdout: true, usage: "write JUnit XML (one testcase per gate) to `PATH` (- for stdout)",
		write: func(w io.Writer, rep, _ *report.Report) error { return junit.Write(w, rep) }},
	{flag: "markdown", stdout: true, usage: "write a Markdown summary to `PATH` (- for stdout; a run appends it to $GITHUB_STEP_SUMMARY too when set)",
		write: func(w io.Writer, rep, _ *report.Report) error { return markdown.Write(w, rep) }},
	{flag: "csv", stdout: true, usage: "write the per-request samples kept in the report as CSV to `PATH` (- for stdout)",
		write: func(w io.Writer, rep, _ *report.Report) error { return csv.Write(w, rep) }},
	{flag: "vllm-out", stdout: true, usage: "write the load points as a vLLM bench serve result to `PATH`, for what reads vLLM's --save-result files (one JSON object; one a line for several points, as --append-result writes them; - for stdout)",
		write: func(w io.Writer, rep, _ *report.Report) error { return foreign.WriteVLLM(w, rep) }},
}

// checkVLLM refuses --vllm-out for a report with no load point, which a
// vLLM result cannot hold, before anything is written.
func (o *outputs) checkVLLM(rep *report.Report, name string) error {
	if o.path("vllm-out") == "" || hasLoadPoint(rep) {
		return nil
	}
	return invalid(fmt.Errorf("--vllm-out: %w: %s has no load phase; a vLLM result is one load (a request rate or a concurrency), so only load points are written", errOutputs, name))
}

// hasLoadPoint reports whether a live run of rep has a load point.
func hasLoadPoint(rep *report.Report) bool {
	for _, run := range rep.Runs {
		if run == nil || run.Target.Kind == report.TargetSeam {
			continue
		}
		for _, p := range run.Phases {
			if p != nil && len(p.Points) > 0 {
				return true
			}
		}
	}
	return false
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

// stdoutPath names standard output for a format that can stream there.
const stdoutPath = "-"

// errOutputs is what a refused set of output paths wraps.
var errOutputs = errors.New("invalid output")

// check refuses, before anything is sent, a path that could not be written
// or that would clobber something: an hour of measurements must never be
// lost to a typo in a path. fs tells an empty value given (--json-out=) from
// none; inputs are files the command reads (the scenario, the baseline),
// which no output may overwrite.
func (o *outputs) check(fs *pflag.FlagSet, inputs map[string]string) error {
	type named struct{ flag, path string }
	var outs []named
	for i, f := range o.fmts {
		p := *o.paths[i]
		if p == "" && fs.Changed(f.flag) {
			return fmt.Errorf("--%s: %w: an empty path (give a file, or - for stdout)", f.flag, errOutputs)
		}
		if p == stdoutPath && !f.stdout {
			return fmt.Errorf("--%s: %w: - (standard output) is not offered for this format; give a file", f.flag, errOutputs)
		}
		outs = append(outs, named{"--" + f.flag, p})
	}
	for _, flag := range slices.Sorted(maps.Keys(o.extra)) {
		p := *o.extra[flag]
		if p == "" && fs.Changed(strings.TrimPrefix(flag, "--")) {
			return fmt.Errorf("%s: %w: an empty path", flag, errOutputs)
		}
		if p == stdoutPath {
			return fmt.Errorf("%s: %w: - (standard output) is not offered here; give a file", flag, errOutputs)
		}
		outs = append(outs, named{flag, p})
	}
	stdoutBy := ""
	var seen []named
	for _, n := range outs {
		if n.path == "" {
			continue
		}
		if n.path == stdoutPath {
			if stdoutBy != "" {
				return fmt.Errorf("%s and %s: %w: both ask for standard output", stdoutBy, n.flag, errOutputs)
			}
			stdoutBy = n.flag
			continue
		}
		for _, in := range slices.Sorted(maps.Keys(inputs)) {
			if inputs[in] != "" && samePath(n.path, inputs[in]) {
				return fmt.Errorf("%s %s: %w: it is the %s and would be overwritten", n.flag, n.path, errOutputs, in)
			}
		}
		for _, s := range seen {
			if samePath(n.path, s.path) {
				return fmt.Errorf("%s and %s: %w: both name %s; only one would be kept", s.flag, n.flag, errOutputs, n.path)
			}
		}
		seen = append(seen, n)
	}
	// Only then is anything made: each path's missing parent directories
	// (so that --json-out out/r.json works in a fresh CI checkout), and a
	// probe file in each, removed at once. When one path cannot be
	// written, the directories made for the others are removed again: a
	// refused run leaves nothing behind.
	var made []string
	for _, n := range seen {
		dirs, err := makeParents(n.path)
		made = append(made, dirs...)
		if err == nil {
			err = report.CheckWritable(n.path)
		}
		if err != nil {
			for _, d := range slices.Backward(made) {
				_ = os.Remove(d) // only ever empty: made here, probed and cleaned
			}
			return fmt.Errorf("%s: %w: %w", n.flag, errOutputs, err)
		}
	}
	return nil
}

// makeParents creates the missing parent directories of path (0o755, less
// the umask) and returns those it created, outermost first.
func makeParents(path string) ([]string, error) {
	var missing []string
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			break // not ours to judge: MkdirAll or the probe says what is wrong
		}
		missing = append(missing, d)
		if p := filepath.Dir(d); p == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	var made []string
	for _, d := range slices.Backward(missing) {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return made, fmt.Errorf("cannot create the directory for %s: %w", path, err)
		} else if err == nil {
			made = append(made, d)
		}
	}
	return made, nil
}

// toStdout reports whether an output was given "-": the text summary then
// goes to standard error, so standard output holds that output alone.
func (o *outputs) toStdout() bool {
	for _, p := range o.paths {
		if *p == stdoutPath {
			return true
		}
	}
	return false
}

// samePath reports whether a and b name one file: the same cleaned
// absolute path, or (when both exist) the same file through a link.
func samePath(a, b string) bool {
	aa, errA := filepath.Abs(a)
	bb, errB := filepath.Abs(b)
	if errA == nil && errB == nil && aa == bb {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// write renders each requested file and writes it atomically (or to stdout
// for "-"); every one is attempted even when another fails, and each file
// written is named on wrote.
func (o *outputs) write(rep, base *report.Report, stdout, wrote io.Writer) error {
	var errs []error
	for i, f := range o.fmts {
		path := *o.paths[i]
		if path == "" {
			continue
		}
		var b bytes.Buffer
		err := f.write(&b, rep, base)
		if err == nil && path == stdoutPath {
			_, err = stdout.Write(b.Bytes())
		} else if err == nil {
			err = report.WriteFile(path, b.Bytes())
		}
		var invalid *report.InvalidError
		if errors.As(err, &invalid) && path != stdoutPath {
			// What was measured is kept, beside the path and under a name
			// no reader of reports takes for one, with what is wrong.
			kept := path + ".invalid.json"
			if werr := writeInvalid(kept, invalid); werr != nil {
				err = fmt.Errorf("%w (and keeping it as %s: %w)", err, kept, werr)
			} else {
				err = fmt.Errorf("%w\n(the report that failed validation was written to %s, with these errors)", err, kept)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", f.flag, err))
			continue
		}
		if path != stdoutPath {
			fmt.Fprintf(wrote, "wrote %s (%s)\n", path, f.flag)
		}
	}
	return errors.Join(errs...)
}

// writeInvalid writes a report that failed its schema, with the
// validation errors, as one JSON document.
func writeInvalid(path string, inv *report.InvalidError) error {
	var problems []string
	for l := range strings.Lines(inv.Err.Error()) {
		if l = strings.TrimSpace(l); l != "" {
			problems = append(problems, l)
		}
	}
	data, err := json.MarshalIndent(struct {
		ValidationErrors []string        `json:"validation_errors"`
		Report           json.RawMessage `json:"report"`
	}{problems, inv.Data}, "", "  ")
	if err != nil {
		return err
	}
	return report.WriteFile(path, append(data, '\n'))
}

// path is the path given for the format flag, "" when none.
func (o *outputs) path(flag string) string {
	for i, f := range o.fmts {
		if f.flag == flag {
			return *o.paths[i]
		}
	}
	return ""
}
