package engine

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/engine/anthropic"
	"github.com/tollgate-dev/tollgate/engine/live"
	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// TestDriversNameEachLiveKindsProtocol: Drivers, generated from
// scenarios.LiveKinds, gives each live kind a driver speaking the protocol
// its entry names.
func TestDriversNameEachLiveKindsProtocol(t *testing.T) {
	for _, c := range []struct {
		kind   string
		client any // the protocol's client type; nil: not a live kind
		// uncounted: the protocol's usage counts no reasoning tokens.
		uncounted bool
	}{
		{kind: scenarios.KindSeam},
		{kind: scenarios.KindOpenAI, client: &openai.Client{}},
		{kind: scenarios.KindEmbedded, client: &openai.Client{}},
		{kind: scenarios.KindAnthropic, client: &anthropic.Client{}, uncounted: true},
	} {
		t.Run(c.kind, func(t *testing.T) {
			d, ok := Drivers()[c.kind]
			if !ok {
				t.Fatalf("no driver for kind %s", c.kind)
			}
			ld, isLive := d.(liveDriver)
			if isLive != (c.client != nil) {
				t.Fatalf("driver %T: live = %v, want %v", d, isLive, c.client != nil)
			}
			if !isLive {
				return
			}
			cl, err := ld.protocol.Client(transport.Config{BaseURL: "http://127.0.0.1:1"})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if reflect.TypeOf(cl) != reflect.TypeOf(c.client) || ld.protocol.UncountedReasoning != c.uncounted {
				t.Errorf("the driver speaks %T (uncounted reasoning %v), want %T (%v)", cl, ld.protocol.UncountedReasoning, c.client, c.uncounted)
			}
		})
	}
	if len(Drivers()) != 4 {
		t.Errorf("Drivers has %d kinds; add the new one's row above", len(Drivers()))
	}
	if len(Drivers()) != 1+len(scenarios.LiveKinds()) {
		t.Errorf("Drivers has %d kinds, scenarios.LiveKinds %d live ones: run go generate ./engine", len(Drivers()), len(scenarios.LiveKinds()))
	}
	for _, k := range scenarios.LiveKinds() {
		if _, ok := Drivers()[k.Kind].(liveDriver); !ok {
			t.Errorf("live kind %s has no liveDriver in Drivers", k.Kind)
		}
	}
}

// TestLiveRunNeedsAProtocol: a caller of live.Run that names no protocol
// gets an error, not a guess.
func TestLiveRunNeedsAProtocol(t *testing.T) {
	sc, err := scenarios.Parse("p.yaml", []byte(`
name: p
targets:
  s: {kind: openai, base_url: "http://127.0.0.1:1", metrics: false, metadata: false}
phases:
  w: {kind: warmup, requests: 1}
`), scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = live.Run(context.Background(), sc.Runs[0], live.Options{})
	if err == nil || !strings.Contains(err.Error(), "speaks no known protocol") {
		t.Fatalf("err = %v", err)
	}
}
