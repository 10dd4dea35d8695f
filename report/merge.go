package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/stats"
)

// ErrMerge marks shard reports that cannot be merged: not shards, of
// another scenario, a duplicate or missing index, a distribution without
// its histogram.
var ErrMerge = errors.New("cannot merge")

// Merge combines the reports of the shards of one sharded run (tollgate
// run --shard I/N) into the report one process sending the whole load
// would have written. files name the reports in errors and in shards.
//
// Counts add; every distribution is the exact merge of the shards'
// histograms (so its statistics are those of the union of the samples:
// exact up to 1,024 samples, within 0.05 % beyond); rates and throughput
// are recomputed over the union of the shards' windows (first send of any
// shard → last completion of any). Each merged load point keeps the
// shards' own figures under the phase's shards. Phases only shard 0 ran
// are shard 0's. Samples are concatenated, in point and index order. The
// result is not gated: tollgate judge gates it.
func Merge(shards []*Report, files []string) (*Report, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("%w: no shard reports given", ErrMerge)
	}
	if err := checkSet(shards, files); err != nil {
		return nil, err
	}
	order := make([]int, len(shards)) // positions by shard index
	for pos, r := range shards {
		order[r.Shard.Index] = pos
	}
	byIndex := make([]*Report, len(shards))
	names := make([]string, len(shards))
	for i, pos := range order {
		byIndex[i], names[i] = shards[pos], files[pos]
	}
	first := byIndex[0]
	out := &Report{}
	if err := deepCopy(first, out); err != nil {
		return nil, err
	}
	out.Shard, out.Gates, out.Repetitions = nil, []GateResult{}, nil
	out.Status = StatusNotGated
	for i, r := range byIndex {
		info := *r.Shard
		info.File = names[i]
		out.Shards = append(out.Shards, info)
		if r.StartedAt.Before(out.StartedAt) {
			out.StartedAt = r.StartedAt
		}
		if r.EndedAt.After(out.EndedAt) {
			out.EndedAt = r.EndedAt
		}
		out.Incomplete = out.Incomplete || r.Incomplete
	}
	for _, name := range first.RunOrder {
		run := out.Runs[name]
		if run == nil {
			continue
		}
		var errs []string
		for i, r := range byIndex {
			rr := r.Runs[name]
			if rr == nil {
				return nil, fmt.Errorf("%w: %s has no run %q (shard 0 has)", ErrMerge, names[i], name)
			}
			if rr.Status != "ok" {
				run.Status = mergedStatus(run.Status, rr.Status)
				errs = append(errs, fmt.Sprintf("shard %d: %s", i, rr.Error))
			}
		}
		if len(errs) > 0 {
			run.Error = strings.Join(errs, "; ")
			out.Status = StatusError
		}
		for _, ph := range first.Runs[name].PhaseOrder {
			var parts []*Phase
			var idx []int
			for i, r := range byIndex {
				if p := r.Runs[name].Phases[ph]; p != nil {
					parts, idx = append(parts, p), append(idx, i)
				}
			}
			if len(parts) == 1 && len(byIndex) > 1 {
				continue // shard 0's alone (a phase only shard 0 runs), as copied
			}
			m, err := mergePhase(parts, idx, byIndex, run.Target.Kind)
			if err != nil {
				return nil, fmt.Errorf("%w: run %s, phase %s: %w", ErrMerge, name, ph, err)
			}
			run.Phases[ph] = m
		}
	}
	if out.Incomplete {
		out.Status = StatusIncomplete
	}
	return out, nil
}

func mergedStatus(a, b string) string {
	if a == StatusError || b == StatusError {
		return StatusError
	}
	return b
}

// checkSet refuses a set that is not every shard of one run exactly once.
func checkSet(shards []*Report, files []string) error {
	var errs []error
	for i, r := range shards {
		if r.Shard == nil {
			errs = append(errs, fmt.Errorf("%s is not a shard report (it has no shard: write shards with tollgate run --shard I/N)", files[i]))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrMerge, errors.Join(errs...))
	}
	f, n := shards[0], shards[0].Shard.Count
	seen := map[int]string{}
	for i, r := range shards {
		if r.SchemaVersion != f.SchemaVersion {
			errs = append(errs, fmt.Errorf("%s is schema_version %d, %s is %d", files[i], r.SchemaVersion, files[0], f.SchemaVersion))
		}
		if r.Scenario.SHA256 != f.Scenario.SHA256 || r.Scenario.Name != f.Scenario.Name {
			diff := IdentityDiff(f.Scenario, r.Scenario, files[0], files[i])
			if r.Scenario.Name != f.Scenario.Name {
				diff = append([]string{fmt.Sprintf("name (%q, %q)", f.Scenario.Name, r.Scenario.Name)}, diff...)
			}
			errs = append(errs, fmt.Errorf("%s and %s are shards of different scenarios (they differ in: %s)", files[0], files[i], strings.Join(diff, "; ")))
		}
		if r.Shard.Count != n {
			errs = append(errs, fmt.Errorf("%s is shard %d of %d, but %s is of %d", files[i], r.Shard.Index, r.Shard.Count, files[0], n))
			continue
		}
		if r.Shard.Index < 0 || r.Shard.Index >= n {
			errs = append(errs, fmt.Errorf("%s: shard index %d out of 0..%d", files[i], r.Shard.Index, n-1))
			continue
		}
		if prev, ok := seen[r.Shard.Index]; ok {
			errs = append(errs, fmt.Errorf("shard %d is given twice: %s and %s", r.Shard.Index, prev, files[i]))
		}
		seen[r.Shard.Index] = files[i]
	}
	if len(errs) == 0 {
		var missing []string
		for i := range n {
			if _, ok := seen[i]; !ok {
				missing = append(missing, strconv.Itoa(i))
			}
		}
		if len(missing) > 0 {
			errs = append(errs, fmt.Errorf("shard %s of %d missing (got %d reports)", strings.Join(missing, ", "), n, len(shards)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrMerge, errors.Join(errs...))
	}
	return nil
}

func deepCopy(in, out *Report) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("merge: copying: %w", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("merge: copying: %w", err)
	}
	return nil
}

// mergePhase merges one phase every listed shard ran.
func mergePhase(parts []*Phase, idx []int, shards []*Report, targetKind string) (*Phase, error) {
	base := parts[0]
	// Shard 0's phase, for what is not merged (calibration, server
	// metrics, a dataset's description, …); the rest is replaced below.
	c := *base
	m := &c
	m.Points, m.Samples, m.Shards = nil, nil, nil
	var err error
	sm := make([]*ServingMetrics, len(parts))
	for i, p := range parts {
		sm[i] = p.ServingMetrics
	}
	if m.ServingMetrics, err = mergeServing(sm, idx); err != nil {
		return nil, err
	}
	if m.ServingMetrics != nil && base.ServerMetrics != nil {
		m.Warnings = append(m.Warnings, "server_metrics are shard 0's scrapes: every shard scraped the same server over its own window, so they are not added")
	}
	if m.ByPromptTokens, err = mergeSlices(parts, idx, func(p *Phase) map[string]*Point { return p.ByPromptTokens }); err != nil {
		return nil, err
	}
	if m.Variants, err = mergeSlices(parts, idx, func(p *Phase) map[string]*Point { return p.Variants }); err != nil {
		return nil, err
	}
	if fresh := m.Variants["fresh"]; fresh != nil && fresh.ServingMetrics != nil && fresh.TTFTMS.P50 != nil {
		for k, v := range m.Variants {
			if k != "fresh" && v.ServingMetrics != nil && v.TTFTMS.P50 != nil && *v.TTFTMS.P50 > 0 {
				v.Speedup = F(*fresh.TTFTMS.P50 / *v.TTFTMS.P50)
			}
		}
	}
	if len(base.Points) > 0 {
		for i, p := range parts {
			if len(p.Points) != len(base.Points) {
				return nil, fmt.Errorf("shard %d has %d load points, shard %d has %d", idx[i], len(p.Points), idx[0], len(base.Points))
			}
		}
		for j := range base.Points {
			lps := make([]*LoadPoint, len(parts))
			for i, p := range parts {
				lps[i] = p.Points[j]
			}
			lp, err := mergePoint(lps, idx)
			if err != nil {
				return nil, fmt.Errorf("point %d: %w", j, err)
			}
			m.Points = append(m.Points, lp)
		}
	}
	for i, p := range parts {
		host := shards[idx[i]].Shard.Host
		sp := &ShardPhase{Index: idx[i], Host: host}
		if len(p.Points) > 0 {
			for _, lp := range p.Points {
				c := *lp
				c.ServingMetrics = withoutHistograms(lp.ServingMetrics)
				c.QueueMS.Histogram = nil
				c.Window = nil
				sp.Points = append(sp.Points, &c)
			}
		} else {
			sp.ServingMetrics = withoutHistograms(p.ServingMetrics)
		}
		m.Shards = append(m.Shards, sp)
	}
	if err := mergeSamples(m, parts, targetKind); err != nil {
		return nil, err
	}
	return m, nil
}

// mergeSlices merges a breakdown (prompt sizes, variants) key by key.
func mergeSlices(parts []*Phase, idx []int, get func(*Phase) map[string]*Point) (map[string]*Point, error) {
	var keys []string
	for _, p := range parts {
		for k := range get(p) {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	out := map[string]*Point{}
	for _, k := range keys {
		var sm []*ServingMetrics
		var ix []int
		target := 0
		for i, p := range parts {
			if pt := get(p)[k]; pt != nil {
				sm, ix = append(sm, pt.ServingMetrics), append(ix, idx[i])
				target = pt.TargetPromptTokens
			}
		}
		m, err := mergeServing(sm, ix)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = &Point{ServingMetrics: m, TargetPromptTokens: target}
	}
	return out, nil
}

// mergeStat merges distributions through their histograms.
func mergeStat(list ...Stat) (Stat, error) {
	h := stats.New()
	for _, s := range list {
		if s.Count == 0 {
			continue
		}
		if s.Histogram == nil {
			return Stat{}, errors.New("a distribution has no histogram (the report is not a shard's, or was edited)")
		}
		if s.Histogram.Count() != int64(s.Count) {
			return Stat{}, fmt.Errorf("a distribution's count %d disagrees with its histogram's %d", s.Count, s.Histogram.Count())
		}
		h.Merge(s.Histogram)
	}
	return StatWithHistogram(h), nil
}

// sumOf is the exact sum of a distribution (0 when empty).
func sumOf(s Stat) float64 {
	if s.Histogram == nil {
		return 0
	}
	return s.Histogram.Sum()
}

// mergeServing adds the serving metrics of the shards (nil entries skipped).
func mergeServing(list []*ServingMetrics, idx []int) (*ServingMetrics, error) {
	var ms []*ServingMetrics
	var ix []int
	for i, m := range list {
		if m != nil {
			ms, ix = append(ms, m), append(ix, idx[i])
		}
	}
	if len(ms) == 0 {
		return nil, nil
	}
	out := &ServingMetrics{Errors: ErrorSummary{ByClass: map[string]int{}}, Warnings: []string{}}
	examples := map[string]int{}
	sources, clocks := map[string]bool{}, map[string]bool{}
	stats := map[string][]Stat{}
	keys := []string{"ttfb_ms", "ttft_ms", "e2e_ms", "decode_tokens_per_s", "tpot_ms", "itl_ms", "prefill_tokens_per_s",
		"prompt_tokens", "completion_tokens", "cached_tokens", "sse_token_events", "connect_ms", "request_write_ms",
		"ttfo_ms", "reasoning_tokens", "reasoning_tokens_per_s", "answer_tokens_per_s"}
	var servers []*ServerReported
	for i, m := range ms {
		out.Requests += m.Requests
		out.Succeeded += m.Succeeded
		out.Retries += m.Retries
		out.StaleConnectionRetries += m.StaleConnectionRetries
		out.Errors.Count += m.Errors.Count
		for k, v := range m.Errors.ByClass {
			out.Errors.ByClass[k] += v
		}
		for _, e := range m.Errors.Examples {
			if examples[e.Class] < 3 {
				examples[e.Class]++
				out.Errors.Examples = append(out.Errors.Examples, e)
			}
		}
		for j, s := range m.stats() {
			stats[keys[j]] = append(stats[keys[j]], *s)
		}
		if m.TokenCountSource != "" {
			sources[m.TokenCountSource] = true
		}
		if m.ArrivalClock != "" {
			clocks[m.ArrivalClock] = true
		}
		for _, w := range m.Warnings {
			if w := fmt.Sprintf("shard %d: %s", ix[i], w); !slices.Contains(out.Warnings, w) {
				out.Warnings = append(out.Warnings, w)
			}
		}
		if m.Server != nil {
			servers = append(servers, m.Server)
		}
	}
	for j, dst := range out.stats() {
		s, err := mergeStat(stats[keys[j]]...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", keys[j], err)
		}
		*dst = s
	}
	if out.Requests > 0 {
		out.Errors.Rate = F(float64(out.Errors.Count) / float64(out.Requests))
	}
	out.TokenCountSource, out.ArrivalClock = one(sources), one(clocks)
	if len(servers) > 0 {
		sr := &ServerReported{Source: servers[0].Source}
		parts := map[int][]Stat{}
		for _, s := range servers {
			sr.Requests += s.Requests
			for j, st := range s.stats() {
				parts[j] = append(parts[j], *st)
			}
		}
		for j, dst := range sr.stats() {
			s, err := mergeStat(parts[j]...)
			if err != nil {
				return nil, fmt.Errorf("server: %w", err)
			}
			*dst = s
		}
		out.Server = sr
	}
	return out, nil
}

func (m *ServingMetrics) stats() []*Stat {
	return []*Stat{&m.TTFBMS, &m.TTFTMS, &m.E2EMS, &m.DecodeTokensPerS, &m.TPOTMS, &m.ITLMS, &m.PrefillTokensPerS,
		&m.PromptTokens, &m.CompletionTokens, &m.CachedTokens, &m.SSETokenEvents, &m.ConnectMS, &m.RequestWriteMS,
		&m.TTFOMS, &m.ReasoningTokens, &m.ReasoningTokensPerS, &m.AnswerTokensPerS}
}

func (s *ServerReported) stats() []*Stat {
	return []*Stat{&s.PromptMS, &s.PredictedMS, &s.PromptPerS, &s.PredictedPerS, &s.PredictedPerTokenMS, &s.CacheN}
}

// one is the single key of a set, "mixed" for several, "" for none.
func one(set map[string]bool) string {
	switch len(set) {
	case 0:
		return ""
	case 1:
		for k := range set {
			return k
		}
	}
	return "mixed"
}

// withoutHistograms copies serving metrics without their histograms, for
// the per-shard figures.
func withoutHistograms(m *ServingMetrics) *ServingMetrics {
	if m == nil {
		return nil
	}
	c := *m
	for _, s := range c.stats() {
		s.Histogram = nil
	}
	if m.Server != nil {
		sr := *m.Server
		for _, s := range sr.stats() {
			s.Histogram = nil
		}
		c.Server = &sr
	}
	return &c
}

// mergePoint merges one load point of every shard and recomputes its
// rates over the union of the shards' windows.
func mergePoint(lps []*LoadPoint, idx []int) (*LoadPoint, error) {
	sm := make([]*ServingMetrics, len(lps))
	queues := make([]Stat, len(lps))
	out := &LoadPoint{}
	var w *Window
	good, haveGood := 0, false
	var slo map[string]float64
	for i, lp := range lps {
		sm[i], queues[i] = lp.ServingMetrics, lp.QueueMS
		out.Concurrency += lp.Concurrency
		out.Rate += lp.Rate
		out.PeakInFlight += lp.PeakInFlight
		if lp.Goodput != nil {
			good += lp.Goodput.GoodRequests
			haveGood, slo = true, lp.Goodput.SLO
		}
		if lp.Window == nil {
			if lp.Requests > 0 {
				return nil, fmt.Errorf("shard %d's point has requests but no window (not a shard report?)", idx[i])
			}
			continue
		}
		if w == nil {
			c := *lp.Window
			w = &c
			continue
		}
		w.FirstSend = minTime(w.FirstSend, lp.Window.FirstSend)
		w.LastSend = maxTime(w.LastSend, lp.Window.LastSend)
		w.LastEnd = maxTime(w.LastEnd, lp.Window.LastEnd)
		w.Sent += lp.Window.Sent
		w.E2ESumMS += lp.Window.E2ESumMS
	}
	var err error
	if out.ServingMetrics, err = mergeServing(sm, idx); err != nil {
		return nil, err
	}
	if out.QueueMS, err = mergeStat(queues...); err != nil {
		return nil, fmt.Errorf("queue_ms: %w", err)
	}
	out.Window = w
	if w != nil {
		dur := w.LastEnd.Sub(w.FirstSend).Seconds()
		out.DurationS = dur
		if span := w.LastSend.Sub(w.FirstSend).Seconds(); span > 0 && w.Sent > 1 {
			out.AchievedRatePerS = F(float64(w.Sent-1) / span)
		}
		if dur > 0 {
			prompt, output := sumOf(out.PromptTokens), sumOf(out.CompletionTokens)
			out.RequestThroughputPerS = F(float64(out.Succeeded) / dur)
			out.OutputTokensPerS = F(output / dur)
			out.TotalTokensPerS = F((prompt + output) / dur)
			out.AchievedConcurrency = F(w.E2ESumMS / 1000 / dur)
		}
		if haveGood {
			g := &Goodput{SLO: slo, GoodRequests: good}
			if dur > 0 {
				g.GoodRequestsPerS = F(float64(good) / dur)
			}
			if out.Requests > 0 {
				g.AttainedPct = F(100 * float64(good) / float64(out.Requests))
			}
			out.Goodput = g
		}
	}
	return out, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// mergeSamples concatenates the shards' request samples, ordered by point
// and then index.
func mergeSamples(m *Phase, parts []*Phase, targetKind string) error {
	var all []RequestSample
	have := false
	for _, p := range parts {
		rs, _, err := PhaseSamples(p, targetKind)
		if err != nil {
			return err
		}
		if rs != nil {
			have = true
		}
		all = append(all, rs...)
	}
	if !have {
		return nil
	}
	rank := map[string]int{}
	for _, s := range all {
		if _, ok := rank[s.Point]; !ok {
			rank[s.Point] = len(rank)
		}
	}
	// Each shard keeps its samples point after point, so the order in which
	// points first appear is the phase's.
	slices.SortStableFunc(all, func(a, b RequestSample) int {
		if c := cmp.Compare(rank[a.Point], rank[b.Point]); c != 0 {
			return c
		}
		return cmp.Compare(a.Index, b.Index)
	})
	m.Samples = all
	return nil
}
