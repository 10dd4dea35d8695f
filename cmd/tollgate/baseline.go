package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/gates"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
	"github.com/tollgate-dev/tollgate/report/foreign"
)

// scenarioShape is the shape of the report the scenario at path would
// write (engine.Shape), loaded without its gates: what an imported
// baseline or report is aligned to.
func scenarioShape(path string, lo loadOptions) func() (*report.Report, error) {
	return func() (*report.Report, error) {
		p, err := prepare(path, lo, false, nil, io.Discard)
		if err != nil {
			return nil, err
		}
		return engine.Shape(p.sc)
	}
}

// errNoBaseline is a baseline required (--require-baseline) and not given.
var errNoBaseline = errors.New("no baseline")

// addBaselineFlags registers the flags of run and judge that give gates a
// baseline.
func addBaselineFlags(fs *pflag.FlagSet, path *string, allowAny, require, acceptInconclusive *bool) {
	fs.StringVar(path, "baseline", "", "an earlier report `OLD.json`, available to gates as baseline (same shape as the report); "+
		"without one, or when the file does not exist, gates that read baseline are skipped")
	fs.BoolVar(allowAny, "baseline-any", false, "accept a baseline from another scenario, model or host")
	fs.BoolVar(require, "require-baseline", false, "exit 2 when no baseline is given or its file does not exist, instead of skipping the gates that read it")
	fs.BoolVar(acceptInconclusive, "accept-inconclusive", false, "exit 0, not 4, when a gate's no_regression test cannot tell a change from noise (the gate and the report still say inconclusive)")
}

// openBaseline reads the baseline report at path, and its environment for
// gates. No path, or a path where no file is (the first night of a
// nightly job, before any baseline was published), is no baseline: gates
// that read it are skipped, unless require makes that an error. A file
// that is there and is not a tollgate report is always an error.
//
// --baseline-any without --baseline is refused: it says which baseline to
// accept, and alone it would silently accept nothing.
//
// The baseline may be another tool's result (report/foreign); its run and
// load phase then take the names of the scenario's, from shape (its
// report's shape, computed only then), so that gates read baseline.runs
// as they read runs.
func openBaseline(path string, require, allowAny bool, stderr io.Writer, shape func() (*report.Report, error)) (*report.Report, map[string]any, error) {
	if path == "" && allowAny {
		return nil, nil, errors.New("--baseline-any accepts a baseline from another scenario, model or host, and none is given: add --baseline OLD.json, or drop --baseline-any")
	}
	if path == "" {
		if require {
			return nil, nil, fmt.Errorf("--require-baseline: %w: give --baseline OLD.json", errNoBaseline)
		}
		return nil, nil, nil
	}
	base, err := foreign.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if require {
			return nil, nil, fmt.Errorf("--require-baseline: %w: %w", errNoBaseline, err)
		}
		fmt.Fprintf(stderr, "tollgate: --baseline %s: no such file; gates that read baseline are skipped (--require-baseline makes this an error)\n", path)
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--baseline: %w (give a report written by tollgate run --json-out)", err)
	}
	if base.Imported != nil && shape != nil {
		if sh, err := shape(); err == nil {
			foreign.Align(base, sh)
		}
	}
	env, err := gates.BaselineEnv(base)
	if err != nil {
		return nil, nil, fmt.Errorf("--baseline %s: %w", path, err)
	}
	return base, env, nil
}

// baselineComparable is compare.Comparable, except that a scenario that
// differs is named by its fields (phases.decode.max_tokens), not by two
// hashes.
func baselineComparable(base, rep *report.Report, allowAny bool) error {
	if base != nil && base.Imported != nil && !allowAny {
		return fmt.Errorf("%w: the baseline is a %s result (%s), which never shares a scenario identity with a tollgate scenario: pass --baseline-any to use it",
			compare.ErrIncomparable, base.Imported.Tool, base.Imported.File)
	}
	if allowAny || base == nil || rep == nil || base.Scenario.SHA256 == rep.Scenario.SHA256 {
		return compare.Comparable(base, rep, allowAny)
	}
	fields := report.IdentityDiff(base.Scenario, rep.Scenario, "the baseline", "this scenario")
	// Whatever else differs (host, model) is said too.
	same := *base
	same.Scenario.SHA256 = rep.Scenario.SHA256
	rest := compare.Comparable(&same, rep, false)
	if rest != nil && !errors.Is(rest, compare.ErrIncomparable) {
		return rest // not a report, or another format: nothing to compare
	}
	list := fieldList(fields)
	if rest != nil {
		return fmt.Errorf("%w: the baseline measured another scenario; it differs in:%s\nand %w", compare.ErrIncomparable, list, rest)
	}
	return fmt.Errorf("%w: the baseline measured another scenario; it differs in:%s\npass --baseline-any to use it anyway", compare.ErrIncomparable, list)
}
