package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// nearestRank is the reference percentile: sort, then take rank
// ceil(n·pm/1000) in integer arithmetic, pm being the percentile in tenths
// (999 = p99.9), so the reference has no floating-point rounding at all.
func nearestRank(sorted []float64, pm int) float64 {
	n := len(sorted)
	r := (n*pm + 999) / 1000
	return sorted[max(1, min(r, n))-1]
}

// permilles are the percentiles checked everywhere, in tenths of a percent.
var permilles = []int{0, 1, 10, 100, 250, 500, 750, 900, 950, 990, 999, 1000}

func TestKeyConstants(t *testing.T) {
	if got := key(ZeroBelow); got != minKey {
		t.Errorf("key(ZeroBelow) = %d, minKey = %d", got, minKey)
	}
	if got := key(math.MaxFloat64); got != maxKey {
		t.Errorf("key(MaxFloat64) = %d, maxKey = %d", got, maxKey)
	}
	if RelativeError > 0.001 {
		t.Errorf("RelativeError %v exceeds the promised 0.1 %%", RelativeError)
	}
}

// TestBucketBound checks the figures the package doc states for memory.
func TestBucketBound(t *testing.T) {
	buckets := key(1e12) - minKey + 1
	if buckets != 61206 {
		t.Errorf("buckets over 1e-6..1e12 = %d, doc says 61206", buckets)
	}
	if chunks := (key(1e12)-minKey)>>chunkBits + 1; chunks != 957 {
		t.Errorf("chunks over 1e-6..1e12 = %d, doc says 957", chunks)
	}
	if chunks := (maxKey-minKey)>>chunkBits + 1; chunks != 16704 {
		t.Errorf("chunks over all finite values = %d, doc says 16704", chunks)
	}
}

// TestRepresentativeBound checks the per-bucket guarantee behind the quantile
// error bound: the midpoint of a value's bucket is within RelativeError of it,
// including at octave edges and around ZeroBelow.
func TestRepresentativeBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []float64{ZeroBelow, 1, math.Nextafter(2, 0), 2, 1023.999, 1e12, 1e300}
	for range 100000 {
		vals = append(vals, math.Exp(r.Float64()*math.Log(1e18))*1e-6)
	}
	wide := &Histogram{min: 0, max: math.MaxFloat64} // no clamping
	for _, v := range vals {
		got := wide.represent(key(v))
		if e := math.Abs(got-v) / v; e > RelativeError {
			t.Fatalf("value %v: bucket midpoint %v, relative error %v > %v", v, got, e, RelativeError)
		}
	}
}

func TestExactModeMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 1))
	tests := []struct {
		name string
		n    int
	}{
		{"1 value", 1},
		{"2 values", 2},
		{"4 values", 4},
		{"10 values", 10},
		{"100 values", 100},
		{"1000 values", 1000},
		{"at the limit", ExactLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New()
			vals := make([]float64, tt.n)
			for i := range vals {
				vals[i] = math.Round(r.ExpFloat64()*100) / 4 // ties on purpose
				mustAdd(t, h, vals[i])
			}
			slices.Sort(vals)
			if !h.Exact() {
				t.Fatal("Exact() = false at or below ExactLimit")
			}
			for _, pm := range permilles {
				p := float64(pm) / 10
				if got, want := h.Quantile(p), nearestRank(vals, pm); got != want {
					t.Errorf("Quantile(%v) = %v, want %v", p, got, want)
				}
			}
			if h.Min() != vals[0] || h.Max() != vals[len(vals)-1] || h.Count() != int64(tt.n) {
				t.Errorf("min/max/count = %v/%v/%d", h.Min(), h.Max(), h.Count())
			}
		})
	}
}

// TestRankDecimalPercentiles pins the rank rounding: p99.9 of 1000 values is
// rank 999 as in decimal arithmetic, not 1000 from binary representation error.
func TestRankDecimalPercentiles(t *testing.T) {
	tests := []struct {
		name string
		n    int64
		p    float64
		want int64
	}{
		{"p99.9 of 1000", 1000, 99.9, 999},
		{"p99.9 of 1e6", 1_000_000, 99.9, 999_000},
		{"p0.1 of 1000", 1000, 0.1, 1},
		{"p95 of 20", 20, 95, 19},
		{"p57 of 100", 100, 57, 57},
		{"p29 of 100", 100, 29, 29},
		{"p33.3 of 10", 10, 33.3, 4},
		{"p0 clamps to 1", 10, 0, 1},
		{"p100 is n", 7, 100, 7},
		{"fraction rounds up", 3, 50, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Rank(tt.n, tt.p); got != tt.want {
				t.Errorf("Rank(%d, %v) = %d, want %d", tt.n, tt.p, got, tt.want)
			}
		})
	}
	// Every whole and tenth percentile against integer arithmetic.
	for n := int64(1); n <= 2000; n += 37 {
		for pm := int64(0); pm <= 1000; pm++ {
			want := max(1, min((n*pm+999)/1000, n))
			if got := Rank(n, float64(pm)/10); got != want {
				t.Fatalf("Rank(%d, %v) = %d, want %d", n, float64(pm)/10, got, want)
			}
		}
	}
}

// distributions are the shapes a serving benchmark produces: flat, a
// long-tailed queue, latency (log-normal), a cache-hit/miss bimodal mix and
// one spanning the whole documented range.
var distributions = []struct {
	name string
	draw func(r *rand.Rand) float64
}{
	{"uniform", func(r *rand.Rand) float64 { return r.Float64() * 1000 }},
	{"exponential", func(r *rand.Rand) float64 { return r.ExpFloat64() * 50 }},
	{"log-normal", func(r *rand.Rand) float64 { return 200 * math.Exp(1.5*r.NormFloat64()) }},
	{"bimodal", func(r *rand.Rand) float64 {
		if r.IntN(10) < 7 {
			return math.Abs(20 + 2*r.NormFloat64())
		}
		return math.Abs(800 + 50*r.NormFloat64())
	}},
	{"log-uniform 1e-7..1e12", func(r *rand.Rand) float64 { return 1e-7 * math.Pow(10, 19*r.Float64()) }},
}

func TestBucketModeRelativeError(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	for i, d := range distributions {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(i), 99))
			h := New()
			vals := make([]float64, n)
			for j := range vals {
				vals[j] = d.draw(r)
				mustAdd(t, h, vals[j])
			}
			slices.Sort(vals)
			if h.Exact() {
				t.Fatal("Exact() = true after a million values")
			}
			worst := 0.0
			for _, pm := range permilles {
				p := float64(pm) / 10
				got, want := h.Quantile(p), nearestRank(vals, pm)
				if want < ZeroBelow {
					if math.Abs(got-want) >= ZeroBelow {
						t.Errorf("p%v = %v, want %v within %v absolute", p, got, want, ZeroBelow)
					}
					continue
				}
				e := math.Abs(got-want) / want
				if e > RelativeError {
					t.Errorf("p%v = %v, want %v: relative error %.3g > %.3g", p, got, want, e, RelativeError)
				}
				worst = max(worst, e)
			}
			t.Logf("worst relative error %.3g (bound %.3g)", worst, RelativeError)
			if h.Min() != vals[0] || h.Max() != vals[n-1] || h.Count() != int64(n) {
				t.Errorf("min/max/count = %v/%v/%d, want %v/%v/%d", h.Min(), h.Max(), h.Count(), vals[0], vals[n-1], n)
			}
			// The accumulator is checked bit-exact in sum_test.go; a million
			// big.Float adds would dominate the run, so compare loosely here.
			if got, want := h.Sum(), compensatedSum(vals); math.Abs(got-want) > 1e-12*want {
				t.Errorf("Sum() = %v, want %v", got, want)
			}
		})
	}
}

// compensatedSum is a Neumaier sum, accurate to a few ulps.
func compensatedSum(vals []float64) float64 {
	var s, c float64
	for _, v := range vals {
		t := s + v
		if math.Abs(s) >= math.Abs(v) {
			c += (s - t) + v
		} else {
			c += (v - t) + s
		}
		s = t
	}
	return s + c
}

func TestEdgeValues(t *testing.T) {
	tests := []struct {
		name string
		vals []float64
		// Quantile at these percentiles must be exactly these values.
		want map[float64]float64
	}{
		{"single value", []float64{3.25}, map[float64]float64{0: 3.25, 50: 3.25, 100: 3.25}},
		{"zeros, exact", repeat(0, 10), map[float64]float64{0: 0, 50: 0, 100: 0}},
		{"zeros, bucketed", repeat(0, 5000), map[float64]float64{0: 0, 50: 0, 99.9: 0, 100: 0}},
		{"negative zero", []float64{math.Copysign(0, -1)}, map[float64]float64{50: 0}},
		{"tiny values share the zero bucket", append(repeat(0, 3000), repeat(5e-7, 3000)...), map[float64]float64{10: 0, 100: 5e-7}},
		{"huge, exact", []float64{1e12, 1e300, math.MaxFloat64}, map[float64]float64{0: 1e12, 50: 1e300, 100: math.MaxFloat64}},
		{"huge, bucketed", repeat(math.MaxFloat64, 2000), map[float64]float64{1: math.MaxFloat64, 50: math.MaxFloat64, 100: math.MaxFloat64}},
		{"one value many times", repeat(123.456, 5000), map[float64]float64{1: 123.456, 50: 123.456, 99: 123.456}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New()
			for _, v := range tt.vals {
				mustAdd(t, h, v)
			}
			for p, want := range tt.want {
				if got := h.Quantile(p); got != want || math.Signbit(got) {
					t.Errorf("Quantile(%v) = %v, want %v", p, got, want)
				}
			}
			if h.Count() != int64(len(tt.vals)) {
				t.Errorf("Count() = %d, want %d", h.Count(), len(tt.vals))
			}
		})
	}
}

func repeat(v float64, n int) []float64 { return slices.Repeat([]float64{v}, n) }

func TestEmpty(t *testing.T) {
	var h Histogram // the zero value must be usable
	for name, got := range map[string]float64{
		"Min": h.Min(), "Max": h.Max(), "Mean": h.Mean(), "Quantile": h.Quantile(50),
	} {
		if !math.IsNaN(got) {
			t.Errorf("%s() of an empty histogram = %v, want NaN (absent)", name, got)
		}
	}
	if h.Count() != 0 || h.Sum() != 0 || !h.Exact() {
		t.Errorf("Count/Sum/Exact = %d/%v/%v", h.Count(), h.Sum(), h.Exact())
	}
}

func TestInvalidValues(t *testing.T) {
	tests := []struct {
		name string
		v    float64
	}{
		{"NaN", math.NaN()},
		{"+Inf", math.Inf(1)},
		{"-Inf", math.Inf(-1)},
		{"negative", -1},
		{"tiny negative", -math.SmallestNonzeroFloat64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New()
			mustAdd(t, h, 5)
			if err := h.Add(tt.v); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Add(%v) error = %v, want ErrInvalid", tt.v, err)
			}
			if h.Count() != 1 || h.Invalid() != 1 || h.Sum() != 5 || h.Min() != 5 || h.Max() != 5 {
				t.Errorf("after a rejected value: count %d invalid %d sum %v min %v max %v",
					h.Count(), h.Invalid(), h.Sum(), h.Min(), h.Max())
			}
		})
	}
}

func TestQuantileOutOfRange(t *testing.T) {
	h := New()
	mustAdd(t, h, 1)
	for _, p := range []float64{-1, 100.0001, math.NaN(), math.Inf(1)} {
		if got := h.Quantile(p); !math.IsNaN(got) {
			t.Errorf("Quantile(%v) = %v, want NaN", p, got)
		}
	}
}

func TestMean(t *testing.T) {
	h := New()
	for _, v := range []float64{1, 2, 3, 4} {
		mustAdd(t, h, v)
	}
	if h.Mean() != 2.5 || h.Sum() != 10 {
		t.Errorf("Mean/Sum = %v/%v, want 2.5/10", h.Mean(), h.Sum())
	}
}

func mustAdd(t testing.TB, h *Histogram, v float64) {
	t.Helper()
	if err := h.Add(v); err != nil {
		t.Fatal(err)
	}
}
