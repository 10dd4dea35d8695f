package compare

import (
	"math"
	"testing"
)

// Student's t against values from tables (two-sided 95%, one-sided 0.1%).
func TestStudentQuantile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p, df   float64
		want    float64
		maxDiff float64
	}{
		{name: "97.5% at 1 df", p: 0.975, df: 1, want: 12.706, maxDiff: 0.001},
		{name: "97.5% at 10 df", p: 0.975, df: 10, want: 2.228, maxDiff: 0.001},
		{name: "99.9% at 8 df", p: 0.999, df: 8, want: 4.501, maxDiff: 0.001},
		{name: "99.9% at 40 df", p: 0.999, df: 40, want: 3.307, maxDiff: 0.001},
		{name: "80% at 30 df", p: 0.8, df: 30, want: 0.854, maxDiff: 0.001},
		{name: "median", p: 0.5, df: 5, want: 0, maxDiff: 1e-6},
		{name: "lower tail is symmetric", p: 0.025, df: 10, want: -2.228, maxDiff: 0.001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := studentQuantile(tc.p, tc.df); math.Abs(got-tc.want) > tc.maxDiff {
				t.Errorf("t(%v, df %v) = %v, want %v", tc.p, tc.df, got, tc.want)
			}
		})
	}
}

// One outlier moves neither the trimmed mean nor, beyond one winsorized
// value, the spread.
func TestLogTrimmedOutlier(t *testing.T) {
	clean := []float64{10, 10.1, 9.9, 10.2, 9.8, 10, 10.1, 9.9, 10, 10}
	outlier := append([]float64(nil), clean...)
	outlier[3] = 80 // one request (or run) 8× slower
	a, ok1 := logTrimmed(clean)
	b, ok2 := logTrimmed(outlier)
	if !ok1 || !ok2 {
		t.Fatal("not summarised")
	}
	if d := math.Abs(math.Expm1(b.mean-a.mean)) * 100; d > 0.5 {
		t.Errorf("one outlier moved the trimmed mean by %.2f%%", d)
	}
	if b.wvar > 2*a.wvar {
		t.Errorf("one outlier widened the winsorized variance %.3g → %.3g", a.wvar, b.wvar)
	}
	if _, ok := logTrimmed([]float64{1, 0, 2, 3}); ok {
		t.Error("a zero was taken into a log")
	}
}

// The pool lends its degrees of freedom to a slice only when its spread is
// at least the slice's own: a noisy slice keeps its own wider spread.
func TestYuenPool(t *testing.T) {
	quiet, _ := logTrimmed(draw(1, 10, 100, 0.05))
	quiet2, _ := logTrimmed(draw(2, 10, 100, 0.05))
	noisy, _ := logTrimmed(draw(3, 10, 100, 0.5))
	noisy2, _ := logTrimmed(draw(4, 10, 100, 0.5))
	var p pool
	for _, s := range []trimmedSide{quiet, quiet2, noisy, noisy2} {
		p.add(s)
	}
	for _, tc := range []struct {
		name   string
		o, n   trimmedSide
		pooled bool
	}{
		{name: "quiet slice: pooled", o: quiet, n: quiet2, pooled: true},
		{name: "noisy slice: its own", o: noisy, n: noisy2, pooled: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own := yuenTest(tc.o, tc.n, pool{})
			y := yuenTest(tc.o, tc.n, p)
			if y.pooled != tc.pooled {
				t.Fatalf("pooled %v, want %v", y.pooled, tc.pooled)
			}
			if y.se < own.se {
				t.Errorf("standard error %.3g under the slice's own %.3g", y.se, own.se)
			}
			if tc.pooled && y.df <= own.df {
				t.Errorf("df %.1f, not more than the slice's own %.1f", y.df, own.df)
			}
		})
	}
}

// The trimmed-mean test on 20 samples of an unchanged, lognormal (σ 0.3)
// slice rejects "within +0.01%" at 5% in about 5% of trials, and detects a
// 50% rise against a +10% limit in most.
func TestYuenRates(t *testing.T) {
	const trials, n = 400, 20
	th := Threshold{Percent: 0.01, Increase: true}
	lim := Threshold{Percent: 10, Increase: true}
	falsePos, detected := 0, 0
	for i := range trials {
		o, _ := logTrimmed(draw(uint64(10*i), n, 100, 0.3))
		s, _ := logTrimmed(draw(uint64(10*i+1), n, 100, 0.3))
		slow, _ := logTrimmed(scale(draw(uint64(10*i+2), n, 100, 0.3), 1.5))
		if yuenTest(o, s, pool{}).pValue(th) <= 0.05 {
			falsePos++
		}
		if yuenTest(o, slow, pool{}).pValue(lim) <= 0.05 {
			detected++
		}
	}
	if rate := float64(falsePos) / trials; rate > 0.08 {
		t.Errorf("false positives %.1f%%, want about 5%%", rate*100)
	}
	if rate := float64(detected) / trials; rate < 0.8 {
		t.Errorf("a 50%% rise against +10%% detected in %.1f%% of trials", rate*100)
	}
	t.Logf("false positives %d/%d, detected %d/%d", falsePos, trials, detected, trials)
}
