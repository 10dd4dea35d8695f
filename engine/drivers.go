package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/engine/anthropic"
	"github.com/tollgate-dev/tollgate/engine/embedded"
	"github.com/tollgate-dev/tollgate/engine/live"
	"github.com/tollgate-dev/tollgate/engine/seam"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Driver is a target kind: it can describe the report a run will produce
// (its shape, for checking gates before anything is sent) and run a
// scenario run into a report run.
//
// A new target kind with a driver of its own is its package, a Driver and
// its entry in Drivers, and also: in scenarios, the Kind constant, the
// kind switch and the lists of kinds in its messages where targets are
// decoded (model.go), its target's fields and checks; its name in
// report/kinds.go if a writer special-cases it; its definition in
// schema/scenario.schema.json. A kind run by the live executor over a new
// wire protocol is less, counted from anthropic's: its protocol's package
// (engine/anthropic), a liveDriver entry here naming the live.Protocol it
// speaks, and its Kind constant and entry in scenarios.LiveKinds
// (scenarios/targetkinds.go): its package plus two code files; the schema
// lists its name and describes it (schema/scenario.schema.json).
type Driver interface {
	// Validate checks what the scenario loader cannot (e.g. the simulator's
	// own config); an error is an invalid scenario.
	Validate(run *scenarios.Run) error
	Shape(run *scenarios.Run, samples bool) (*report.Run, error)
	Run(ctx context.Context, run *scenarios.Run, opts RunOptions) (*report.Run, error)
}

// RunOptions are what a driver gets for one run.
type RunOptions struct {
	Samples    bool
	LookupEnv  func(string) (string, bool)
	OnProgress func(live.Progress)
	SampleSink func(report.RequestSample)
	// Grace lets requests in flight finish after an interrupt.
	Grace time.Duration
	// SessionGates name the scenario's gates that read a seam sample's
	// session_id (a live seam's warning names them).
	SessionGates []string
	// Shard makes a live run one shard of a sharded run.
	Shard *live.Shard
}

// Drivers are the target kinds by name, the engine's registry of them: a
// live kind's entry also names the wire protocol it speaks and what that
// protocol's answers hold. A function, not a variable, so no caller can
// swap a kind's driver for everyone.
func Drivers() map[string]Driver {
	return map[string]Driver{
		scenarios.KindSeam:     seamDriver{},
		scenarios.KindOpenAI:   liveDriver{protocol: live.OpenAI()},
		scenarios.KindEmbedded: liveDriver{protocol: live.OpenAI()},
		// The Messages API: the same executor, another protocol.
		scenarios.KindAnthropic: liveDriver{protocol: live.Protocol{Client: live.ClientOf(anthropic.New), UncountedReasoning: true}},
	}
}

func driverOf(run *scenarios.Run) (Driver, error) {
	d, ok := Drivers()[run.Target.Kind]
	if !ok {
		return nil, fmt.Errorf("target kind %q has no driver", run.Target.Kind)
	}
	return d, nil
}

// seamDriver: stub seams, deterministic in virtual time, and seams
// captured on a live endpoint.
type seamDriver struct{}

func (seamDriver) Validate(run *scenarios.Run) error {
	ep := run.Target.Seam.Endpoint
	if ep == nil || !ep.Embedded() {
		return nil
	}
	if err := embedded.Validate(ep.Sim); err != nil {
		return fmt.Errorf("%s: targets.%s.endpoint.sim: %w", ep.Pos, run.Target.Name, err)
	}
	return nil
}

// Shape of a stub seam run is its result: it is deterministic and costs
// microseconds. A live seam's is the capture's code over placeholders.
func (seamDriver) Shape(run *scenarios.Run, samples bool) (*report.Run, error) {
	if run.Target.Seam.Live() {
		return seam.ShapeLive(run, samples), nil
	}
	return seam.Run(context.Background(), run, samples)
}

func (seamDriver) Run(ctx context.Context, run *scenarios.Run, opts RunOptions) (*report.Run, error) {
	if run.Target.Seam.Live() {
		return seam.Capture(ctx, run, seam.LiveOptions{Samples: opts.Samples, LookupEnv: opts.LookupEnv, SessionGates: opts.SessionGates})
	}
	return seam.Run(ctx, run, opts.Samples)
}

// liveDriver: a live server (or the embedded simulator) run by the live
// executor, speaking protocol.
type liveDriver struct{ protocol live.Protocol }

func (liveDriver) Validate(run *scenarios.Run) error {
	if !run.Target.Embedded() {
		return nil
	}
	if err := embedded.Validate(run.Target.OpenAI.Sim); err != nil {
		return fmt.Errorf("%s: targets.%s.sim: %w", run.Target.Pos, run.Target.Name, err)
	}
	return nil
}

func (d liveDriver) Shape(run *scenarios.Run, samples bool) (*report.Run, error) {
	return live.Shape(run, samples, d.protocol), nil
}

func (d liveDriver) Run(ctx context.Context, run *scenarios.Run, opts RunOptions) (*report.Run, error) {
	return live.Run(ctx, run, live.Options{LookupEnv: opts.LookupEnv, Samples: opts.Samples,
		OnProgress: opts.OnProgress, SampleSink: opts.SampleSink, Grace: opts.Grace, Shard: opts.Shard,
		Protocol: d.protocol})
}
