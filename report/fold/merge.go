package fold

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
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
func Merge(shards []*report.Report, files []string) (*report.Report, error) {
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
	byIndex := make([]*report.Report, len(shards))
	names := make([]string, len(shards))
	for i, pos := range order {
		byIndex[i], names[i] = shards[pos], files[pos]
	}
	first := byIndex[0]
	out := &report.Report{}
	if err := deepCopy(first, out); err != nil {
		return nil, err
	}
	out.Shard, out.Gates, out.Repetitions = nil, []report.GateResult{}, nil
	out.Status = report.StatusNotGated
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
			out.Status = report.StatusError
		}
		for _, ph := range first.Runs[name].PhaseOrder {
			var parts []*report.Phase
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
		out.Status = report.StatusIncomplete
	}
	return out, nil
}

func mergedStatus(a, b string) string {
	if a == report.StatusError || b == report.StatusError {
		return report.StatusError
	}
	return b
}

// checkSet refuses a set that is not every shard of one run exactly once.
func checkSet(shards []*report.Report, files []string) error {
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
			diff := report.IdentityDiff(f.Scenario, r.Scenario, files[0], files[i])
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

func deepCopy(in, out *report.Report) error {
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
func mergePhase(parts []*report.Phase, idx []int, shards []*report.Report, targetKind string) (*report.Phase, error) {
	base := parts[0]
	// Shard 0's phase, for what is not merged (calibration, server
	// metrics, a dataset's description, …); the rest is replaced below.
	c := *base
	m := &c
	m.Points, m.Samples, m.Shards = nil, nil, nil
	var err error
	sm := make([]*report.ServingMetrics, len(parts))
	for i, p := range parts {
		sm[i] = p.ServingMetrics
	}
	if m.ServingMetrics, err = mergeServing(sm, idx); err != nil {
		return nil, err
	}
	if m.ServingMetrics != nil && base.ServerMetrics != nil {
		m.Warnings = append(m.Warnings, "server_metrics are shard 0's scrapes: every shard scraped the same server over its own window, so they are not added")
	}
	if m.ByPromptTokens, err = mergeSlices(parts, idx, func(p *report.Phase) map[string]*report.Point { return p.ByPromptTokens }); err != nil {
		return nil, err
	}
	if m.Variants, err = mergeSlices(parts, idx, func(p *report.Phase) map[string]*report.Point { return p.Variants }); err != nil {
		return nil, err
	}
	Speedups(m.Variants)
	if len(base.Points) > 0 {
		for i, p := range parts {
			if len(p.Points) != len(base.Points) {
				return nil, fmt.Errorf("shard %d has %d load points, shard %d has %d", idx[i], len(p.Points), idx[0], len(base.Points))
			}
		}
		for j := range base.Points {
			lps := make([]*report.LoadPoint, len(parts))
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
		sp := &report.ShardPhase{Index: idx[i], Host: host}
		if len(p.Points) > 0 {
			for _, lp := range p.Points {
				c := *lp
				c.ServingMetrics = WithoutHistograms(lp.ServingMetrics)
				c.QueueMS.Histogram = nil
				c.Window = nil
				sp.Points = append(sp.Points, &c)
			}
		} else {
			sp.ServingMetrics = WithoutHistograms(p.ServingMetrics)
		}
		m.Shards = append(m.Shards, sp)
	}
	if err := mergeSamples(m, parts, targetKind); err != nil {
		return nil, err
	}
	return m, nil
}

// mergeSlices merges a breakdown (prompt sizes, variants) key by key.
func mergeSlices(parts []*report.Phase, idx []int, get func(*report.Phase) map[string]*report.Point) (map[string]*report.Point, error) {
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
	out := map[string]*report.Point{}
	for _, k := range keys {
		var sm []*report.ServingMetrics
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
		out[k] = &report.Point{ServingMetrics: m, TargetPromptTokens: target}
	}
	return out, nil
}

// mergeServing folds the serving metrics of the shards (nil entries
// skipped) through one Slice, as the run folded them.
func mergeServing(list []*report.ServingMetrics, idx []int) (*report.ServingMetrics, error) {
	var s *Slice
	for i, m := range list {
		if m == nil {
			continue
		}
		if s == nil {
			s = New(Options{Histograms: true})
		}
		if err := s.Merge(m, fmt.Sprintf("shard %d", idx[i])); err != nil {
			return nil, err
		}
	}
	if s == nil {
		return nil, nil
	}
	return s.Close(), nil
}

// mergePoint folds one load point of every shard through one report.Point, which
// recomputes its rates over the union of the shards' windows.
func mergePoint(lps []*report.LoadPoint, idx []int) (*report.LoadPoint, error) {
	p := NewPoint(Options{Histograms: true}, nil)
	concurrency, rate := 0, 0.0
	for i, lp := range lps {
		concurrency += lp.Concurrency
		rate += lp.Rate
		if err := p.Merge(lp, fmt.Sprintf("shard %d", idx[i])); err != nil {
			return nil, err
		}
	}
	out := p.Close(true)
	out.Concurrency, out.Rate = concurrency, rate
	if out.Window == nil && out.Requests == 0 {
		out.Window = nil
	}
	return out, nil
}

// mergeSamples concatenates the shards' request samples, ordered by point
// and then index.
func mergeSamples(m *report.Phase, parts []*report.Phase, targetKind string) error {
	var all []report.RequestSample
	have := false
	for _, p := range parts {
		rs, _, err := report.PhaseSamples(p, targetKind)
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
	if len(parts) == 1 {
		m.Samples = all // one shard's, in its own order
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
	slices.SortStableFunc(all, func(a, b report.RequestSample) int {
		if c := cmp.Compare(rank[a.Point], rank[b.Point]); c != 0 {
			return c
		}
		return cmp.Compare(a.Index, b.Index)
	})
	m.Samples = all
	return nil
}
