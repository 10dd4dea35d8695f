package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/engine/load"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Shard is this process's part of a sharded run: shard Index of Count.
// Each load phase sends its share — open loop: every Count-th arrival of
// the one schedule at the full rate, starting at arrival Index, so the
// union of the shards is exactly the single-process schedule whatever the
// arrival process (constant: shard i at R/N offset by i/R; Poisson and
// gamma: the same draws, dealt round robin); closed loop: its share of the
// concurrency and of the request count, the remainder going to the first
// shards. Request i of the whole run is sent by shard i mod Count with the
// prompt request i has in one process. Non-load phases run on shard 0
// only, unless AllPhases.
//
// A Shard is shared by every run of the process and safe for concurrent use.
type Shard struct {
	Index, Count int
	// StartAt, when set, is when the first load point's schedule begins on
	// every shard.
	StartAt   time.Time
	AllPhases bool
	// RunID, when set, names the sharded run (the same on every shard).
	RunID string

	mu          sync.Mutex
	begun       bool
	latenessMS  *float64
	points      []report.ShardRate
	clockDone   bool
	clockMS     *float64
	clockUncMS  *float64
	clockNote   string
	clockClient *http.Client
}

// Share is shard index's part of total split over n: total/n, plus one
// for the first total mod n shards.
func Share(total, index, n int) int {
	s := total / n
	if index < total%n {
		s++
	}
	return s
}

// CheckShard reports what a scenario cannot do split over the shard's
// count: a seam target (nothing to share), or a load point whose
// concurrency or request count is smaller than the count (a shard would
// get none).
func CheckShard(sc *scenarios.Scenario, n int) error {
	var errs []error
	for _, run := range sc.Runs {
		if run.Target.OpenAI == nil {
			errs = append(errs, fmt.Errorf("run %s: target %s is a %s target; only live targets (openai, embedded) can be sharded", run.Name, run.Target.Name, run.Target.Kind))
			continue
		}
		for _, p := range run.Phases {
			if p.Kind != scenarios.PhaseLoad {
				continue
			}
			cs := append([]int{}, p.Sweep.Concurrency...)
			if p.Concurrency > 0 {
				cs = append(cs, p.Concurrency)
			}
			for _, c := range cs {
				if c < n {
					errs = append(errs, fmt.Errorf("%s: phase %s: concurrency %d cannot be split over %d shards (each needs at least 1)", p.Pos, p.Name, c, n))
				}
			}
			if c := p.Requests.Count; c > 0 && c < n {
				errs = append(errs, fmt.Errorf("%s: phase %s: %d requests cannot be split over %d shards (each needs at least 1)", p.Pos, p.Name, c, n))
			}
		}
	}
	return errors.Join(errs...)
}

// runs reports whether this shard runs phase p.
func (s *Shard) runs(p *scenarios.Phase) bool {
	return s == nil || s.Index == 0 || s.AllPhases || p.Kind == scenarios.PhaseLoad
}

// global is the whole run's index of this shard's i-th request.
func (s *Shard) global(i int) int {
	if s == nil {
		return i
	}
	return i*s.Count + s.Index
}

// plan turns the whole load point's plan into this shard's share.
func (s *Shard) plan(p load.Plan) load.Plan {
	if s == nil {
		return p
	}
	if p.Concurrency > 0 {
		p.Concurrency = Share(p.Concurrency, s.Index, s.Count)
	}
	if p.MaxRequests > 0 {
		p.MaxRequests = Share(p.MaxRequests, s.Index, s.Count)
	}
	if p.Schedule != nil {
		p.Schedule = strided{p.Schedule, s.Count, s.Index}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.begun {
		s.begun = true
		if !s.StartAt.IsZero() {
			p.Start = s.StartAt
			late := max(0, time.Since(s.StartAt).Seconds()*1000)
			s.latenessMS = &late
		}
	}
	return p
}

// strided is every n-th arrival of a schedule from arrival k.
type strided struct {
	s    load.Schedule
	n, k int
}

func (t strided) Offset(i int) time.Duration { return t.s.Offset(i*t.n + t.k) }

// Lateness is how late the first load point began after StartAt (nil when
// there was no StartAt or no load point).
func (s *Shard) Lateness() *float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latenessMS
}

func (s *Shard) note(r report.ShardRate) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.points = append(s.points, r)
	s.mu.Unlock()
}

// Info is what the shard records in its report.
func (s *Shard) Info(host string) *report.ShardInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := &report.ShardInfo{Index: s.Index, Count: s.Count, Host: host, RunID: s.RunID, AllPhases: s.AllPhases, StartLatenessMS: s.latenessMS,
		ClockOffsetMS: s.clockMS, ClockOffsetUncertaintyMS: s.clockUncMS, ClockNote: s.clockNote, Points: append([]report.ShardRate{}, s.points...)}
	if !s.StartAt.IsZero() {
		t := s.StartAt.UTC()
		in.StartAt = &t
	}
	if in.ClockOffsetMS == nil && in.ClockNote == "" {
		in.ClockNote = "no live target was reached"
	}
	return in
}

// measureClock reads the offset of the target's clock once per process,
// from its Date header.
func (s *Shard) measureClock(ctx context.Context, baseURL string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.clockDone {
		s.mu.Unlock()
		return
	}
	s.clockDone = true
	c := s.clockClient
	s.mu.Unlock()
	if c == nil {
		c = &http.Client{Timeout: 2 * time.Second}
	}
	off, unc, err := ClockOffset(ctx, c, baseURL+"/health", 1500*time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.clockNote = err.Error()
		return
	}
	s.clockMS, s.clockUncMS = &off, &unc
}

// ClockOffset estimates the server's clock minus the local clock, in ms,
// from the Date header of GET url (any status). Date has a resolution of one
// second, so it polls until the Date second ticks over (for up to budget):
// the tick happened between the send of the last answer with the old second
// and the receipt of the first with the new one, and the offset is taken at
// the middle of that interval; the uncertainty is half its width. Without a
// tick it falls back to one answer (uncertainty half a second plus the round
// trip).
func ClockOffset(ctx context.Context, c *http.Client, url string, budget time.Duration) (offsetMS, uncertaintyMS float64, err error) {
	type probe struct {
		sent, got time.Time
		date      time.Time
	}
	get := func() (probe, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return probe{}, fmt.Errorf("clock offset: %w", err)
		}
		t0 := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return probe{}, fmt.Errorf("clock offset: %w", err)
		}
		t1 := time.Now()
		_ = resp.Body.Close()
		d, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			return probe{}, fmt.Errorf("clock offset: the target sent no usable Date header (%q)", resp.Header.Get("Date"))
		}
		return probe{t0, t1, d}, nil
	}
	first, err := get()
	if err != nil {
		return 0, 0, err
	}
	prev := first
	deadline := time.Now().Add(budget)
	for time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		p, err := get()
		if err != nil {
			return 0, 0, err
		}
		if p.date.After(prev.date) {
			lo, hi := prev.sent, p.got
			mid := lo.Add(hi.Sub(lo) / 2)
			return float64(p.date.Sub(mid).Microseconds()) / 1000, float64(hi.Sub(lo).Microseconds()) / 2000, nil
		}
		prev = p
	}
	mid := first.sent.Add(first.got.Sub(first.sent) / 2)
	server := first.date.Add(500 * time.Millisecond)
	return float64(server.Sub(mid).Microseconds()) / 1000, 500 + float64(first.got.Sub(first.sent).Microseconds())/2000, nil
}

// shardPoint records a shard's load point (its window is kept by the fold):
// its share of the rate or concurrency, and its requested and achieved rate
// for the shard's own record.
func (r *runner) shardPoint(lp *report.LoadPoint, phase, label string, rate float64) {
	sh := r.opts.Shard
	sr := report.ShardRate{Run: r.run.Name, Phase: phase, Point: label, Requests: lp.Requests, AchievedRatePerS: lp.AchievedRatePerS}
	if rate > 0 {
		// Every Count-th arrival of a schedule at rate is rate/Count.
		lp.Rate = rate / float64(sh.Count)
		sr.RequestedRatePerS = report.F(lp.Rate)
	} else {
		lp.Concurrency = Share(lp.Concurrency, sh.Index, sh.Count)
		sr.Concurrency = lp.Concurrency
	}
	sh.note(sr)
}

// scheduleSeed seeds a load point's arrival schedule. A shard leaves out the
// run's random salt (a live server's), so that every shard draws the same
// schedule and their union is the one schedule.
func (r *runner) scheduleSeed(p *scenarios.Phase) int64 {
	if r.opts.Shard != nil {
		return r.seed(p) - r.salt
	}
	return r.seed(p)
}
