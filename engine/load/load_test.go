package load

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestConstantScheduleIsExact(t *testing.T) {
	s, err := NewSchedule(200, ArrivalConstant, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 2, 199, 200, 100000} {
		want := time.Duration(float64(i) / 200 * float64(time.Second))
		if got := s.Offset(i); got != want {
			t.Errorf("offset %d = %v, want %v", i, got, want)
		}
	}
}

func TestRandomSchedulesKeepTheRate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		arrival    string
		burstiness float64
		wantCV     float64 // coefficient of variation of the gaps
	}{
		{name: "poisson", arrival: ArrivalPoisson, wantCV: 1},
		{name: "gamma bursty", arrival: ArrivalGamma, burstiness: 0.25, wantCV: 2},
		{name: "gamma regular", arrival: ArrivalGamma, burstiness: 4, wantCV: 0.5},
		{name: "gamma one is poisson", arrival: ArrivalGamma, burstiness: 1, wantCV: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const rate, n = 1000.0, 50000
			s, err := NewSchedule(rate, tc.arrival, tc.burstiness, 0, 42)
			if err != nil {
				t.Fatal(err)
			}
			var sum, sumSq float64
			prev := s.Offset(0)
			for i := 1; i <= n; i++ {
				g := (s.Offset(i) - prev).Seconds()
				prev = s.Offset(i)
				sum += g
				sumSq += g * g
			}
			mean := sum / n
			cv := math.Sqrt(sumSq/n-mean*mean) / mean
			if math.Abs(1/mean-rate)/rate > 0.03 {
				t.Errorf("rate %.1f/s, want %v ± 3%%", 1/mean, rate)
			}
			if math.Abs(cv-tc.wantCV)/tc.wantCV > 0.06 {
				t.Errorf("gap CV %.3f, want %.2f", cv, tc.wantCV)
			}
			again, _ := NewSchedule(rate, tc.arrival, tc.burstiness, 0, 42)
			if again.Offset(1234) != s.Offset(1234) {
				t.Error("the same seed must give the same schedule")
			}
		})
	}
}

func TestRampUp(t *testing.T) {
	// 100/s after a 10 s linear ramp: 500 requests arrive during the ramp,
	// the 250th at t = sqrt(2·10·250/100) = √50 s, then 100/s.
	s, err := NewSchedule(100, ArrivalConstant, 0, 10*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		i    int
		want float64
	}{{0, 0}, {250, math.Sqrt(50)}, {500, 10}, {600, 11}} {
		if got := s.Offset(tc.i).Seconds(); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("offset %d = %.6f s, want %.6f", tc.i, got, tc.want)
		}
	}
}

func TestBadSchedules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rate    float64
		arrival string
		b       float64
	}{
		{name: "zero rate", rate: 0, arrival: ArrivalPoisson},
		{name: "negative rate", rate: -1, arrival: ArrivalConstant},
		{name: "unknown arrival", rate: 1, arrival: "bursty"},
		{name: "gamma without burstiness", rate: 1, arrival: ArrivalGamma},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewSchedule(tc.rate, tc.arrival, tc.b, 0, 0); err == nil {
				t.Error("want an error")
			}
		})
	}
}

// fakeClock advances only when the executor sleeps; every wake-up is late by
// a fixed amount, standing in for scheduling overhead.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	late time.Duration
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Add(c.late).After(c.now) {
		c.now = t.Add(c.late)
	}
	return ctx.Err()
}

// Sends follow absolute times: lateness on every wake-up stays a constant
// queueing delay and never accumulates into a lower rate.
func TestOpenLoopNeverDrifts(t *testing.T) {
	const late = 300 * time.Microsecond
	clock := &fakeClock{now: time.Unix(1000, 0), late: late}
	s, _ := NewSchedule(1000, ArrivalConstant, 0, 0, 0)
	var mu sync.Mutex
	sched := map[int][2]time.Time{}
	res := Execute(context.Background(), Plan{Schedule: s, Duration: 2 * time.Second, Clock: clock}, func(_ context.Context, i int, at, sent time.Time) {
		mu.Lock()
		sched[i] = [2]time.Time{at, sent}
		mu.Unlock()
	})
	if res.Sent != 2000 || len(sched) != 2000 {
		t.Fatalf("sent %d in 2 s at 1000/s, want 2000", res.Sent)
	}
	start := time.Unix(1000, 0)
	for i, v := range sched {
		if want := start.Add(time.Duration(i) * time.Millisecond); !v[0].Equal(want) {
			t.Fatalf("request %d scheduled at %v, want %v", i, v[0].Sub(start), want.Sub(start))
		}
		if q := v[1].Sub(v[0]); q != late {
			t.Fatalf("request %d queued %v, want a constant %v", i, q, late)
		}
	}
}

func TestMaxRequestsBoundsOpenLoop(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	s, _ := NewSchedule(50, ArrivalPoisson, 0, 0, 3)
	var n atomic.Int64
	res := Execute(context.Background(), Plan{Schedule: s, MaxRequests: 123, Clock: clock}, func(context.Context, int, time.Time, time.Time) { n.Add(1) })
	if res.Sent != 123 || n.Load() != 123 {
		t.Errorf("sent %d ran %d, want 123", res.Sent, n.Load())
	}
}

func TestClosedLoopNeverExceedsConcurrency(t *testing.T) {
	for _, c := range []int{1, 4, 16} {
		var cur, peak, total atomic.Int64
		res := Execute(context.Background(), Plan{Concurrency: c, MaxRequests: 200}, func(context.Context, int, time.Time, time.Time) {
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(200 * time.Microsecond)
			cur.Add(-1)
			total.Add(1)
		})
		if peak.Load() > int64(c) || res.PeakInFlight > int64(c) {
			t.Errorf("concurrency %d: peak %d (executor saw %d)", c, peak.Load(), res.PeakInFlight)
		}
		if total.Load() != 200 || res.Sent != 200 {
			t.Errorf("concurrency %d: ran %d sent %d, want 200", c, total.Load(), res.Sent)
		}
	}
}

func TestMaxInFlightQueuesInsteadOfDropping(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	s, _ := NewSchedule(1000, ArrivalConstant, 0, 0, 0)
	release := make(chan struct{})
	var started atomic.Int64
	done := make(chan Result)
	go func() {
		done <- Execute(context.Background(), Plan{Schedule: s, MaxRequests: 5, MaxInFlight: 2, Clock: clock}, func(context.Context, int, time.Time, time.Time) {
			started.Add(1)
			<-release
		})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for started.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if n := started.Load(); n != 2 {
		t.Fatalf("%d jobs started with max_in_flight 2", n)
	}
	close(release)
	if res := <-done; res.Sent != 5 {
		t.Errorf("sent %d, want all 5 once capacity frees", res.Sent)
	}
}

func TestCancelStopsAndWaits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var running atomic.Int64
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	res := Execute(ctx, Plan{Concurrency: 8}, func(ctx context.Context, _ int, _, _ time.Time) {
		running.Add(1)
		defer running.Add(-1)
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
	})
	if running.Load() != 0 {
		t.Errorf("%d jobs still running after Execute returned", running.Load())
	}
	if res.Sent == 0 {
		t.Error("nothing was sent before the cancel")
	}
}
