package foreign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// ErrNoLoadPoint marks a report with nothing a vLLM result can hold.
var ErrNoLoadPoint = errors.New("no load point to export")

// vLLMPercentiles are the percentiles an export writes of each metric,
// as vllm bench serve --metric-percentiles 50,90,95,99 would.
var vLLMPercentiles = []float64{50, 90, 95, 99}

// Export notes, in each result's tollgate_definitions (a --metadata
// string, which vLLM's readers carry along).
const (
	exportNoteSamples = "summaries computed from tollgate's request samples with vLLM's definitions: TTFT and E2EL over the completed requests, " +
		"TPOT = (e2e − ttft) ÷ (output tokens − 1) for requests of more than one token, numpy's mean, median, std and linear-interpolation percentiles; " +
		"ITL from tollgate's gaps between token events (nearest-rank percentiles, no std: a sample keeps no gaps, so there are no itls); no generated_texts"
	exportNoteStats = "summaries from tollgate's statistics (the report kept no samples): tollgate's definitions and nearest-rank percentiles, " +
		"TPOT is tollgate's (t_last_token − t_first_token) ÷ (completion_tokens − 1), no std, no per-request lists"
)

// WriteVLLM writes the load points of rep as vLLM bench serve results,
// so that what reads vLLM's --save-result files reads a tollgate run: one
// JSON object when rep has one load point (as --save-result writes it),
// one a line when it has several (as --append-result appends them), in
// run, phase and point order. Each has vLLM's keys and definitions
// (exportNoteSamples): from the point's request samples when the report
// kept them all, else from its statistics (exportNoteStats); which, and
// where it came from, are in its tollgate_* metadata keys.
func WriteVLLM(w io.Writer, rep *report.Report) error {
	var out bytes.Buffer
	n := 0
	for _, rn := range rep.RunNames() {
		run := rep.Runs[rn]
		if run == nil || run.Target.Kind == report.TargetSeam {
			continue
		}
		for _, pn := range run.PhaseNames() {
			ph := run.Phases[pn]
			if ph == nil || len(ph.Points) == 0 {
				continue
			}
			reqs, _, err := report.PhaseSamples(ph, run.Target.Kind)
			if err != nil {
				return fmt.Errorf("vLLM export: run %s phase %s: %w", rn, pn, err)
			}
			for _, lp := range ph.Points {
				if lp == nil || lp.ServingMetrics == nil {
					continue
				}
				b, err := vllmResult(rep, run, pn, lp, reqs)
				if err != nil {
					return fmt.Errorf("vLLM export: run %s phase %s %s: %w", rn, pn, view.PointLabel(lp), err)
				}
				if n > 0 {
					out.WriteByte('\n')
				}
				out.Write(b)
				n++
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("vLLM export: %w: a vLLM result is one load (a request rate or a concurrency), and this report has no load phase", ErrNoLoadPoint)
	}
	out.WriteByte('\n')
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("vLLM export: %w", err)
	}
	return nil
}

// ordered is a JSON object written in the order its keys were added.
type ordered struct {
	buf bytes.Buffer
	err error
}

func (o *ordered) add(k string, v any) {
	if o.err != nil {
		return
	}
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return // absent, never NaN
	}
	b, err := json.Marshal(v)
	if err != nil {
		o.err = fmt.Errorf("%s: %w", k, err)
		return
	}
	if o.buf.Len() == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteString(", ")
	}
	kb, _ := json.Marshal(k)
	o.buf.Write(kb)
	o.buf.WriteString(": ")
	o.buf.Write(b)
}

func (o *ordered) bytes() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	o.buf.WriteByte('}')
	return o.buf.Bytes(), nil
}

// vllmResult is one load point as a vLLM result.
func vllmResult(rep *report.Report, run *report.Run, phase string, lp *report.LoadPoint, all []report.RequestSample) ([]byte, error) {
	label := view.PointLabel(lp)
	var reqs []report.RequestSample
	for _, s := range all {
		if s.Point == label {
			reqs = append(reqs, s)
		}
	}
	samples := all != nil && len(reqs) == lp.Requests && lp.Requests > 0
	o := &ordered{}
	date := ""
	if !rep.StartedAt.IsZero() {
		date = rep.StartedAt.UTC().Format("20060102-150405")
	}
	o.add("date", date)
	backend := run.Target.Kind
	switch run.Target.Endpoint {
	case "chat":
		backend = "openai-chat"
	case "completions":
		backend = "openai"
	}
	o.add("backend", backend)
	o.add("model_id", run.Target.Model)
	o.add("tokenizer_id", run.Target.Model)
	o.add("num_prompts", lp.Requests)
	o.add("tollgate_version", rep.Tool.Version)
	o.add("tollgate_scenario", rep.Scenario.Name)
	o.add("tollgate_run", run.Name)
	o.add("tollgate_phase", phase)
	o.add("tollgate_point", label)
	if samples {
		o.add("tollgate_definitions", exportNoteSamples)
	} else {
		o.add("tollgate_definitions", exportNoteStats)
	}
	if lp.Rate > 0 {
		o.add("request_rate", lp.Rate)
		o.add("burstiness", nil) // tollgate's report does not say which arrivals a rate had
		o.add("max_concurrency", nil)
	} else {
		o.add("request_rate", "inf")
		o.add("burstiness", 1.0)
		o.add("max_concurrency", lp.Concurrency)
	}
	o.add("duration", lp.DurationS)
	o.add("completed", lp.Succeeded)
	var metrics map[string][]float64
	var in, out int
	if samples {
		var lists vllmRequests
		lists, metrics, in, out = vllmFromSamples(reqs)
		writeTotals(o, lp, in, out)
		o.add("input_lens", lists.inputs)
		o.add("output_lens", lists.outputs)
		o.add("ttfts", lists.ttfts)
		o.add("errors", lists.errors)
		for _, m := range []struct{ name, key string }{{"ttft", "ttft"}, {"tpot", "tpot"}, {"itl", ""}, {"e2el", "e2el"}} {
			if m.key == "" {
				statKeys(o, m.name, lp.ITLMS)
				continue
			}
			sampleKeys(o, m.name, metrics[m.key])
		}
		return o.bytes()
	}
	in, out = statTotal(lp.PromptTokens), statTotal(lp.CompletionTokens)
	writeTotals(o, lp, in, out)
	for _, m := range []struct {
		name string
		st   report.Stat
	}{{"ttft", lp.TTFTMS}, {"tpot", lp.TPOTMS}, {"itl", lp.ITLMS}, {"e2el", lp.E2EMS}} {
		statKeys(o, m.name, m.st)
	}
	return o.bytes()
}

// vllmRequests are the per-request lists an export writes.
type vllmRequests struct {
	inputs, outputs []int
	ttfts           []float64
	errors          []string
}

// vllmFromSamples are a point's per-request lists and the values vLLM
// summarises, by its definitions, with the completed requests' tokens.
func vllmFromSamples(reqs []report.RequestSample) (vllmRequests, map[string][]float64, int, int) {
	l := vllmRequests{inputs: []int{}, outputs: []int{}, ttfts: []float64{}, errors: []string{}}
	vals := map[string][]float64{}
	in, out := 0, 0
	for _, s := range reqs {
		p := s.TargetPromptTokens
		if s.PromptTokens != nil {
			p = *s.PromptTokens
		}
		l.inputs = append(l.inputs, p)
		if !s.OK || s.Error != nil || s.TTFTMS == nil {
			msg := "failed"
			if s.Error != nil {
				msg = s.Error.Message
				if msg == "" {
					msg = s.Error.Class
				}
			}
			if s.OK {
				msg = "no token received"
			}
			l.outputs = append(l.outputs, 0)
			l.ttfts = append(l.ttfts, 0.0)
			l.errors = append(l.errors, msg)
			continue
		}
		c := 0
		if s.CompletionTokens != nil {
			c = *s.CompletionTokens
		}
		in += p
		out += c
		l.outputs = append(l.outputs, c)
		l.ttfts = append(l.ttfts, *s.TTFTMS/1000)
		l.errors = append(l.errors, "")
		vals["ttft"] = append(vals["ttft"], *s.TTFTMS)
		vals["e2el"] = append(vals["e2el"], s.E2EMS)
		if c > 1 {
			vals["tpot"] = append(vals["tpot"], (s.E2EMS-*s.TTFTMS)/float64(c-1))
		}
	}
	return l, vals, in, out
}

func writeTotals(o *ordered, lp *report.LoadPoint, in, out int) {
	o.add("total_input_tokens", in)
	o.add("total_output_tokens", out)
	if lp.DurationS > 0 {
		o.add("request_throughput", float64(lp.Succeeded)/lp.DurationS)
		o.add("output_throughput", float64(out)/lp.DurationS)
		o.add("total_token_throughput", float64(in+out)/lp.DurationS)
	}
}

// statTotal is the sum of a statistic's values (mean × count), rounded.
func statTotal(s report.Stat) int {
	if s.Mean == nil {
		return 0
	}
	return int(math.Round(*s.Mean * float64(s.Count)))
}

// sampleKeys writes vLLM's summary of values: numpy's mean, median,
// population std and linear-interpolation percentiles.
func sampleKeys(o *ordered, name string, values []float64) {
	if len(values) == 0 {
		return
	}
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	mean := 0.0
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	ss := 0.0
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	o.add("mean_"+name+"_ms", mean)
	o.add("median_"+name+"_ms", linear(v, 50))
	o.add("std_"+name+"_ms", math.Sqrt(ss/float64(len(v))))
	for _, p := range vLLMPercentiles {
		o.add(fmt.Sprintf("p%g_%s_ms", p, name), linear(v, p))
	}
}

// statKeys writes a tollgate statistic under vLLM's keys: its mean, p50
// as the median, its percentiles; no std.
func statKeys(o *ordered, name string, s report.Stat) {
	if s.Count == 0 {
		return
	}
	put := func(k string, v *float64) {
		if v != nil {
			o.add(k, *v)
		}
	}
	put("mean_"+name+"_ms", s.Mean)
	put("median_"+name+"_ms", s.P50)
	for _, p := range vLLMPercentiles {
		put(fmt.Sprintf("p%g_%s_ms", p, name), s.Field(fmt.Sprintf("p%g", p)))
	}
}

// linear is numpy.percentile(sorted, p) with its default linear
// interpolation between the two nearest ranks.
func linear(sorted []float64, p float64) float64 {
	k := float64(len(sorted)-1) * p / 100
	lo := int(math.Floor(k))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(k-float64(lo))
}
