package stats

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// mergeValues draws latency-like values with some zeros and sub-resolution
// values mixed in, so the zero bucket takes part in every merge.
func mergeValues(r *rand.Rand, n int) []float64 {
	vs := make([]float64, n)
	for i := range vs {
		switch r.IntN(50) {
		case 0:
			vs[i] = 0
		case 1:
			vs[i] = r.Float64() * ZeroBelow
		default:
			vs[i] = 200 * math.Exp(1.5*r.NormFloat64())
		}
	}
	return vs
}

// sameHistogram fails unless a and b are indistinguishable through the API
// and encode to the same bytes.
func sameHistogram(t *testing.T, a, b *Histogram) {
	t.Helper()
	if a.Count() != b.Count() || a.Invalid() != b.Invalid() || a.Exact() != b.Exact() {
		t.Fatalf("count/invalid/exact %d/%d/%v vs %d/%d/%v", a.Count(), a.Invalid(), a.Exact(), b.Count(), b.Invalid(), b.Exact())
	}
	// Sum is exact, so "within float tolerance" is in fact equality.
	for name, pair := range map[string][2]float64{
		"Sum": {a.Sum(), b.Sum()}, "Min": {a.Min(), b.Min()}, "Max": {a.Max(), b.Max()}, "Mean": {a.Mean(), b.Mean()},
	} {
		if pair[0] != pair[1] && !(math.IsNaN(pair[0]) && math.IsNaN(pair[1])) {
			t.Errorf("%s: %v vs %v", name, pair[0], pair[1])
		}
	}
	for _, pm := range permilles {
		p := float64(pm) / 10
		if qa, qb := a.Quantile(p), b.Quantile(p); qa != qb && !(math.IsNaN(qa) && math.IsNaN(qb)) {
			t.Errorf("Quantile(%v): %v vs %v", p, qa, qb)
		}
	}
	ja, jb := mustJSON(t, a), mustJSON(t, b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("JSON differs:\n%.300s\n%.300s", ja, jb)
	}
}

func mustJSON(t *testing.T, h *Histogram) []byte {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMergeEqualsSingle(t *testing.T) {
	tests := []struct {
		name   string
		shards []int // values per shard, in order
	}{
		{"two exact shards stay exact", []int{500, 500}},
		{"exact shards cross the limit", []int{400, 400, 400}},
		{"exact shard then bucket shard", []int{10, 100_000}},
		{"bucket shard then exact shard", []int{100_000, 10}},
		{"empty shards", []int{0, 3000, 0, 0}},
		{"many small shards", repeatInt(100, 200)},
		{"uneven shards", []int{1, 1024, 1025, 7, 50_000, 2, 999, 20_000, 3}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 17))
			single := New()
			var shards []*Histogram
			for _, n := range tt.shards {
				s := New()
				for _, v := range mergeValues(r, n) {
					mustAdd(t, s, v)
					mustAdd(t, single, v)
				}
				// Rejected values merge too.
				_ = s.Add(math.NaN())
				_ = single.Add(math.NaN())
				shards = append(shards, s)
			}

			t.Run("fold", func(t *testing.T) {
				m := New()
				for _, s := range shards {
					m.Merge(s)
				}
				sameHistogram(t, single, m)
			})
			t.Run("tree", func(t *testing.T) {
				sameHistogram(t, single, mergeTree(shards))
			})
			t.Run("reversed through JSON", func(t *testing.T) {
				m := New()
				for j := len(shards) - 1; j >= 0; j-- {
					var d Histogram
					if err := json.Unmarshal(mustJSON(t, shards[j]), &d); err != nil {
						t.Fatal(err)
					}
					m.Merge(&d)
				}
				sameHistogram(t, single, m)
			})
		})
	}
}

// mergeTree merges pairwise, as a reducer over many shard files would, into
// fresh histograms so the shards themselves stay untouched.
func mergeTree(hs []*Histogram) *Histogram {
	if len(hs) == 1 {
		m := New()
		m.Merge(hs[0])
		return m
	}
	l, r := mergeTree(hs[:len(hs)/2]), mergeTree(hs[len(hs)/2:])
	l.Merge(r)
	return l
}

func repeatInt(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestMergeLeavesOtherUntouched(t *testing.T) {
	for _, n := range []int{10, 5000} {
		r := rand.New(rand.NewPCG(uint64(n), 1))
		dst, src := New(), New()
		for _, v := range mergeValues(r, n) {
			mustAdd(t, dst, v)
		}
		for _, v := range mergeValues(r, n) {
			mustAdd(t, src, v)
		}
		before := mustJSON(t, src)
		dst.Merge(src)
		mustAdd(t, dst, 1) // would show through if dst aliased src's storage
		if after := mustJSON(t, src); !bytes.Equal(before, after) {
			t.Errorf("n=%d: Merge modified its argument", n)
		}
	}
}

func TestMergeSelf(t *testing.T) {
	for _, n := range []int{10, 600, 5000} {
		r := rand.New(rand.NewPCG(uint64(n), 2))
		h, twice := New(), New()
		for _, v := range mergeValues(r, n) {
			mustAdd(t, h, v)
			mustAdd(t, twice, v)
			mustAdd(t, twice, v)
		}
		h.Merge(h)
		sameHistogram(t, twice, h)
	}
}

func TestMergeNilAndEmpty(t *testing.T) {
	h := New()
	mustAdd(t, h, 2)
	h.Merge(nil)
	h.Merge(New())
	if h.Count() != 1 || h.Min() != 2 || h.Max() != 2 {
		t.Errorf("merging nothing changed the histogram: count %d min %v max %v", h.Count(), h.Min(), h.Max())
	}
	e := New()
	e.Merge(h)
	sameHistogram(t, h, e)
}
