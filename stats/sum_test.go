package stats

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bigSum is the reference: an exact big.Float sum, rounded once to nearest
// even, which is what accumulator.float promises.
func bigSum(t *testing.T, vs []float64) float64 {
	t.Helper()
	s := new(big.Float).SetPrec(2400)
	for _, v := range vs {
		s.Add(s, new(big.Float).SetFloat64(v))
		if s.Acc() != big.Exact {
			t.Fatal("reference sum lost precision; raise its precision")
		}
	}
	f, _ := s.Float64()
	return f
}

func TestAccumulatorMatchesExactSum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	tests := []struct {
		name string
		vals []float64
	}{
		{"empty", nil},
		{"zero", []float64{0, 0}},
		{"smallest subnormal", []float64{math.SmallestNonzeroFloat64, math.SmallestNonzeroFloat64}},
		{"subnormal into normal", []float64{math.Float64frombits(1<<52 - 1), math.SmallestNonzeroFloat64}},
		{"tie rounds to even", []float64{1, 1.0 / (1 << 53)}},
		{"tie with sticky rounds up", []float64{1, 1.0 / (1 << 53), 1.0 / (1 << 80)}},
		{"catastrophic order", []float64{1e16, 1, 1, 1, 1, 1, 1, 1, 1}},
		{"max float", []float64{math.MaxFloat64}},
		{"overflow", []float64{math.MaxFloat64, math.MaxFloat64}},
		{"just below overflow", []float64{math.MaxFloat64, math.Ldexp(1, 969)}},
		{"decimals", []float64{0.1, 0.2, 0.3, 12.345, 1e-6, 1e12}},
		{"random wide", randWide(r, 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a accumulator
			for _, v := range tt.vals {
				a.add(v)
			}
			want := bigSum(t, tt.vals)
			if got := a.float(); got != want && !(math.IsInf(got, 1) && math.IsInf(want, 1)) {
				t.Errorf("sum = %v (%x), want %v (%x)", got, math.Float64bits(got), want, math.Float64bits(want))
			}
		})
	}
}

// randWide draws values whose exponents span the whole float64 range, down
// to subnormals, so every word and carry path of the accumulator is used.
func randWide(r *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Ldexp(r.Float64(), r.IntN(2090)-1080)
	}
	return out
}

func TestAccumulatorOrderIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	vals := randWide(r, 2000)
	var fwd, rev, halves, a2 accumulator
	for i, v := range vals {
		fwd.add(v)
		rev.add(vals[len(vals)-1-i])
		if i%2 == 0 {
			halves.add(v)
		} else {
			a2.add(v)
		}
	}
	halves.merge(&a2)
	if fwd != rev || fwd != halves {
		t.Fatal("exact sum depends on the order of adds and merges")
	}
}
