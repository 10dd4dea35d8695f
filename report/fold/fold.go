// Package fold computes a report's figures from what was measured: it
// turns recorded requests into a phase's figures, one Add per request, one
// Close per slice (vegeta's Add/Close); Merge joins the reports of a
// sharded run's shards; Repeat summarises the reports of a scenario's
// repetitions (run --repeat-runs N). The run, tollgate merge and the union
// of shards' samples all fold through it, so a figure has one formula: a
// merge of one shard reproduces the shard's own report number for number,
// and N shards equal one fold over their union. Package report holds the
// data these produce, not their arithmetic.
//
// Every distribution is a stats.Histogram (bounded memory, exact up to
// stats.ExactLimit values, mergeable exactly); which distributions there
// are is report.Metrics.
package fold

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/stats"
)

// MaxErrorExamples caps the failed requests quoted per class.
const MaxErrorExamples = 3

// ErrNoHistogram marks a saved distribution that cannot be merged: it has
// no histogram (the report is not a shard's) or one that disagrees with it.
var ErrNoHistogram = errors.New("a distribution has no usable histogram")

// Options tune a fold.
type Options struct {
	// Histograms keeps each distribution's histogram in the report (shard
	// reports and merges), so that it can be merged later.
	Histograms bool
	// PromptTolerance, when set, holds each request's prompt_tokens against
	// the size it was built for (target_prompt_tokens): a warning counts
	// the requests beyond it.
	PromptTolerance func(target int) int
}

// Slice folds the requests of one slice of a phase (the phase, a prompt
// size, a variant, a turn) into ServingMetrics. It is not safe for
// concurrent use.
type Slice struct {
	opt          Options
	requests, ok int
	errCount     int
	retries      int
	staleRetries int
	coalesced    int                // successful requests' coalesced_events
	ttftCoal     int                // successful requests with ttft_coalesced
	hists        []*stats.Histogram // by report.Metrics row
	server       *serverSlice
	sources      map[string]int
	clocks       map[string]int
	byClass      map[string]int
	examples     []report.RequestError
	warnings     []string // merged in from saved slices
	// prompt sizes against their targets: checked, beyond tolerance, and
	// the range of prompt − target.
	promptChecked, promptMisses int
	promptDevMin, promptDevMax  int
}

// New returns an empty slice.
func New(opt Options) *Slice {
	s := &Slice{opt: opt, sources: map[string]int{}, clocks: map[string]int{}, byClass: map[string]int{},
		hists: make([]*stats.Histogram, len(report.Metrics))}
	for i := range s.hists {
		s.hists[i] = stats.New()
	}
	for _, c := range report.ErrorClasses {
		s.byClass[c] = 0
	}
	return s
}

// Requests and Errors are the counts so far (progress, error budgets).
func (s *Slice) Requests() int { return s.requests }

// Errors is the failed requests so far.
func (s *Slice) Errors() int { return s.errCount }

// Histogram is the distribution of a metric of report.Metrics so far
// (nil for an unknown key); callers must not change it.
func (s *Slice) Histogram(key string) *stats.Histogram {
	for i, m := range report.Metrics {
		if m.Key == key {
			return s.hists[i]
		}
	}
	return nil
}

// Add records one request. Failed requests count toward errors only: their
// partial timings would bias latency low (a fast 500 is not a fast answer).
// name identifies the request in error examples.
func (s *Slice) Add(r *report.RequestSample, name string) {
	s.requests++
	s.retries += r.Retries
	s.staleRetries += r.StaleConnectionRetries
	if r.Error != nil {
		s.errCount++
		s.byClass[r.Error.Class]++
		if s.byClass[r.Error.Class] <= MaxErrorExamples {
			s.examples = append(s.examples, report.RequestError{Class: r.Error.Class, Status: r.Error.Status, Message: r.Error.Message, Request: name})
		}
		return
	}
	s.ok++
	for i, m := range report.Metrics {
		// Values a histogram refuses (negative, NaN) cannot come from the
		// client's own arithmetic; the histogram counts and drops them.
		if m.Values != nil {
			for _, v := range m.Values(r) {
				_ = s.hists[i].Add(v)
			}
		} else if v, ok := m.Value(r); ok {
			_ = s.hists[i].Add(v)
		}
	}
	if t := r.TargetPromptTokens; t > 0 && r.PromptTokens != nil && s.opt.PromptTolerance != nil {
		d := *r.PromptTokens - t
		if s.promptChecked == 0 || d < s.promptDevMin {
			s.promptDevMin = d
		}
		if s.promptChecked == 0 || d > s.promptDevMax {
			s.promptDevMax = d
		}
		s.promptChecked++
		if tol := s.opt.PromptTolerance(t); d > tol || -d > tol {
			s.promptMisses++
		}
	}
	if t := r.Server; t != nil {
		if s.server == nil {
			s.server = newServerSlice(t.Source)
		}
		s.server.add(t)
	}
	if r.TokenCountSource != "" {
		s.sources[r.TokenCountSource]++
	}
	if r.ArrivalClock != "" {
		s.clocks[r.ArrivalClock]++
	}
	s.coalesced += r.CoalescedEvents
	if r.TTFTCoalesced {
		s.ttftCoal++
	}
}

// Merge adds a saved slice (a shard's) whose distributions kept their
// histograms; label prefixes its warnings ("shard 1").
func (s *Slice) Merge(m *report.ServingMetrics, label string) error {
	if m == nil {
		return nil
	}
	s.requests += m.Requests
	s.ok += m.Succeeded
	s.retries += m.Retries
	s.staleRetries += m.StaleConnectionRetries
	s.coalesced += m.CoalescedEvents
	s.ttftCoal += m.TTFTCoalesced
	s.errCount += m.Errors.Count
	for k, v := range m.Errors.ByClass {
		s.byClass[k] += v
	}
	examples := map[string]int{}
	for _, e := range s.examples {
		examples[e.Class]++
	}
	for _, e := range m.Errors.Examples {
		if examples[e.Class] < MaxErrorExamples {
			examples[e.Class]++
			s.examples = append(s.examples, e)
		}
	}
	for i, row := range report.Metrics {
		if err := mergeInto(s.hists[i], *row.Stat(m)); err != nil {
			return fmt.Errorf("%s: %w", row.Key, err)
		}
	}
	if m.TokenCountSource != "" {
		s.sources[m.TokenCountSource]++
	}
	if m.ArrivalClock != "" {
		s.clocks[m.ArrivalClock]++
	}
	for _, w := range m.Warnings {
		if label != "" {
			w = label + ": " + w
		}
		if !slices.Contains(s.warnings, w) {
			s.warnings = append(s.warnings, w)
		}
	}
	if sr := m.Server; sr != nil {
		if s.server == nil {
			s.server = newServerSlice(sr.Source)
		}
		if err := s.server.merge(sr); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	return nil
}

// mergeInto adds a saved distribution to h through its histogram.
func mergeInto(h *stats.Histogram, st report.Stat) error {
	if st.Count == 0 {
		return nil
	}
	if st.Histogram == nil {
		return fmt.Errorf("%w (the report is not a shard's, or was edited)", ErrNoHistogram)
	}
	if st.Histogram.Count() != int64(st.Count) {
		return fmt.Errorf("%w: its count %d disagrees with its histogram's %d", ErrNoHistogram, st.Count, st.Histogram.Count())
	}
	h.Merge(st.Histogram)
	return nil
}

func (s *Slice) stat(h *stats.Histogram) report.Stat {
	if s.opt.Histograms {
		return report.StatWithHistogram(h)
	}
	return report.StatFrom(h)
}

// Close is the slice's figures. The slice may go on adding afterwards; a
// later Close includes them.
func (s *Slice) Close() *report.ServingMetrics {
	byClass := make(map[string]int, len(s.byClass))
	for k, v := range s.byClass {
		byClass[k] = v
	}
	m := &report.ServingMetrics{
		Requests:               s.requests,
		Succeeded:              s.ok,
		Errors:                 report.ErrorSummary{Count: s.errCount, ByClass: byClass, Examples: slices.Clone(s.examples)},
		Warnings:               append([]string{}, s.warnings...),
		Retries:                s.retries,
		StaleConnectionRetries: s.staleRetries,
		CoalescedEvents:        s.coalesced,
		TTFTCoalesced:          s.ttftCoal,
	}
	for i, row := range report.Metrics {
		*row.Stat(m) = s.stat(s.hists[i])
	}
	if s.requests > 0 {
		m.Errors.Rate = report.F(float64(s.errCount) / float64(s.requests))
	}
	if s.server != nil {
		m.Server = s.server.close(s.stat)
	}
	if s.promptMisses > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("prompt size: %d of %d requests' prompts missed their target by more than max(4 tokens, 0.5 %%) by the server's count (prompt_tokens − target from %+d to %+d)",
			s.promptMisses, s.promptChecked, s.promptDevMin, s.promptDevMax))
	}
	m.TokenCountSource = single(s.sources)
	m.ArrivalClock = single(s.clocks)
	return m
}

// single is the one key of a tally, "mixed" for several, "" for none.
func single(tally map[string]int) string {
	switch len(tally) {
	case 0:
		return ""
	case 1:
		for k := range tally {
			return k
		}
	}
	return "mixed"
}

// serverSlice folds a server's own per-request figures (report.ServerTimingMetrics).
type serverSlice struct {
	source string
	n      int
	hists  []*stats.Histogram
}

func newServerSlice(source string) *serverSlice {
	s := &serverSlice{source: source, hists: make([]*stats.Histogram, len(report.ServerTimingMetrics))}
	for i := range s.hists {
		s.hists[i] = stats.New()
	}
	return s
}

func (s *serverSlice) add(t *report.ServerTimings) {
	s.n++
	for i, m := range report.ServerTimingMetrics {
		if v, ok := m.Value(t); ok {
			_ = s.hists[i].Add(v)
		}
	}
}

func (s *serverSlice) merge(r *report.ServerReported) error {
	s.n += r.Requests
	for i, m := range report.ServerTimingMetrics {
		if err := mergeInto(s.hists[i], *m.Stat(r)); err != nil {
			return fmt.Errorf("%s: %w", m.Key, err)
		}
	}
	return nil
}

func (s *serverSlice) close(stat func(*stats.Histogram) report.Stat) *report.ServerReported {
	out := &report.ServerReported{Source: s.source, Requests: s.n}
	for i, m := range report.ServerTimingMetrics {
		*m.Stat(out) = stat(s.hists[i])
	}
	return out
}

// WithoutHistograms copies serving metrics without their histograms (the
// per-shard figures of a merge).
func WithoutHistograms(m *report.ServingMetrics) *report.ServingMetrics {
	if m == nil {
		return nil
	}
	c := *m
	for _, row := range report.Metrics {
		row.Stat(&c).Histogram = nil
	}
	if m.Server != nil {
		sr := *m.Server
		for _, row := range report.ServerTimingMetrics {
			row.Stat(&sr).Histogram = nil
		}
		c.Server = &sr
	}
	return &c
}

// Speedups sets each prefix-cache variant's speedup: fresh ttft_ms.p50 ÷
// the variant's ttft_ms.p50 (absent without both, or at a p50 of 0).
func Speedups(variants map[string]*report.Point) {
	fresh := variants[report.VariantFresh]
	if fresh == nil || fresh.ServingMetrics == nil || fresh.TTFTMS.P50 == nil {
		return
	}
	for k, v := range variants {
		if k != report.VariantFresh && v.ServingMetrics != nil && v.TTFTMS.P50 != nil && *v.TTFTMS.P50 > 0 {
			v.Speedup = report.F(*fresh.TTFTMS.P50 / *v.TTFTMS.P50)
		}
	}
}
