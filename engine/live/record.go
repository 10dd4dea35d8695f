package live

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// recorder is the per-request bookkeeping every phase kind shares: each
// request's sample, the phase's fold, the samples the report keeps (bounded)
// and those streamed to --samples-out, requests cancelled by the run itself
// left out, and the error budget. Safe for concurrent use; the folds a
// caller passes to record are updated under the recorder's lock.
type recorder struct {
	r *runner
	p *scenarios.Phase
	// byPoint sorts the kept samples by point, then index, for kinds that
	// send concurrently (requests complete out of order); sequential kinds
	// keep them in send order.
	byPoint bool

	mu      sync.Mutex
	all     *fold.Slice
	budget  errorBudget
	lastErr *measure.Error
	kept    []report.RequestSample
	maxKept int
	dropped int
}

// newRecorder records phase p, which plans to send planned requests (0:
// unknown, bounded by a duration).
func (r *runner) newRecorder(p *scenarios.Phase, planned int) *recorder {
	maxKept := r.opts.MaxLoadSamples
	if maxKept <= 0 {
		maxKept = MaxLoadSamples
	}
	return &recorder{r: r, p: p, all: r.newSlice(), budget: newErrorBudget(p, planned), maxKept: maxKept}
}

// newSlice is a fold of requests for one slice of a phase: it keeps its
// histograms in the report when the run is a shard (so shards merge
// exactly) and holds each prompt against its target size.
func (r *runner) newSlice() *fold.Slice {
	return fold.New(r.foldOptions())
}

func (r *runner) foldOptions() fold.Options {
	return fold.Options{Histograms: r.opts.Shard != nil, PromptTolerance: transport.CalibrationTolerance}
}

// canceledByUs reports whether a request failed only because the run (an
// error budget, an interrupt, a search cutting a probe short) stopped it:
// that is not the server's error, and it is not recorded.
func canceledByUs(res measure.Result, stopped error) bool {
	return res.Err != nil && res.Err.Class == measure.ClassCanceled && stopped != nil
}

// entry is one request as a phase kind hands it to the recorder.
type entry struct {
	res     measure.Result
	retries int
	// point names the request's slice ("" for none); index counts within it.
	point string
	index int
	// startMS is the request's send time from the start of its phase (of
	// its load point, for load phases).
	startMS float64
	// name overrides the request's name in error examples.
	name string
}

// sample is the request's sample in phase and its name in error examples.
func (e entry) sample(phase string) (report.RequestSample, string) {
	name := e.name
	if name == "" {
		name = requestName(phase, e.point, e.index)
	}
	return sampleOf(e.res, e.retries, phase, e.point, e.index, e.startMS), name
}

// record folds one request into the phase and into each of into (its
// point, its turn), keeps and streams its sample, and reports whether the
// error budget is now certainly spent (the caller stops the phase).
func (rc *recorder) record(e entry, into ...func(*report.RequestSample, string)) (*report.RequestSample, bool) {
	smp, name := e.sample(rc.p.Name)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.all.Add(&smp, name)
	for _, f := range into {
		f(&smp, name)
	}
	if rc.r.opts.Samples {
		if len(rc.kept) < rc.maxKept {
			kept := smp
			kept.ITLMS = nil // in memory for the fold only
			rc.kept = append(rc.kept, kept)
		} else {
			rc.dropped++
		}
	}
	if sink := rc.r.opts.SampleSink; sink != nil {
		sink(smp)
	}
	if e.res.Err == nil {
		return &smp, false
	}
	rc.lastErr = e.res.Err
	return &smp, rc.budget.spent(rc.all.Errors(), rc.all.Requests())
}

// spentErr is the error of a budget record just reported spent.
func (rc *recorder) spentErr(label string) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.budget.err(label, rc.all.Errors(), rc.all.Requests(), rc.lastErr)
}

// overErr is the judgment at the end of the phase (or of a point): nil
// unless more than the budget failed.
func (rc *recorder) overErr(label string) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !rc.budget.over(rc.all.Errors(), rc.all.Requests()) {
		return nil
	}
	return rc.budget.err(label, rc.all.Errors(), rc.all.Requests(), rc.lastErr)
}

// ttftP50 is the median TTFT of a fold so far, for progress (nil when none).
func ttftP50(s *fold.Slice) *float64 {
	if h := s.Histogram("ttft_ms"); h.Count() > 0 {
		return report.F(h.Quantile(50))
	}
	return nil
}

// close lays out the phase's metrics and kept samples on ph, with a
// warning when the bound dropped some.
func (rc *recorder) close(ph *report.Phase) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ph.ServingMetrics = rc.all.Close()
	if rc.r.opts.Samples && rc.kept != nil && rc.byPoint {
		rank := map[string]int{}
		for _, s := range rc.kept {
			if _, ok := rank[s.Point]; !ok {
				rank[s.Point] = len(rank)
			}
		}
		slices.SortStableFunc(rc.kept, func(a, b report.RequestSample) int {
			if c := cmp.Compare(rank[a.Point], rank[b.Point]); c != 0 {
				return c
			}
			return cmp.Compare(a.Index, b.Index)
		})
	}
	if rc.r.opts.Samples && rc.kept != nil {
		ph.Samples = rc.kept
	}
	if rc.dropped > 0 {
		ph.Warnings = append(ph.Warnings, fmt.Sprintf("samples: the report keeps the first %d request samples of a %s phase; "+
			"%d more went only to --samples-out (give it, or report.samples: false, for long runs)", rc.maxKept, rc.p.Kind, rc.dropped))
	}
}

// intoSlice folds a recorded request into s too.
func intoSlice(s *fold.Slice) func(*report.RequestSample, string) {
	return func(smp *report.RequestSample, name string) { s.Add(smp, name) }
}

// metrics is the phase's figures so far.
func (rc *recorder) metrics() *report.ServingMetrics {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.all.Close()
}
