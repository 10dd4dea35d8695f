package sim

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// maxLag is how far the decode loop may fall behind its absolute schedule
// and still catch up by running late steps back to back. Lateness below it
// never accumulates, so the delivered step time stays the configured one;
// beyond it (a suspended or hopelessly overloaded host) the schedule
// restarts from now rather than bursting seconds of tokens.
const maxLag = time.Second

// errClosed is returned to waiters when the Server closes under them.
var errClosed = errors.New("sim: server closed")

// scheduler models a continuous-batching engine: slots (MaxRunningSeqs) with
// a FIFO wait, one shared prefill resource, and one decode loop that
// advances every decoding sequence by a token per step. The loop goroutine
// exists only while sequences decode, so an idle Server runs no goroutines.
type scheduler struct {
	cfg   *Config
	slots chan struct{} // a send acquires a slot; blocked senders are served in FIFO order
	done  <-chan struct{}

	running     atomic.Int64
	waiting     atomic.Int64
	peakRunning atomic.Int64
	genTokens   atomic.Int64 // tokens produced, including first tokens

	prefillMu     sync.Mutex
	prefillFreeAt time.Time // when the shared prefill resource is next idle

	batchMu     sync.Mutex
	batch       []*seq
	loopRunning bool
	closed      bool
	loops       sync.WaitGroup
}

// seq is one decoding sequence as the decode loop sees it.
type seq struct {
	target    int32        // total tokens to generate, first token included
	generated atomic.Int32 // written by the loop, read by the handler
	pokeEach  bool         // wake the handler every step (streaming) or only at the end
	notify    chan struct{}
	left      atomic.Bool // the handler is gone; drop at the next step
}

func newScheduler(cfg *Config, done <-chan struct{}) *scheduler {
	return &scheduler{
		cfg:   cfg,
		slots: make(chan struct{}, cfg.MaxRunningSeqs),
		done:  done,
	}
}

// acquire waits for a running slot; release must follow a nil return.
func (s *scheduler) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
	default:
		s.waiting.Add(1)
		select {
		case s.slots <- struct{}{}:
			s.waiting.Add(-1)
		case <-ctx.Done():
			s.waiting.Add(-1)
			return ctx.Err()
		case <-s.done:
			s.waiting.Add(-1)
			return errClosed
		}
	}
	n := s.running.Add(1)
	for {
		p := s.peakRunning.Load()
		if n <= p || s.peakRunning.CompareAndSwap(p, n) {
			break
		}
	}
	return nil
}

func (s *scheduler) release() {
	s.running.Add(-1)
	<-s.slots
}

// prefill blocks for TTFTBase plus this request's turn on the shared
// prefill resource for uncached tokens, and returns that planned wait. The
// reservation is made up front, like a GPU batch already scheduled:
// cancelling does not give it back.
func (s *scheduler) prefill(ctx context.Context, uncached int) (time.Duration, error) {
	d := time.Duration(float64(uncached) / s.cfg.PrefillTokensPerS * float64(time.Second))
	now := time.Now()
	s.prefillMu.Lock()
	start := s.prefillFreeAt
	if start.Before(now) {
		start = now
	}
	s.prefillFreeAt = start.Add(d)
	end := s.prefillFreeAt
	s.prefillMu.Unlock()
	wait := end.Sub(now) + s.cfg.TTFTBase
	return wait, sleepCtx(ctx, s.done, wait)
}

// sleepCtx waits for d, the context, or done, whichever comes first.
func sleepCtx(ctx context.Context, done <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
		return errClosed
	}
}

// stepDuration is the decode step time for a batch of n sequences.
func (s *scheduler) stepDuration(n int) time.Duration {
	return s.cfg.DecodeStep + time.Duration(n-1)*s.cfg.DecodeStepPerSeq
}

// join adds q to the decode batch (q already holds its first token) and
// starts the loop if it is idle. It reports false once the Server closed.
func (s *scheduler) join(q *seq) bool {
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	if s.closed {
		return false
	}
	s.batch = append(s.batch, q)
	if !s.loopRunning {
		s.loopRunning = true
		s.loops.Add(1)
		go s.loop()
	}
	return true
}

// close stops the loop and prevents new ones; it waits for the loop to exit.
func (s *scheduler) close() {
	s.batchMu.Lock()
	s.closed = true
	s.batchMu.Unlock()
	s.loops.Wait()
}

// loop runs decode steps while the batch is non-empty. A step's duration is
// fixed by the batch at its start; sequences that join mid-step get their
// next token at the end of the following step, as in a real engine.
func (s *scheduler) loop() {
	defer s.loops.Done()
	s.batchMu.Lock()
	active := len(s.batch)
	s.batchMu.Unlock()
	d := s.stepDuration(active)
	deadline := time.Now().Add(d)
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-s.done:
			s.batchMu.Lock()
			s.loopRunning = false
			s.batchMu.Unlock()
			return
		}

		s.batchMu.Lock()
		produced := int64(0)
		for _, q := range s.batch[:active] {
			if !q.left.Load() {
				q.generated.Add(1)
				produced++
			}
		}
		// Counted before any handler wakes, so a request that has finished
		// is already in generation_tokens_total when its response is read.
		s.genTokens.Add(produced)
		for _, q := range s.batch[:active] {
			if q.pokeEach || q.generated.Load() >= q.target {
				select {
				case q.notify <- struct{}{}:
				default: // the handler has a wake-up pending; it reads the count
				}
			}
		}
		kept := s.batch[:0]
		for _, q := range s.batch {
			if !q.left.Load() && q.generated.Load() < q.target {
				kept = append(kept, q)
			}
		}
		clear(s.batch[len(kept):]) // let finished sequences be collected
		s.batch = kept
		active = len(kept)
		if active == 0 {
			s.loopRunning = false
			s.batchMu.Unlock()
			return
		}
		s.batchMu.Unlock()

		d = s.stepDuration(active)
		deadline = deadline.Add(d)
		now := time.Now()
		if behind := now.Sub(deadline); behind > maxLag {
			// Far behind (a suspended host): do not burst to catch up.
			deadline = now
		}
		timer.Reset(deadline.Sub(now))
	}
}
