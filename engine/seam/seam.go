// Package seam is the stub seam target: a deterministic simulation of the
// transport between the nodes of a split-model route (head → … → tail). It
// moves real activation bytes through real compression, but charges every
// cost in virtual time, so the same scenario always gives the same report.
package seam

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// activation returns the deterministic, compressible payload of a transfer:
// "phase:index:" repeated to size, so phases and tokens are distinguishable.
func activation(size int, phase string, tokenIndex int) []byte {
	idx := "prompt"
	if tokenIndex >= 0 {
		idx = strconv.Itoa(tokenIndex)
	}
	prefix := []byte(phase + ":" + idx + ":")
	out := bytes.Repeat(prefix, size/len(prefix)+1)
	return out[:size]
}

// msToNS converts a configured cost to whole nanoseconds of virtual time, so
// sums are exact and the report carries no float noise.
func msToNS(ms float64) int64 { return int64(math.Round(ms * 1e6)) }

// session is one route session: its connections, its queue and its
// telemetry, tracked for real so the cleanup snapshot reports actual state.
type session struct {
	cfg *scenarios.SeamTarget
	// open holds the connections not yet closed: id → the ordinal of its
	// opening. A cached session keeps each seam's connection id in conn.
	open        map[string]int
	conn        map[string]string
	conns       int // connections opened so far, for ids
	leak        int // the first leak connections are never closed (faults)
	queue       []string
	telemetry   map[string]int
	activations int
	clockNS     int64
	closed      bool
	level       int
	compressBuf bytes.Buffer
}

func newSession(cfg *scenarios.SeamTarget) *session {
	s := &session{cfg: cfg, open: map[string]int{}, conn: map[string]string{}, telemetry: map[string]int{}}
	if cfg.Faults != nil {
		s.leak = cfg.Faults.LeakConnections
	}
	if cfg.Compression.Level != nil {
		s.level = *cfg.Compression.Level
	}
	return s
}

type transfer struct {
	sample  report.SeamSample
	latNS   int64
	queueNS int64
}

func (s *session) compress(payload []byte) ([]byte, error) {
	if s.cfg.Compression.Algorithm != "zlib" {
		return payload, nil
	}
	s.compressBuf.Reset()
	w, err := zlib.NewWriterLevel(&s.compressBuf, s.level)
	if err != nil {
		return nil, fmt.Errorf("seam: zlib level %d: %w", s.level, err)
	}
	if _, err := w.Write(payload); err != nil {
		return nil, fmt.Errorf("seam: compressing: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("seam: compressing: %w", err)
	}
	return s.compressBuf.Bytes(), nil
}

// send moves one activation over one seam and returns its sample.
func (s *session) send(seam, phaseKind string, tokenIndex int) (transfer, error) {
	c := s.cfg
	costs := c.Costs
	// Cached sessions own one connection per seam for the whole session;
	// stateless transfers open (and then close) their own.
	cached := c.Cache == "cached"
	conn, opened := s.conn[seam], false
	if !cached || conn == "" {
		s.conns++
		conn, opened = fmt.Sprintf("%s#%d", seam, s.conns), true
		s.open[conn] = s.conns
		if cached {
			s.conn[seam] = conn
		}
	}
	s.activations++
	id := fmt.Sprintf("%s-activation-%d", c.SessionID, s.activations)
	s.queue = append(s.queue, id)

	payload := activation(int(c.ActivationBytes), phaseKind, tokenIndex)
	wire, err := s.compress(payload)
	if err != nil {
		return transfer{}, err
	}
	compressed := c.Compression.Algorithm == "zlib"

	ns := map[string]int64{
		"model":     msToNS(costs.ModelMS.For(phaseKind)),
		"encode":    msToNS(costs.EncodeMS.For(phaseKind)),
		"framing":   msToNS(costs.FramingMS.For(phaseKind)),
		"metadata":  msToNS(costs.MetadataMS.For(phaseKind)),
		"copy":      msToNS(costs.CopyAllocationMS.For(phaseKind)),
		"queue":     msToNS(costs.QueueWaitMS.For(c.Transport).At(tokenIndex)),
		"transport": msToNS(costs.TransportMS.For(c.Transport)),
	}
	if compressed {
		ns["compress"] = msToNS(costs.CompressionMS.For(phaseKind))
		ns["decompress"] = msToNS(costs.DecompressionMS.For(phaseKind))
	}
	if opened {
		ns["connect"] = msToNS(costs.ConnectionSetupMS.For(c.Transport))
	}
	if costs.LinkBytesPerS > 0 {
		ns["transport"] += int64(math.Round(float64(len(wire)) * 1e9 / costs.LinkBytesPerS))
	}
	var total int64
	for _, v := range ns {
		total += v
	}
	var ti *int
	if tokenIndex >= 0 {
		ti = &tokenIndex
	}
	sample := report.SeamSample{
		Phase: phaseKind, TokenIndex: ti, SessionID: c.SessionID, ActivationID: id,
		Seam: seam, Mode: c.Transport, CacheMode: c.Cache,
		VirtualStartMS:      report.MS(s.clockNS),
		ModelMS:             report.MS(ns["model"]),
		EncodeMS:            report.MS(ns["encode"]),
		FramingMS:           report.MS(ns["framing"]),
		MetadataMS:          report.MS(ns["metadata"]),
		CopyAllocationMS:    report.MS(ns["copy"]),
		CopyAllocationBytes: int64(len(payload) + len(wire)),
		CompressionMS:       report.MS(ns["compress"]),
		DecompressionMS:     report.MS(ns["decompress"]),
		ConnectionSetupMS:   report.MS(ns["connect"]),
		QueueWaitMS:         report.MS(ns["queue"]),
		TransportMS:         report.MS(ns["transport"]),
		SeamLatencyMS:       report.MS(total),
		PayloadBytes:        int64(len(payload)),
		WireBytes:           int64(len(wire)),
		CompressionRatio:    float64(len(payload)) / float64(len(wire)),
		ConnectionAttempted: opened,
	}
	s.clockNS += total
	// Delivery: the tail node takes the activation off the queue and the
	// seam's telemetry aggregate counts it until the session flushes.
	s.queue = s.queue[1:]
	s.telemetry[seam]++
	if !cached {
		s.release(conn)
	}
	return transfer{sample: sample, latNS: total, queueNS: ns["queue"]}, nil
}

// release closes a connection, unless it is one the faults leak.
func (s *session) release(conn string) {
	if s.open[conn] > s.leak {
		delete(s.open, conn)
	}
}

// close releases every connection and flushes telemetry, then reports what
// is really left: the snapshot is read from the state after the release, so
// a connection that did not close shows up in it.
func (s *session) close() report.Cleanup {
	for conn := range s.open {
		s.release(conn)
	}
	clear(s.conn)
	clear(s.telemetry) // flushed to the report, nothing retained
	s.closed = true
	return report.Cleanup{
		SessionClosed:       s.closed,
		OpenConnections:     len(s.open),
		QueuedActivations:   len(s.queue),
		TelemetryAggregates: len(s.telemetry),
	}
}

// Run executes one run's phases over one route session: on the stub, in
// virtual time, or, when the target has an endpoint, captured live (which
// needs the options; use Capture).
func Run(ctx context.Context, run *scenarios.Run, keepSamples bool) (*report.Run, error) {
	cfg := run.Target.Seam
	seams := seamNames(cfg.Route)
	s := newSession(cfg)
	hop := func(_ context.Context, kind string, tokenIndex int) ([]transfer, string, error) {
		ts, err := s.hop(seams, kind, tokenIndex)
		token := ""
		if tokenIndex >= 0 {
			token = cfg.OutputTokens[tokenIndex]
		}
		return ts, token, err
	}
	out, all, err := runPhases(ctx, run, keepSamples, seams, hop)
	out.Source = report.SourceStub
	cleanup := s.close()
	out.Cleanup = &cleanup
	for _, t := range all {
		if t.sample.ConnectionAttempted {
			out.Connections.Attempts++
		}
	}
	return out, err
}

// seamNames are a route's seams, "from->to" for each adjacent pair.
func seamNames(route []string) []string {
	seams := make([]string, 0, len(route)-1)
	for i := 0; i+1 < len(route); i++ {
		seams = append(seams, route[i]+"->"+route[i+1])
	}
	return seams
}

// hopFunc sends one activation across every seam of the route (a prefill
// when tokenIndex is -1, else decode token tokenIndex) and returns the
// transfers and the output token the route produced.
type hopFunc func(ctx context.Context, kind string, tokenIndex int) ([]transfer, string, error)

// runPhases runs a seam run's phases through hop and aggregates them: the
// one phase loop of the stub, the live capture and the live shape. It
// returns the run (without cleanup or connections) and every transfer.
func runPhases(ctx context.Context, run *scenarios.Run, keepSamples bool, seams []string, hop hopFunc) (*report.Run, []transfer, error) {
	cfg := run.Target.Seam
	out := &report.Run{
		Phases:      map[string]*report.Phase{},
		SessionID:   cfg.SessionID,
		Connections: &report.Connections{},
		Seams:       map[string]*report.SeamMetrics{},
	}
	var all []transfer
	var err error
	for _, p := range run.Phases {
		if err = ctx.Err(); err != nil {
			break
		}
		var ts []transfer
		tokens := 0
		switch p.Kind {
		case scenarios.PhasePrefill:
			ts, _, err = hop(ctx, p.Kind, -1)
		case scenarios.PhaseDecode:
			n := len(cfg.OutputTokens)
			if p.Tokens > 0 && p.Tokens < n {
				n = p.Tokens
			}
			for i := 0; i < n && err == nil; i++ {
				var t []transfer
				var token string
				t, token, err = hop(ctx, p.Kind, i)
				ts = append(ts, t...)
				if err == nil {
					out.OutputTokens = append(out.OutputTokens, token)
					tokens++
				}
			}
		default:
			err = fmt.Errorf("seam target cannot run a %s phase", p.Kind)
		}
		if err != nil && len(ts) == 0 {
			break
		}
		ph := &report.Phase{Kind: p.Kind, SeamMetrics: aggregate(ts, tokens)}
		if len(seams) > 1 {
			ph.SeamsByName = bySeam(ts, seams, tokens)
		}
		if keepSamples {
			samples := make([]report.SeamSample, 0, len(ts))
			for _, t := range ts {
				samples = append(samples, t.sample)
			}
			ph.Samples = samples
		}
		out.Phases[p.Name] = ph
		out.PhaseOrder = append(out.PhaseOrder, p.Name)
		all = append(all, ts...)
		if err != nil {
			break
		}
	}
	out.Seams = bySeam(all, seams, len(out.OutputTokens))
	return out, all, err
}

// hop sends one activation across every seam of the route in order.
func (s *session) hop(seams []string, kind string, tokenIndex int) ([]transfer, error) {
	out := make([]transfer, 0, len(seams))
	for _, name := range seams {
		t, err := s.send(name, kind, tokenIndex)
		if err != nil {
			return out, err
		}
		out = append(out, t)
	}
	return out, nil
}

func aggregate(ts []transfer, tokens int) *report.SeamMetrics {
	samples := make([]report.SeamSample, len(ts))
	lat := make([]int64, len(ts))
	q := make([]int64, len(ts))
	q = q[:0]
	for i, t := range ts {
		samples[i], lat[i] = t.sample, t.latNS
		if t.sample.Source != report.SourceLive { // a live capture cannot see queueing
			q = append(q, t.queueNS)
		}
	}
	return report.SeamMetricsFrom(samples, lat, q, tokens)
}

// bySeam aggregates per seam; every token crosses every seam, so each seam
// carries all of the tokens.
func bySeam(ts []transfer, seams []string, tokens int) map[string]*report.SeamMetrics {
	out := map[string]*report.SeamMetrics{}
	for _, name := range seams {
		var mine []transfer
		for _, t := range ts {
			if t.sample.Seam == name {
				mine = append(mine, t)
			}
		}
		out[name] = aggregate(mine, tokens)
	}
	return out
}
