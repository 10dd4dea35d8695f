package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/engine/embedded"
	"github.com/tollgate-dev/tollgate/engine/live"
	"github.com/tollgate-dev/tollgate/engine/seam"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Drivers (drivers_gen.go) is generated from scenarios' registry of target
// kinds, with engine/live's Kinds from its registry of phase kinds.
//go:generate go run ./internal/genregistry

// Driver is a target kind: it can describe the report a run will produce
// (its shape, for checking gates before anything is sent) and run a
// scenario run into a report run.
//
// A kind run by the live executor over a new wire protocol, counted from
// anthropic's: its protocol's package (engine/anthropic: wire.go, the
// request and the JSON answer, and accumulate.go, the stream, exporting
// Protocol()) and its Kind constant and entry in scenarios.LiveKinds
// (scenarios/targetkinds.go: the package, the endpoints it has, whether
// conversations run on it): three code files, then go generate ./engine
// writes its Drivers entry. The schema lists its name and describes it
// (schema/scenario.schema.json). A target kind with a driver of its own
// (as seam) is more: its package, a Driver, its entry in the generator's
// template (engine/internal/genregistry), and in scenarios the kind's
// decoding and checks (model.go).
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
type liveDriver struct{ protocol transport.Protocol }

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
