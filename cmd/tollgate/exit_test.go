package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/gates"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// codeOf finds an error's class through any wrapping: the class a command
// gave it, else the one its sentinel always means.
func TestCodeOf(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("tollgate: somewhere: %w", err) }
	other := errors.New("something else")
	for _, tc := range []struct {
		name string
		err  error
		code int
	}{
		{"nil", nil, ExitPass},
		{"an empty list", lines(nil, nil), ExitPass},
		{"help shown", helpShown, ExitPass},
		{"verdict pass", withCode(ExitPass, nil), ExitPass},
		{"verdict gate failed, nothing to say", withCode(ExitGateFailed, nil), ExitGateFailed},
		{"verdict gate failed with an output error", withCode(ExitGateFailed, wrap(other)), ExitGateFailed},
		{"invalid, wrapped", wrap(invalid(other)), ExitInvalid},
		{"not judged, wrapped", wrap(notJudged(other)), ExitNotJudged},
		{"interrupted, wrapped", wrap(interrupted(other)), ExitInterrupted},
		{"interrupted, nothing to say", interrupted(nil), ExitInterrupted},
		{"gate failed, wrapped", wrap(gateFailed(other)), ExitGateFailed},
		{"the outer class outranks the one inside", notJudged(wrap(invalid(other))), ExitNotJudged},
		{"the class given outranks the sentinel's", notJudged(wrap(compare.ErrIncomparable)), ExitNotJudged},
		{"invalid outranks a cancel", invalid(context.Canceled), ExitInvalid},
		{"a list of invalid scenarios", lines(invalid(other), invalid(wrap(other))), ExitInvalid},
		{"a bare error keeps its class", invalid(bare(other)), ExitInvalid},
		{"context canceled", wrap(context.Canceled), ExitInterrupted},
		{"scenario load errors", bare(scenarios.ErrorList{{Msg: "x"}}), ExitInvalid},
		{"scenario too large", wrap(scenarios.ErrTooLarge), ExitInvalid},
		{"gate problems", bare(errors.Join(gates.Problem{Gate: "g", Err: gates.ErrSyntax})), ExitInvalid},
		{"not a report", wrap(report.ErrNotReport), ExitInvalid},
		{"schema version", wrap(report.ErrSchemaVersion), ExitInvalid},
		{"merge refused", wrap(fold.ErrMerge), ExitInvalid},
		{"incomparable reports", wrap(compare.ErrIncomparable), ExitInvalid},
		{"--fail-on naming no metric", wrap(compare.ErrNoMetric), ExitInvalid},
		{"output paths refused", wrap(errOutputs), ExitInvalid},
		{"bad shard", wrap(errShard), ExitInvalid},
		{"bad --addr", wrap(errAddr), ExitInvalid},
		{"baseline required", wrap(errNoBaseline), ExitInvalid},
		{"report of another scenario", wrap(errOtherScenario), ExitInvalid},
		{"a run that failed", wrap(engine.ErrRunFailed), ExitNotJudged},
		{"anything else could not run", wrap(other), ExitNotJudged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := codeOf(tc.err); got != tc.code {
				t.Errorf("codeOf(%v) = %d, want %d", tc.err, got, tc.code)
			}
		})
	}
}

// exit prints an error once: each error of a list on its own line, named by
// the command unless bare; a verdict with nothing to say prints nothing.
func TestExitPrints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"verdict alone", withCode(ExitGateFailed, nil), ""},
		{"help", helpShown, ""},
		{"one error", invalid(errors.New("expected one SCENARIO file")), "tollgate run: expected one SCENARIO file\n"},
		{"a list, one line each", invalid(lines(errors.New("a"), errors.New("b"))), "tollgate run: a\ntollgate run: b\n"},
		{"a join in a list is one error", notJudged(lines(errors.New("a"), errors.Join(errors.New("b"), errors.New("c")))),
			"tollgate run: a\ntollgate run: b\nc\n"},
		{"bare", invalid(bare(errors.New("s.yaml:1:2: bad"))), "s.yaml:1:2: bad\n"},
		{"a list of bare and not", lines(invalid(bare(errors.New("s.yaml:1:2: bad"))), notJudged(errors.New("x"))),
			"s.yaml:1:2: bad\ntollgate run: x\n"},
		{"an error of two %w is one", invalid(fmt.Errorf("%w: %w", errOutputs, errors.New("x"))), "tollgate run: invalid output: x\n"},
		{"unclassed", errors.New("x"), "tollgate run: x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if code := exit(&b, "tollgate run", tc.err); code != codeOf(tc.err) {
				t.Errorf("exit returned %d, codeOf says %d", code, codeOf(tc.err))
			}
			if b.String() != tc.want {
				t.Errorf("printed %q, want %q", b.String(), tc.want)
			}
		})
	}
}
