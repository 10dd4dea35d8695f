// Package load schedules and executes load: closed loop (a fixed number of
// concurrent workers) and open loop (sends on an arrival schedule, whatever
// the target does). It knows nothing about HTTP; a Job does the work.
package load

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Arrival processes for open-loop load.
const (
	ArrivalConstant = "constant"
	ArrivalPoisson  = "poisson"
	ArrivalGamma    = "gamma"
)

// Schedule gives the send time of the i-th request as an offset from the
// start of the phase. Offsets are absolute, computed from one start, so a
// late send never pushes later ones back and the rate never drifts.
type Schedule interface {
	Offset(i int) time.Duration
}

// arrivals is an open-loop schedule: unit-rate arrival "counts" u_i from the
// chosen process, mapped through the inverse of the cumulative rate Λ(t).
type arrivals struct {
	rate  float64 // requests per second at full rate
	rampS float64 // linear ramp from 0 to rate over this many seconds
	reset func() func() float64
	next  func() float64
	// Only the latest arrival is kept, so an hour-long run needs no more
	// memory than a minute-long one; asking for an earlier i replays.
	i   int
	sum float64
}

// NewSchedule returns an open-loop schedule. rate is requests/s; arrival is
// constant (evenly spaced), poisson (exponential gaps) or gamma (gamma gaps
// with shape = burstiness, as vLLM's benchmark defines it: burstiness 1 is
// Poisson, below 1 is burstier, above 1 is more regular). A ramp-up rises
// linearly from 0 to rate. The same seed gives the same schedule.
func NewSchedule(rate float64, arrival string, burstiness float64, rampUp time.Duration, seed int64) (Schedule, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("load: rate must be a positive number of requests per second, got %v", rate)
	}
	a := &arrivals{rate: rate, rampS: rampUp.Seconds()}
	switch arrival {
	case ArrivalConstant, "":
		a.reset = func() func() float64 { return func() float64 { return 1 } }
	case ArrivalPoisson:
		a.reset = func() func() float64 { return rand.New(rand.NewPCG(uint64(seed), 0x7011_6a7e)).ExpFloat64 }
	case ArrivalGamma:
		if !(burstiness > 0) {
			return nil, fmt.Errorf("load: burstiness must be positive, got %v", burstiness)
		}
		a.reset = func() func() float64 {
			rng := rand.New(rand.NewPCG(uint64(seed), 0x7011_6a7e))
			return func() float64 { return gamma(rng, burstiness) / burstiness }
		}
	default:
		return nil, fmt.Errorf("load: unknown arrival %q (constant, poisson or gamma)", arrival)
	}
	a.next = a.reset()
	return a, nil
}

// Offset is for one goroutine (the dispatcher), asked with increasing i.
func (a *arrivals) Offset(i int) time.Duration {
	if i < a.i {
		a.i, a.sum, a.next = 0, 0, a.reset()
	}
	// The first request goes at the start; each later one a gap after.
	for ; a.i < i; a.i++ {
		a.sum += a.next()
	}
	return time.Duration(math.Round(a.invert(a.sum) * float64(time.Second)))
}

// invert solves Λ(t) = u for t, where Λ is the cumulative expected arrivals:
// R·t²/(2T) during a ramp of T seconds, then R·T/2 + R·(t − T).
func (a *arrivals) invert(u float64) float64 {
	if a.rampS <= 0 {
		return u / a.rate
	}
	half := a.rate * a.rampS / 2
	if u <= half {
		return math.Sqrt(2 * a.rampS * u / a.rate)
	}
	return a.rampS + (u-half)/a.rate
}

// gamma draws from Gamma(shape, 1) (Marsaglia and Tsang), boosting shape < 1.
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gamma(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
