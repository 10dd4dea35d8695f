package load

import (
	"context"
	"sync"
	"testing"
	"time"
)

// How closely the real clock keeps an open-loop schedule is a property of
// the machine, so it is measured here rather than asserted in a test:
// go test -bench OpenLoop ./engine/load reports the achieved rate's shortfall
// and the mean and worst lateness of a send.
func BenchmarkOpenLoopRealClock(b *testing.B) {
	const rate, n = 2000.0, 200
	s, err := NewSchedule(rate, ArrivalConstant, 0, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var lateSum, lateMax time.Duration
	var sends int
	var shortfall float64
	for b.Loop() {
		res := Execute(context.Background(), Plan{Schedule: s, MaxRequests: n}, func(_ context.Context, _ int, at, sent time.Time) {
			mu.Lock()
			defer mu.Unlock()
			late := sent.Sub(at)
			lateSum += late
			lateMax = max(lateMax, late)
			sends++
		})
		if w := res.LastSend.Sub(res.Start).Seconds(); w > 0 {
			shortfall += 1 - float64(res.Sent-1)/w/rate
		}
	}
	b.ReportMetric(100*shortfall/float64(b.N), "rate_shortfall_%")
	b.ReportMetric(float64(lateSum.Microseconds())/float64(sends), "late_mean_us")
	b.ReportMetric(float64(lateMax.Microseconds()), "late_max_us")
}
