package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tollgate-dev/tollgate/gates"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Exit codes, as DESIGN.md defines them. CI acts on these; never renumber.
// The verdict's codes are the gates package's (gates.Verdict decides them);
// only an invalid invocation is the CLI's own.
const (
	ExitPass       = gates.ExitPass       // ran; every gate passed
	ExitGateFailed = gates.ExitGateFailed // ran; at least one gate failed
	ExitInvalid    = 2                    // invalid invocation or scenario; nothing was sent
	ExitNotJudged  = gates.ExitNotJudged  // the run could not complete or be judged
	// ExitInconclusive: judged, but a comparison with a baseline could not
	// be decided (over a threshold within noise, or noise unknown).
	ExitInconclusive = gates.ExitInconclusive
	ExitInterrupted  = gates.ExitInterrupted // interrupted; a partial report was written
)

// A command returns an error that carries its exit code; Main prints it
// once and exits with codeOf it. Where the class is the command's decision
// (the same refused baseline is 2 before a run and 3 after it), the error
// is wrapped in it: invalid, notJudged, interrupted, gateFailed, or
// withCode for a verdict. An error returned without a class is classed by
// what it wraps (classOf): the sentinels that always mean one class.

// exitError is an error that ends a command with code. err may be nil: the
// command already said why (its summary, its gates' verdicts), and nothing
// more is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// invalid is an invalid invocation or scenario (exit 2): nothing was sent.
func invalid(err error) error { return &exitError{ExitInvalid, err} }

// notJudged is a run that could not complete or be judged, or an output
// that could not be written (exit 3).
func notJudged(err error) error { return &exitError{ExitNotJudged, err} }

// interrupted is a command stopped by a signal (exit 130).
func interrupted(err error) error { return &exitError{ExitInterrupted, err} }

// gateFailed is a command that ran and found a regression (exit 1).
func gateFailed(err error) error { return &exitError{ExitGateFailed, err} }

// inconclusiveVerdict is a command that ran and could not tell a
// regression from noise (exit 4).
func inconclusiveVerdict(err error) error { return &exitError{ExitInconclusive, err} }

// withCode is a verdict's code (gates.Verdict) with what explains it, if
// anything (err may be nil); nil when the code is ExitPass and there is
// nothing to say.
func withCode(code int, err error) error {
	if code == ExitPass && err == nil {
		return nil
	}
	return &exitError{code, err}
}

// helpShown stops a command whose --help was printed: exit 0, nothing more.
var helpShown error = &exitError{code: ExitPass}

// bareError is printed as it is, without the command's name: it says where
// it comes from itself (a scenario file's line and column, a gate's
// position) or is a usage text.
type bareError struct{ err error }

func (e *bareError) Error() string { return e.err.Error() }
func (e *bareError) Unwrap() error { return e.err }

func bare(err error) error { return &bareError{err} }

// codeOf is the exit code an error ends a command with: 0 for nil, the
// class it was wrapped in, else its class by what it wraps.
func codeOf(err error) int {
	if err == nil {
		return ExitPass
	}
	if e, ok := errors.AsType[*exitError](err); ok {
		return e.code
	}
	return classOf(err)
}

// classOf is the one place where the errors of the library packages (and
// this one's) that always mean one class are mapped to it. Anything else
// is a command that could not do its work: 3, as engine.ErrRunFailed is.
func classOf(err error) int {
	if errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	if _, ok := errors.AsType[scenarios.ErrorList](err); ok {
		return ExitInvalid // a scenario that did not load
	}
	if _, ok := errors.AsType[gates.Problem](err); ok {
		return ExitInvalid // a gate that did not compile
	}
	for _, s := range []error{
		scenarios.ErrTooLarge, scenarios.ErrNotRegular, scenarios.ErrOutside,
		report.ErrNotReport, report.ErrSchemaVersion, fold.ErrMerge,
		compare.ErrIncomparable, compare.ErrNoMetric,
		errOutputs, errShard, errAddr, errNoBaseline, errOtherScenario,
	} {
		if errors.Is(err, s) {
			return ExitInvalid
		}
	}
	return ExitNotJudged
}

// errorList is several errors that are each said on their own: exit
// prints one a line (or more, as its text has), each named by the command.
// (An errors.Join, or an error of several %w, is one error, printed as
// its text is.)
type errorList []error

func (l errorList) Error() string {
	texts := make([]string, len(l))
	for i, e := range l {
		texts[i] = e.Error()
	}
	return strings.Join(texts, "\n")
}

func (l errorList) Unwrap() []error { return l }

// lines is the errors that are not nil, each said on its own; nil when
// there are none.
func lines(errs ...error) error {
	var l errorList
	for _, e := range errs {
		if e != nil {
			l = append(l, e)
		}
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

// exit prints err once on stderr, each error of an errorList on its own line(s),
// each named by cmd ("tollgate run: …") unless it is bare, and returns its
// exit code. An error's text does not end in a newline: exit ends it.
func exit(stderr io.Writer, cmd string, err error) int {
	msg := err
	if e, ok := err.(*exitError); ok {
		msg = e.err
	}
	if msg == nil {
		return codeOf(err)
	}
	errs := []error{msg}
	if l, ok := msg.(errorList); ok {
		errs = l
	}
	for _, e := range errs {
		text := e.Error()
		if text == "" {
			continue
		}
		if !isBare(e) {
			text = cmd + ": " + text
		}
		fmt.Fprintln(stderr, text)
	}
	return codeOf(err)
}

// isBare reports whether err, under its class, is a bareError.
func isBare(err error) bool {
	for {
		switch e := err.(type) {
		case *bareError:
			return true
		case *exitError:
			err = e.err
		default:
			return false
		}
	}
}

// undecided says why a run or judge exits 4: the required gates that could
// not tell a change from noise. Nil for any other code.
func undecided(rep *report.Report, code int) error {
	if code != ExitInconclusive {
		return nil
	}
	var names []string
	for _, g := range rep.Gates {
		if g.Status == report.StatusInconclusive && !g.Optional {
			names = append(names, fmt.Sprintf("%q", g.Name))
		}
	}
	return fmt.Errorf("inconclusive (exit %d): gate %s could not tell a change from noise; more samples decide it (see the gate's message), --accept-inconclusive accepts it",
		ExitInconclusive, strings.Join(names, ", "))
}
