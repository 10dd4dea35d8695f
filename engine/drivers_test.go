package engine

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/engine/live"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// TestDriversNameEachLiveKindsProtocol: Drivers is the one registry of
// target kinds; a live kind's entry names the protocol it speaks.
func TestDriversNameEachLiveKindsProtocol(t *testing.T) {
	ptr := func(p live.Protocol) uintptr { return reflect.ValueOf(p).Pointer() }
	for _, c := range []struct {
		kind     string
		protocol live.Protocol // nil: not a live kind
	}{
		{scenarios.KindSeam, nil},
		{scenarios.KindOpenAI, live.OpenAI},
		{scenarios.KindEmbedded, live.OpenAI},
		{scenarios.KindAnthropic, live.Anthropic},
	} {
		t.Run(c.kind, func(t *testing.T) {
			d, ok := Drivers[c.kind]
			if !ok {
				t.Fatalf("no driver for kind %s", c.kind)
			}
			ld, isLive := d.(liveDriver)
			if isLive != (c.protocol != nil) {
				t.Fatalf("driver %T: live = %v, want %v", d, isLive, c.protocol != nil)
			}
			if isLive && ptr(ld.protocol) != ptr(c.protocol) {
				t.Error("the driver speaks another protocol")
			}
		})
	}
	if len(Drivers) != 4 {
		t.Errorf("Drivers has %d kinds; add the new one's row above", len(Drivers))
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
