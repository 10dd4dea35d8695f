package html

import (
	"math"
	"strconv"

	"github.com/tollgate-dev/tollgate/report"
)

// samples holds a phase's raw samples in their typed form.
type samples struct {
	req  []report.RequestSample
	seam []report.SeamSample
}

// sampleCache types each phase's samples once per render.
type sampleCache map[*report.Phase]samples

// of returns the samples of run rn's phase pn in rep (none for a nil rep
// or a missing phase). Samples the report cannot type are left out, and
// the charts fall back to the percentiles.
func (c sampleCache) of(rep *report.Report, rn, pn string) samples {
	if rep == nil || rep.Runs[rn] == nil || rep.Runs[rn].Phases[pn] == nil {
		return samples{}
	}
	run := rep.Runs[rn]
	p := run.Phases[pn]
	if s, ok := c[p]; ok {
		return s
	}
	var s samples
	if req, seam, err := report.PhaseSamples(p, run.Target.Kind); err == nil {
		s = samples{req: req, seam: seam}
	}
	c[p] = s
	return s
}

// phaseOf finds a phase of a run in a report (the baseline, mostly), or nil.
func phaseOf(b *report.Report, run, phase string) *report.Phase {
	if b == nil || b.Runs[run] == nil {
		return nil
	}
	return b.Runs[run].Phases[phase]
}

// pointX is where a prompt-size point sits on the x axis: its target
// prompt size, else its key read as a number.
func pointX(key string, p *report.Point) float64 {
	if p != nil && p.TargetPromptTokens > 0 {
		return float64(p.TargetPromptTokens)
	}
	if v, err := strconv.ParseFloat(key, 64); err == nil {
		return v
	}
	return math.NaN()
}

func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// component is one part of a seam transfer's latency.
type component struct {
	name  string
	color int
	get   func(*report.SeamSample) float64
}

// components follow a transfer from the model to the wire; colours are
// fixed so a component keeps its colour across phases and pages.
var components = []component{
	{"model", 0, func(s *report.SeamSample) float64 { return s.ModelMS }},
	{"encode", 5, func(s *report.SeamSample) float64 { return s.EncodeMS }},
	{"framing", 8, func(s *report.SeamSample) float64 { return s.FramingMS }},
	{"metadata", 9, func(s *report.SeamSample) float64 { return s.MetadataMS }},
	{"copy_allocation", 3, func(s *report.SeamSample) float64 { return s.CopyAllocationMS }},
	{"compression", 2, func(s *report.SeamSample) float64 { return s.CompressionMS }},
	{"decompression", 6, func(s *report.SeamSample) float64 { return s.DecompressionMS }},
	{"connection_setup", 1, func(s *report.SeamSample) float64 { return s.ConnectionSetupMS }},
	{"queue_wait", 7, func(s *report.SeamSample) float64 { return s.QueueWaitMS }},
	{"transport", 4, func(s *report.SeamSample) float64 { return s.TransportMS }},
}

// breakdown averages each component over a phase's samples.
func breakdown(s []report.SeamSample) []float64 {
	out := make([]float64, len(components))
	if len(s) == 0 {
		for i := range out {
			out[i] = math.NaN()
		}
		return out
	}
	for i, c := range components {
		sum := 0.0
		for j := range s {
			sum += c.get(&s[j])
		}
		out[i] = sum / float64(len(s))
	}
	return out
}
