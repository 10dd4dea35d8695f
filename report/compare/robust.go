package compare

import (
	"math"
	"slices"
)

// The --fail-on test of a p50 (and of a single-valued metric repeated over
// runs) is Yuen's trimmed-mean t test on the logarithms of the values, not
// a bootstrap of the median, for three reasons measured on the embedded
// simulator (bench/compare-noise):
//
//   - Power. The median of 10–20 samples uses few of them; a 20 % trimmed
//     mean uses 60 % and is nearly as efficient as the mean on clean data
//     (about 94 % under a normal law, against the median's 64 %), so the same
//     samples detect a smaller change.
//   - Robustness. One outlier (a request, or a whole run, slowed by a burst of
//     load on a shared runner) falls in the trimmed tail and moves neither
//     the estimate nor, beyond one winsorized value, the spread: the
//     bootstrap of a median of five runs widened to [−37.8 %, +11.3 %] for a
//     clean −9.1 % shift when one run was off.
//   - Shared spread. The slices of one phase (its prompt sizes or variants)
//     are measured by the same client against the same server, and in log
//     space their relative spread is alike: pooling their winsorized
//     variances gives each slice's test the degrees of freedom of all of
//     them, which is what small samples lack most (the one-sided t quantile
//     at 0.1 % is 4.3 at 8 degrees of freedom, 3.3 at 40). A slice whose own
//     spread is wider than the pool's keeps its own: pooling never makes a
//     noisy slice look quiet.
//
// Logarithms make a percent threshold a shift (log(1 + N/100)), and a
// change of scale the same for a 10 ms and a 100 ms slice.

// trim is the share of values trimmed from each end.
const trim = 0.2

// power is the chance of detecting a change of the minimum detectable
// effect that Regression.MDE is computed for.
const power = 0.8

// trimmedSide is one side (old or new) of a slice, in log space.
type trimmedSide struct {
	n, h int     // values, and values kept after trimming
	mean float64 // the trimmed mean
	wvar float64 // the winsorized variance (n − 1 denominator)
}

// logTrimmed summarises values (all > 0) in log space; ok false when they
// are not all positive and finite, or too few to trim and keep two.
func logTrimmed(values []float64) (trimmedSide, bool) {
	n := len(values)
	if n < 3 {
		return trimmedSide{}, false
	}
	l := make([]float64, n)
	for i, v := range values {
		if !(v > 0) || math.IsInf(v, 0) {
			return trimmedSide{}, false
		}
		l[i] = math.Log(v)
	}
	slices.Sort(l)
	g := int(math.Floor(trim * float64(n)))
	h := n - 2*g
	if h < 2 {
		return trimmedSide{}, false
	}
	sum := 0.0
	for _, v := range l[g : n-g] {
		sum += v
	}
	s := trimmedSide{n: n, h: h, mean: sum / float64(h)}
	wmean := 0.0
	for i := range l {
		wmean += l[min(max(i, g), n-g-1)]
	}
	wmean /= float64(n)
	for i := range l {
		d := l[min(max(i, g), n-g-1)] - wmean
		s.wvar += d * d
	}
	s.wvar /= float64(n - 1)
	return s, true
}

// d is the side's contribution to the squared standard error of the
// trimmed-mean difference, with variance v.
func (s trimmedSide) d(v float64) float64 {
	return float64(s.n-1) * v / float64(s.h*(s.h-1))
}

// pool is the shared spread of the slices of one phase: their winsorized
// variances weighted by their degrees of freedom.
type pool struct {
	sum float64 // Σ (h − 1) · wvar
	df  int     // Σ (h − 1)
}

func (p *pool) add(s trimmedSide) {
	p.sum += float64(s.h-1) * s.wvar
	p.df += s.h - 1
}

func (p pool) variance() float64 { return p.sum / float64(p.df) }

// yuen is the test of one slice: the trimmed-mean difference of the logs
// (new − old), its standard error and degrees of freedom, and whether the
// pool's spread was used.
type yuen struct {
	diff, se, df float64
	pooled       bool
}

// yuenTest compares two sides, with the phase's pool when it has more
// degrees of freedom than the slice alone and a spread at least the slice's.
func yuenTest(o, n trimmedSide, p pool) yuen {
	d1, d2 := o.d(o.wvar), n.d(n.wvar)
	own := d1 + d2
	y := yuen{diff: n.mean - o.mean, se: math.Sqrt(own)}
	if own > 0 {
		y.df = own * own / (d1*d1/float64(o.h-1) + d2*d2/float64(n.h-1))
	} else {
		y.df = float64(o.h + n.h - 2)
	}
	if p.df > o.h+n.h-2 {
		v := p.variance()
		if shared := o.d(v) + n.d(v); shared >= own {
			y.se, y.df, y.pooled = math.Sqrt(shared), float64(p.df), true
		}
	}
	return y
}

// limit is a threshold as a shift in log space, signed: log(1 + N/100) for
// a rise, log(1 − N/100) for a drop (−Inf for a drop of 100 % or more).
func (t Threshold) limit() float64 {
	if t.Increase {
		return math.Log1p(t.Percent / 100)
	}
	if t.Percent >= 100 {
		return math.Inf(-1)
	}
	return math.Log1p(-t.Percent / 100)
}

// pValue is the one-sided p-value of "the change is within t": small when
// the trimmed mean moved beyond the limit by more than noise explains.
func (y yuen) pValue(t Threshold) float64 {
	beyond := y.diff - t.limit()
	if !t.Increase {
		beyond = -beyond
	}
	if y.se == 0 {
		if beyond > 0 {
			return 0
		}
		return 1
	}
	return 1 - studentCDF(beyond/y.se, y.df)
}

// mde is the minimum detectable effect, in percent: the smallest change
// the test tells from none with probability power at one-sided level
// alpha. A change of the threshold plus it is failed as often.
func (y yuen) mde(alpha float64) float64 {
	m := (studentQuantile(1-alpha, y.df) + studentQuantile(power, y.df)) * y.se
	return math.Expm1(m) * 100
}

// need is the samples per side at which mde would be the threshold's own
// size: the standard error shrinks as 1/√n.
func need(n int, mdePct, thresholdPct float64) int {
	if thresholdPct <= 0 || math.IsNaN(mdePct) || math.IsInf(mdePct, 0) {
		return 0
	}
	r := mdePct / thresholdPct
	return max(int(math.Ceil(float64(n)*r*r)), DefaultMinSamples)
}

// studentCDF is the distribution function of Student's t with df degrees
// of freedom (df may be fractional, as Welch's is).
func studentCDF(t, df float64) float64 {
	if math.IsInf(df, 1) || df > 1e7 {
		return 0.5 * math.Erfc(-t/math.Sqrt2)
	}
	x := df / (df + t*t)
	tail := 0.5 * regIncBeta(df/2, 0.5, x)
	if t > 0 {
		return 1 - tail
	}
	return tail
}

// studentQuantile inverts studentCDF by bisection.
func studentQuantile(p, df float64) float64 {
	lo, hi := -1e3, 1e3
	for range 200 {
		mid := (lo + hi) / 2
		if studentCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-10 {
			break
		}
	}
	return (lo + hi) / 2
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by
// its continued fraction (Lentz's method), as in Numerical Recipes §6.4.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	nonzero := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	c, d := 1.0, 1/nonzero(1-(a+b)*x/(a+1))
	h := d
	// step applies one term of the fraction and returns its factor.
	step := func(num float64) float64 {
		d = 1 / nonzero(1+num*d)
		c = nonzero(1 + num/c)
		return d * c
	}
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		h *= step(fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)))
		del := step(-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1)))
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}
