package seam

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

func load(t *testing.T, sets ...string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Load("../../examples/route-session.yaml", scenarios.Options{Sets: sets})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// wireSlackMS is how far a latency may differ from the seed's figure: the
// seed's zlib compresses a decode activation to 41 bytes, Go's deflate to 45,
// and link time is wire_bytes / 100 MB/s, so 4 bytes are 0.00004 ms.
const wireSlackMS = 0.0001

func TestReproducesSeedFigures(t *testing.T) {
	seed := map[string]struct {
		p50, p95, queueP95, prefill, tokensPerS float64
		connections                             int
	}{
		"direct/cached":    {1.0354, 1.0354, 0, 3.1185, 965.8103, 1},
		"direct/stateless": {1.8354, 1.8354, 0, 3.1185, 544.8404, 5},
		"relay/cached":     {1.5054, 1.5554, 0.23, 4.1885, 653.4239, 1},
		"relay/stateless":  {2.9054, 2.9554, 0.23, 4.1885, 341.2503, 5},
	}
	sc := load(t)
	if len(sc.Runs) != len(seed) {
		t.Fatalf("%d runs, want %d", len(sc.Runs), len(seed))
	}
	for _, run := range sc.Runs {
		t.Run(run.Name, func(t *testing.T) {
			want, ok := seed[run.Name]
			if !ok {
				t.Fatalf("unexpected run %s", run.Name)
			}
			r, err := Run(context.Background(), run, true)
			if err != nil {
				t.Fatal(err)
			}
			dec, pre := r.Phases["decode"], r.Phases["prefill"]
			near := func(what string, got *float64, want, tol float64) {
				t.Helper()
				if got == nil {
					t.Errorf("%s absent, want %v", what, want)
					return
				}
				if math.Abs(*got-want) > tol {
					t.Errorf("%s = %.6f, want %.4f ± %g", what, *got, want, tol)
				}
			}
			near("decode p50", dec.SeamLatencyMS.P50, want.p50, wireSlackMS)
			near("decode p95", dec.SeamLatencyMS.P95, want.p95, wireSlackMS)
			near("decode queue p95", dec.QueueWaitMS.P95, want.queueP95, 1e-9)
			near("prefill latency", pre.SeamLatencyMS.P50, want.prefill, wireSlackMS)
			// Four tokens over Σ latency: the wire slack moves tok/s by < 0.01%.
			near("decode tokens/s", dec.TokensPerS, want.tokensPerS, want.tokensPerS*1e-4)
			if r.Connections.Attempts != want.connections {
				t.Errorf("connections %d, want %d", r.Connections.Attempts, want.connections)
			}
			if got := r.OutputTokens; len(got) != 4 || got[0] != " amber" || got[3] != " dogwood" {
				t.Errorf("output tokens %q", got)
			}
			if *r.Cleanup != (report.Cleanup{SessionClosed: true}) {
				t.Errorf("cleanup %+v", *r.Cleanup)
			}
			if pre.TokensPerS != nil || pre.BytesPerToken != nil {
				t.Errorf("prefill carries no tokens: tokens_per_s and bytes_per_token must be absent")
			}
			ids := map[string]bool{}
			for _, s := range append(pre.Samples.([]report.SeamSample), dec.Samples.([]report.SeamSample)...) {
				if s.SessionID != "benchmark-route-session" {
					t.Errorf("session id %q", s.SessionID)
				}
				if ids[s.ActivationID] {
					t.Errorf("activation id %s reused", s.ActivationID)
				}
				ids[s.ActivationID] = true
				if s.PayloadBytes != 4096 || s.WireBytes <= 0 || s.WireBytes >= 100 {
					t.Errorf("payload %d wire %d", s.PayloadBytes, s.WireBytes)
				}
				sum := s.ModelMS + s.EncodeMS + s.FramingMS + s.MetadataMS + s.CopyAllocationMS + s.CompressionMS +
					s.DecompressionMS + s.ConnectionSetupMS + s.QueueWaitMS + s.TransportMS
				if math.Abs(sum-s.SeamLatencyMS) > 1e-9 {
					t.Errorf("breakdown sums to %v, latency %v", sum, s.SeamLatencyMS)
				}
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	sc := load(t)
	var first []byte
	for i := 0; i < 3; i++ {
		var all []any
		for _, run := range sc.Runs {
			r, err := Run(context.Background(), run, true)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, r)
		}
		b, err := json.Marshal(all)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if string(b) != string(first) {
			t.Fatal("two runs of the same scenario differ")
		}
	}
}

func TestLongerRouteHasOneSeamPerPair(t *testing.T) {
	sc := load(t, "targets.route.route=[head, mid, tail]")
	for _, run := range sc.Runs {
		r, err := Run(context.Background(), run, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Seams) != 2 || r.Seams["head->mid"] == nil || r.Seams["mid->tail"] == nil {
			t.Fatalf("%s: seams %v", run.Name, r.Seams)
		}
		dec := r.Phases["decode"]
		if dec.Transfers != 8 || len(dec.SeamsByName) != 2 {
			t.Errorf("%s: %d decode transfers over %d seams, want 8 over 2", run.Name, dec.Transfers, len(dec.SeamsByName))
		}
		wantConns := 2 // cached: one per seam
		if run.Target.Seam.Cache == "stateless" {
			wantConns = 10 // a connection per transfer: 5 activations × 2 seams
		}
		if r.Connections.Attempts != wantConns {
			t.Errorf("%s: %d connections, want %d", run.Name, r.Connections.Attempts, wantConns)
		}
	}
}

func TestCompressionOff(t *testing.T) {
	sc := load(t, "targets.route.compression={algorithm: none}")
	r, err := Run(context.Background(), sc.Runs[0], false)
	if err != nil {
		t.Fatal(err)
	}
	dec := r.Phases["decode"]
	if dec.WireBytes != dec.PayloadBytes || *dec.CompressionRatio != 1 || *dec.CompressionCPUMS != 0 {
		t.Errorf("uncompressed: wire %d payload %d ratio %v cpu %v", dec.WireBytes, dec.PayloadBytes, *dec.CompressionRatio, *dec.CompressionCPUMS)
	}
	if dec.Samples != nil {
		t.Error("samples kept although not asked for")
	}
	// 4096 bytes at 100 MB/s add 0.04096 ms to every transfer.
	if got := *dec.SeamLatencyMS.P50; math.Abs(got-(1.035-0.09-0.07+0.04096)) > 1e-9 {
		t.Errorf("p50 %v", got)
	}
}

func TestCanceledContextStops(t *testing.T) {
	sc := load(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Run(ctx, sc.Runs[0], true)
	if err == nil {
		t.Fatal("want the context's error")
	}
	if !r.Cleanup.SessionClosed {
		t.Error("the session must be closed even when interrupted")
	}
}

// The cleanup snapshot is read from the session's state after close, so a
// connection that never closed is counted, in both cache modes.
func TestCleanupCountsLeakedConnections(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sets  []string
		cache string
		want  int
	}{
		{name: "cached, no fault", cache: "cached", want: 0},
		{name: "stateless, no fault", cache: "stateless", want: 0},
		{name: "cached leaks one", sets: []string{"targets.route.faults={leak_connections: 1}"}, cache: "cached", want: 1},
		{name: "stateless leaks two", sets: []string{"targets.route.faults={leak_connections: 2}"}, cache: "stateless", want: 2},
		// A cached session over one seam opens one connection: it cannot leak more.
		{name: "cached leaks no more than it opened", sets: []string{"targets.route.faults={leak_connections: 5}"}, cache: "cached", want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := load(t, tc.sets...)
			for _, run := range sc.Runs {
				if run.Target.Seam.Cache != tc.cache {
					continue
				}
				r, err := Run(context.Background(), run, false)
				if err != nil {
					t.Fatal(err)
				}
				c := r.Cleanup
				if !c.SessionClosed || c.OpenConnections != tc.want || c.QueuedActivations != 0 || c.TelemetryAggregates != 0 {
					t.Errorf("%s: cleanup %+v, want closed with %d open connections", run.Name, *c, tc.want)
				}
			}
		})
	}
}
