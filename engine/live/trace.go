package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/engine/load"
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/scenarios"
	"github.com/tollgate-dev/tollgate/workload"
)

// maxSeenHashIDs bounds the hash ids a replay remembers to work out the
// hit rate its trace implies (about 40 MB); past it the rate is a lower
// bound and the report says so.
const maxSeenHashIDs = 1 << 20

// traceKind replays a request trace open loop: request i is sent at its
// trace offset × the time scale from the phase's start, on load's
// absolute-time executor, so a late send never delays the ones after it
// and queue_ms is the replay's lateness.
type traceKind struct{}

// MaxInFlight is the phase's max_in_flight (an open loop holds up to
// that many), maxPoolConns when unset and at most that.
func (traceKind) MaxInFlight(p *scenarios.Phase) int {
	return min(cmp.Or(p.MaxInFlight, maxPoolConns), maxPoolConns)
}

// traceSchedule is the executor's Schedule over a streamed trace: asking
// for request i's offset reads it and builds its request, which its job
// then takes. Only requests between the dispatcher and their job are held.
type traceSchedule struct {
	r      *workload.TraceReader
	p      *scenarios.Phase
	info   *scenarios.TraceInfo
	build  func(i int, e workload.Entry) measure.Request
	stop   context.CancelFunc
	mu     sync.Mutex
	ready  map[int]tracedRequest
	err    error
	read   int
	last   time.Duration
	seen   map[int64]struct{}
	full   bool // seen reached its bound
	hitTok int64
	inTok  int64
}

type tracedRequest struct {
	req   measure.Request
	entry workload.Entry
}

func (s *traceSchedule) Offset(i int) time.Duration {
	for s.read <= i {
		e, err := s.next()
		switch {
		case err == io.EOF:
			err = fmt.Errorf("%w: the trace ended after %d of the %d requests found when the scenario loaded (did it change?)", ErrPhase, s.read, s.info.Requests)
		case err == nil:
			// Load bounded the window's span × the scale (see
			// scenarios.MaxTraceReplay): an offset past the span is a
			// file that changed since, and scaled it could overflow.
			if d := e.Offset - s.info.First; d < 0 || d > s.info.Span {
				err = fmt.Errorf("%w: %s:%d: %v into the window, past its last request (%v) when the scenario loaded (did the trace change?)", ErrPhase, s.info.Path, e.Line, d, s.info.Span)
			}
		}
		if err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = err
			}
			s.mu.Unlock()
			s.stop()
			return s.last
		}
		s.imply(e)
		req := s.build(s.read, e)
		s.mu.Lock()
		s.ready[s.read] = tracedRequest{req: req, entry: e}
		s.mu.Unlock()
		s.last = time.Duration(float64(e.Offset-s.info.First) * s.info.Scale)
		s.read++
	}
	return s.last
}

// next is the next entry in the window.
func (s *traceSchedule) next() (workload.Entry, error) {
	t := &s.p.Trace
	for {
		e, err := s.r.Next()
		if err != nil {
			return e, err
		}
		if e.Offset < t.From.Duration || (t.To.Duration > 0 && e.Offset >= t.To.Duration) {
			continue
		}
		return e, nil
	}
}

// imply adds e to the hit rate its trace implies: the tokens of its
// leading hash ids that an earlier request already had.
func (s *traceSchedule) imply(e workload.Entry) {
	if s.p.Trace.Format != workload.FormatMooncake {
		return
	}
	lead := true
	hit := 0
	for _, id := range e.HashIDs {
		_, ok := s.seen[id]
		if lead && ok {
			hit += s.p.Trace.BlockTokens
		} else {
			lead = false
		}
		if !ok && len(s.seen) < maxSeenHashIDs {
			s.seen[id] = struct{}{}
		} else if !ok {
			s.full = true
		}
	}
	s.hitTok += int64(min(hit, e.InputTokens))
	s.inTok += int64(e.InputTokens)
}

func (s *traceSchedule) take(i int) (tracedRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tr, ok := s.ready[i]
	delete(s.ready, i)
	return tr, ok
}

// traceWords are common English words of at most four letters: one token
// each in the embedded simulator and, with their leading space, in the
// usual BPE vocabularies, so a trace's token counts carry over.
var traceWords = short(strings.Fields(`the of and to in is you that it he was for on are as with his they at be this have from or one had by word but not what all were we when your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into time has look two more write go see number no way could people my than first water been call who oil its now find long down day did get come made may part over new sound take only little work know place year live me back give most very after thing our just name good man think say great where help much line turn move boy old too same tell does set want air well also play small end put home read hand port large add even land here must big high such act why ask men went kind off need near self head page grow food four tree city farm hard hold open seem ever`))

// short keeps the words of at most four letters (one simulator token).
func short(words []string) []string {
	out := words[:0]
	for _, w := range words {
		if len(w) <= 4 {
			out = append(out, w)
		}
	}
	return out
}

// blockText is the text of Mooncake block id: n words chosen by a hash of
// the run's seed, the id and the word's place, so the same id gives the
// same text in every request of a run (and a new run, fresh text).
func blockText(b *strings.Builder, seed, id int64, n int) {
	h := uint64(seed)*0x9e3779b97f4a7c15 ^ uint64(id)*0xc2b2ae3d27d4eb4f
	for j := 0; j < n; j++ {
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 29
		h += 0x9e3779b97f4a7c15
		b.WriteString(traceWords[h%uint64(len(traceWords))])
		b.WriteByte(' ')
	}
}

// tracePrompt is entry e's prompt of e.InputTokens words: the blocks of its
// hash ids in order (the last cut short to the input length), then, when
// the trace has no ids or too few, words of its own.
func tracePrompt(seed int64, i int, e workload.Entry, block int) string {
	var b strings.Builder
	b.Grow(e.InputTokens * 5)
	left := e.InputTokens
	for _, id := range e.HashIDs {
		if left <= 0 {
			break
		}
		n := min(block, left)
		blockText(&b, seed, id, n)
		left -= n
	}
	if left > 0 {
		// Negative ids never collide with a trace's own.
		blockText(&b, seed, -1-int64(i), left)
	}
	return strings.TrimSuffix(b.String(), " ")
}

func (traceKind) Run(ctx context.Context, r *runner, p *scenarios.Phase, ph *report.Phase) error {
	info := p.TraceInfo
	if info == nil {
		return fmt.Errorf("phase %s: the trace was not read when the scenario loaded", p.Name)
	}
	_, shape := r.send.(*shapeSender)
	seed := r.seed(p)
	build := func(i int, e workload.Entry) measure.Request {
		mt := e.OutputTokens
		if p.Has("max_tokens") {
			mt = p.MaxTokens
		}
		return r.request(tracePrompt(seed, i, e, p.Trace.BlockTokens), nil, mt)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sched := &traceSchedule{p: p, info: info, build: build, stop: cancel, ready: map[int]tracedRequest{}, seen: map[int64]struct{}{}}
	if !shape {
		name := info.Path
		if info.Resolved != "" {
			name = info.Resolved // the file load checked, not where the name leads now
		}
		tr, err := workload.OpenTrace(name, p.Trace.Format)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrPhase, err)
		}
		defer tr.Close()
		sched.r = tr
	}
	maxIn := p.MaxInFlight
	if maxIn == 0 {
		maxIn = 4096
	}
	plan := load.Plan{Schedule: sched, MaxRequests: info.Requests, MaxInFlight: maxIn}
	pt := fold.NewPoint(r.foldOptions(), nil)
	rec := r.newRecorder(p, info.Requests)
	rec.byPoint = true
	var cachedSum, promptSum, inSum, outSum int64
	entries := make(map[int]workload.Entry) // by job, until its request is recorded
	var emu sync.Mutex
	d := r.drive(pctx, p.Name, point{plan: plan, label: "replay", total: info.Requests, pt: pt, rec: rec,
		request: func(i int) (measure.Request, bool) {
			tr, ok := sched.take(i)
			if !ok {
				if !shape {
					return measure.Request{}, false // the schedule failed; its error says why
				}
				e := workload.Entry{InputTokens: 1, OutputTokens: 1, HashIDs: []int64{1}}
				tr = tracedRequest{req: build(i, e), entry: e}
			}
			emu.Lock()
			entries[i] = tr.entry
			emu.Unlock()
			return tr.req, true
		},
		recorded: func(d done, spent bool) error {
			emu.Lock()
			e := entries[d.i]
			delete(entries, d.i)
			emu.Unlock()
			inSum += int64(e.InputTokens)
			outSum += int64(e.OutputTokens)
			if d.out.Err == nil && d.out.PromptTokens != nil && d.out.CachedTokens != nil {
				promptSum += int64(*d.out.PromptTokens)
				cachedSum += int64(*d.out.CachedTokens)
			}
			if spent {
				return rec.spentErr("")
			}
			return nil
		}})
	cancel()
	res, stopErr := d.res, d.stopErr
	if stopErr == nil && ctx.Err() == nil {
		stopErr = rec.overErr("")
	}
	rec.close(ph)
	lp := pt.Close(false)
	t := &report.TraceReplay{File: p.Trace.File, Format: p.Trace.Format, Speed: 1 / info.Scale, Requests: info.Requests, Sent: res.Sent,
		QueueMS: lp.QueueMS, DispatchLagMS: lp.DispatchLagMS, TraceInputTokens: inSum, TraceOutputTokens: outSum, PeakInFlight: lp.PeakInFlight,
		AchievedRatePerS: lp.AchievedRatePerS, DurationS: lp.DurationS}
	if rate := info.ReplayRate(); rate > 0 {
		t.TraceRatePerS = report.F(rate)
	}
	if p.Trace.Format == workload.FormatMooncake && (sched.inTok > 0 || shape) {
		t.TraceCacheHitRate = report.F(float64(sched.hitTok) / float64(max(sched.inTok, 1)))
	}
	if promptSum > 0 {
		t.ServerCacheHitRate = report.F(float64(cachedSum) / float64(promptSum))
	}
	ph.Trace = t
	r.checkLag(p, report.Pointer("runs", r.run.Name, "phases", p.Name, "trace"), "", lp.DispatchLagMS, lp.TTFTMS.P50)
	if sched.full {
		ph.Warnings = append(ph.Warnings, fmt.Sprintf("trace: more than %d distinct hash ids; trace_cache_hit_rate counts only the first %d and is a lower bound", maxSeenHashIDs, maxSeenHashIDs))
	}
	ph.Warnings = append(ph.Warnings, r.warnings...)
	if sched.err != nil && ctx.Err() == nil {
		if errors.Is(sched.err, ErrPhase) {
			return sched.err
		}
		return fmt.Errorf("%w: %v", ErrPhase, sched.err)
	}
	if stopErr != nil {
		return stopErr
	}
	return ctx.Err()
}
