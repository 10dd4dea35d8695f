package transport

import "github.com/tollgate-dev/tollgate/engine/measure"

// Protocol is a wire protocol as the live executor needs it: how to build
// its client over this transport and what its answers can hold. Each
// protocol package (engine/openai, engine/anthropic) exports its own as
// Protocol(); which kinds speak it is their scenarios.LiveKinds entry, from
// which engine.Drivers is generated.
type Protocol struct {
	// Client builds the protocol's client over the shared transport.
	Client func(Config) (measure.Client, error)
	// UncountedReasoning: its usage counts no reasoning tokens apart (the
	// Messages API), so the shape's placeholders have no such count.
	UncountedReasoning bool
}

// ClientOf adapts a protocol package's New to Protocol.Client.
func ClientOf[C measure.Client](build func(Config) (C, error)) func(Config) (measure.Client, error) {
	return func(cfg Config) (measure.Client, error) {
		c, err := build(cfg)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}
