package fold

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

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
//
// Before merging it checks that the shards are one run (see checkSet and
// checkWindows: the same run_id and start_at, windows that overlap and
// are in order, none before start_at), else ErrMerge. A shard that began
// its first load point more than opt.MaxStartLateness after start_at
// makes the merge's measurement invalid: it is merged all the same, with
// a report.InvalidShardLate finding under invalid and the status error.
func Merge(shards []*report.Report, files []string, opt MergeOptions) (*report.Report, error) {
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
	if err := checkWindows(byIndex, names); err != nil {
		return nil, err
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
	out.Invalid = append(shardFindings(byIndex, names), lateShards(byIndex, names, opt.MaxStartLateness)...)
	if len(out.Invalid) > 0 {
		out.Status = report.StatusError
	}
	if out.Incomplete {
		out.Status = report.StatusIncomplete
	}
	return out, nil
}

// MergeOptions are what Merge accepts of the shards' start.
type MergeOptions struct {
	// MaxStartLateness is how long after the shared start_at a shard may
	// begin its first load point before the merge's measurement is
	// invalid. The zero value accepts no lateness at all.
	MaxStartLateness time.Duration
}

// DefaultMaxStartLateness is the lateness tollgate merge accepts unless
// told otherwise. A shard on time waits for start_at and records 0; the
// clocks of hosts kept by NTP agree within about 10 ms. 100 ms is ten
// times that, and about one time to first token of a loaded server: a
// shard later than that has missed enough of its open-loop arrivals (5
// of them at 200 req/s over 4 shards) that sending them late, at once,
// shows in the latencies measured. It is an absolute bound, not a share
// of the phase's duration: the burst a late shard sends grows with the
// rate and the lateness, not with how long the phase runs.
const DefaultMaxStartLateness = 100 * time.Millisecond

// shardFindings are the shards' own findings (a shard whose client sent
// late): the union holds that shard's requests, so what made its
// measurement untrustworthy makes the merge's so too.
func shardFindings(byIndex []*report.Report, names []string) []report.Invalidity {
	var out []report.Invalidity
	for i, r := range byIndex {
		for _, f := range r.Invalid {
			f.Message = fmt.Sprintf("shard %d (%s): %s", i, names[i], f.Message)
			out = append(out, f)
		}
	}
	return out
}

// lateShards is a finding for each shard that began later than max after
// start_at.
func lateShards(byIndex []*report.Report, names []string, bound time.Duration) []report.Invalidity {
	var out []report.Invalidity
	for i, r := range byIndex {
		late := r.Shard.StartLatenessMS
		if r.Shard.StartAt == nil || late == nil || *late <= float64(bound)/float64(time.Millisecond) {
			continue
		}
		out = append(out, report.Invalidity{Reason: report.InvalidShardLate, Path: fmt.Sprintf("/shards/%d/start_lateness_ms", i),
			Message: fmt.Sprintf("shard %d (%s, host %s) began its first load point %.0f ms after start_at %s, more than the %s a merge accepts: "+
				"the shards did not load the server together (an open loop's missed arrivals went out late, at once); "+
				"start the shards with more lead, or accept it with tollgate merge --max-start-lateness",
				i, names[i], r.Shard.Host, *late, r.Shard.StartAt.UTC().Format(time.RFC3339Nano), bound)})
	}
	return out
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
		if r.Shard.RunID != f.Shard.RunID {
			errs = append(errs, fmt.Errorf("%s and %s are shards of different runs: shard.run_id %s and %s (give every shard of one run the same --run-id)",
				files[0], files[i], orNone(f.Shard.RunID), orNone(r.Shard.RunID)))
		}
		if a, b := f.Shard.StartAt, r.Shard.StartAt; (a == nil) != (b == nil) || (a != nil && !a.Equal(*b)) {
			errs = append(errs, fmt.Errorf("%s and %s are shards of different runs: shard.start_at %s and %s (every shard of one run is given the same --start-at)",
				files[0], files[i], timeOrNone(a), timeOrNone(b)))
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

func orNone(id string) string {
	if id == "" {
		return "(none)"
	}
	return strconv.Quote(id)
}

func timeOrNone(t *time.Time) string {
	if t == nil {
		return "(none)"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// windowSlack is how far apart the windows of one load point on two
// shards may be, on their own clocks, and still be one run: a second,
// plus how far the shards' clocks are known to disagree.
const windowSlack = time.Second

// checkWindows refuses load points whose windows cannot be one run's: a
// window out of order or of no length, a first send before the shared
// start_at, or shards whose windows of one point do not overlap (by more
// than windowSlack and the spread of their clock offsets): they did not
// load the server at the same time. byIndex is in shard order.
func checkWindows(byIndex []*report.Report, names []string) error {
	var errs []error
	slack := windowSlack + clockSpread(byIndex)
	first := byIndex[0]
	for _, run := range first.RunOrder {
		for _, ph := range first.Runs[run].PhaseOrder {
			base := first.Runs[run].Phases[ph]
			if base == nil {
				continue
			}
			for j := range base.Points {
				var ws []*report.Window
				var who []int
				for i, r := range byIndex {
					rr := r.Runs[run]
					if rr == nil || rr.Phases[ph] == nil || j >= len(rr.Phases[ph].Points) {
						continue // said by Merge
					}
					w := rr.Phases[ph].Points[j].Window
					if w == nil {
						continue
					}
					where := fmt.Sprintf("%s: /runs/%s/phases/%s/points/%d/window", names[i], run, ph, j)
					switch {
					case w.LastSend.Before(w.FirstSend) || w.LastEnd.Before(w.LastSend):
						errs = append(errs, fmt.Errorf("%s is out of order (first_send %s, last_send %s, last_end %s)", where, ts(w.FirstSend), ts(w.LastSend), ts(w.LastEnd)))
						continue
					case w.Sent > 0 && !w.LastEnd.After(w.FirstSend):
						errs = append(errs, fmt.Errorf("%s has no length (first_send = last_end = %s) for %d requests sent", where, ts(w.FirstSend), w.Sent))
						continue
					case r.Shard.StartAt != nil && w.FirstSend.Before(*r.Shard.StartAt):
						errs = append(errs, fmt.Errorf("%s: first_send %s is before shard.start_at %s: a shard sends nothing before the shared start", where, ts(w.FirstSend), ts(*r.Shard.StartAt)))
						continue
					}
					ws, who = append(ws, w), append(who, i)
				}
				if err := overlap(ws, who, names, slack, fmt.Sprintf("%s/%s point %d", run, ph, j)); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrMerge, errors.Join(errs...))
	}
	return nil
}

// overlap refuses windows of one point that do not all share an instant,
// within slack: the one that starts latest against the one that ends
// earliest.
func overlap(ws []*report.Window, who []int, names []string, slack time.Duration, point string) error {
	if len(ws) < 2 {
		return nil
	}
	late, early := 0, 0
	for k, w := range ws {
		if w.FirstSend.After(ws[late].FirstSend) {
			late = k
		}
		if w.LastEnd.Before(ws[early].LastEnd) {
			early = k
		}
	}
	gap := ws[late].FirstSend.Sub(ws[early].LastEnd)
	if gap <= slack {
		return nil
	}
	return fmt.Errorf("%s and %s are not shards of one run: their windows of %s do not overlap (first_send %s is %s after last_end %s): they did not load the server together",
		names[who[early]], names[who[late]], point, ts(ws[late].FirstSend), gap.Round(time.Millisecond), ts(ws[early].LastEnd))
}

// clockSpread is how far apart the shards' measured clock offsets are,
// uncertainties included; 0 when fewer than two measured them.
func clockSpread(byIndex []*report.Report) time.Duration {
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for _, r := range byIndex {
		off, unc := r.Shard.ClockOffsetMS, r.Shard.ClockOffsetUncertaintyMS
		if off == nil || unc == nil {
			continue
		}
		lo, hi, n = min(lo, *off-*unc), max(hi, *off+*unc), n+1
	}
	if n < 2 {
		return 0
	}
	return time.Duration((hi - lo) * float64(time.Millisecond))
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

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
