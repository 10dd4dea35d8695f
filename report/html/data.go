package html

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
)

// samples holds a phase's raw samples in their typed form. In a report
// built in-process they are typed slices; decoded from JSON they are []any,
// which a round trip through JSON turns back into the typed form.
type samples struct {
	req  []report.RequestSample
	seam []report.SeamSample
}

// sampleCache decodes each phase's samples once per render.
type sampleCache map[*report.Phase]samples

func (c sampleCache) of(p *report.Phase) samples {
	if p == nil {
		return samples{}
	}
	if s, ok := c[p]; ok {
		return s
	}
	s := decodeSamples(p.Samples)
	c[p] = s
	return s
}

func decodeSamples(v any) samples {
	switch s := v.(type) {
	case nil:
		return samples{}
	case []report.RequestSample:
		return samples{req: s}
	case []report.SeamSample:
		return samples{seam: s}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return samples{} // unreadable samples fall back to the percentiles
	}
	var probe []map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil || len(probe) == 0 {
		return samples{}
	}
	if _, ok := probe[0]["seam_latency_ms"]; ok {
		var s []report.SeamSample
		if json.Unmarshal(raw, &s) == nil {
			return samples{seam: s}
		}
		return samples{}
	}
	var s []report.RequestSample
	if json.Unmarshal(raw, &s) == nil {
		return samples{req: s}
	}
	return samples{}
}

// phaseExtras reads fields of a phase that the report types do not name yet
// (load sweeps' "points"), through the phase's own JSON, so the page picks
// them up as soon as the engine writes them.
func phaseExtras(p *report.Phase) map[string]json.RawMessage {
	if p == nil {
		return nil
	}
	cp := *p
	cp.Samples = nil
	raw, err := json.Marshal(&cp)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// sweepPoints returns a phase's load points, or nil when it has none.
func sweepPoints(p *report.Phase) []map[string]any {
	raw, ok := phaseExtras(p)["points"]
	if !ok {
		return nil
	}
	var pts []map[string]any
	if json.Unmarshal(raw, &pts) != nil {
		return nil
	}
	return pts
}

// lookup follows a dotted path ("goodput.good_requests_per_s") into a point.
func lookup(m map[string]any, path string) any {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = obj[k]
	}
	return cur
}

// num reads a number from a point field that is a number or a Stat-like
// object (then stat, else p50, else mean).
func num(v any, stat string) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, finite(x)
	case int:
		return float64(x), true
	case map[string]any:
		for _, k := range []string{stat, "p50", "mean"} {
			if k == "" {
				continue
			}
			if y, ok := x[k].(float64); ok && finite(y) {
				return y, true
			}
		}
	}
	return 0, false
}

// runOrder lists a report's runs: run_order first, then any others by name.
func runOrder(r *report.Report) []string {
	if r == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range r.RunOrder {
		if r.Runs[n] != nil && !seen[n] {
			out = append(out, n)
			seen[n] = true
		}
	}
	var rest []string
	for n, run := range r.Runs {
		if run != nil && !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func phaseOrder(run *report.Run) []string {
	if run == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range run.PhaseOrder {
		if run.Phases[n] != nil && !seen[n] {
			out = append(out, n)
			seen[n] = true
		}
	}
	var rest []string
	for n, p := range run.Phases {
		if p != nil && !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// baseRun and basePhase find the baseline's counterpart, or nil.
func baseRun(b *report.Report, name string) *report.Run {
	if b == nil {
		return nil
	}
	return b.Runs[name]
}

func basePhase(b *report.Report, run, phase string) *report.Phase {
	if r := baseRun(b, run); r != nil {
		return r.Phases[phase]
	}
	return nil
}

// pointKeys orders prompt-size points numerically.
func pointKeys(m map[string]*report.Point) []string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v != nil {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := pointX(keys[i], m[keys[i]]), pointX(keys[j], m[keys[j]])
		if a != b {
			return a < b
		}
		return keys[i] < keys[j]
	})
	return keys
}

func pointX(key string, p *report.Point) float64 {
	if p != nil && p.TargetPromptTokens > 0 {
		return float64(p.TargetPromptTokens)
	}
	if v, err := strconv.ParseFloat(key, 64); err == nil {
		return v
	}
	return math.NaN()
}

// variantOrder is the prefix-cache variants in the order they are run.
var variantOrder = []string{"fresh", "identical", "small_suffix"}

func variantKeys(m map[string]*report.Point) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range variantOrder {
		if m[k] != nil {
			out = append(out, k)
			seen[k] = true
		}
	}
	var rest []string
	for k, v := range m {
		if v != nil && !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
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
