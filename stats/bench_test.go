package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"
)

// latencies returns n log-normal latencies (median 200 ms, σ 1.5: 0.1 ms to
// minutes in a million draws), pre-drawn so benchmarks time the histogram,
// not the generator.
func latencies(n int) []float64 {
	r := rand.New(rand.NewPCG(1, 1))
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = 200 * math.Exp(1.5*r.NormFloat64())
	}
	return vs
}

func BenchmarkAdd(b *testing.B) {
	vals := latencies(1 << 16)
	const mask = 1<<16 - 1
	b.Run("bucket", func(b *testing.B) {
		h := New()
		for _, v := range vals { // past ExactLimit, and every bucket the loop will hit already exists
			_ = h.Add(v)
		}
		i := 0
		if a := testing.AllocsPerRun(10000, func() { _ = h.Add(vals[i&mask]); i++ }); a != 0 {
			b.Fatalf("Add allocates %v times per call in bucket mode", a)
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = h.Add(vals[i&mask])
			i++
		}
	})
	b.Run("exact-fill", func(b *testing.B) {
		// The cost of the first ExactLimit adds (sorted insert), per add.
		b.ReportAllocs()
		for b.Loop() {
			h := New()
			for _, v := range vals[:ExactLimit] {
				_ = h.Add(v)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ExactLimit), "ns/add")
	})
}

func BenchmarkQuantile(b *testing.B) {
	for _, n := range []int{1000, 1_000_000} {
		h := New()
		for _, v := range latencies(n) {
			_ = h.Add(v)
		}
		b.Run(fmt.Sprintf("n=%d/exact=%v", n, h.Exact()), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = h.Quantile(99)
			}
		})
	}
}

func BenchmarkMerge(b *testing.B) {
	vals := latencies(1 << 20)
	shards := make([]*Histogram, 16)
	for i := range shards {
		shards[i] = New()
		for _, v := range vals[i*len(vals)/16 : (i+1)*len(vals)/16] {
			_ = shards[i].Add(v)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		m := New()
		for _, s := range shards {
			m.Merge(s)
		}
	}
}

// BenchmarkMemory reports what a histogram holds after n adds: held-B from
// its own structures, heap-B as the live heap the runtime measures, raw-B
// what keeping the samples would cost, and json-B the size of its shard
// encoding. Memory follows the spread of the values, not their number:
// uniform values over a fixed range stop growing once every chunk of that
// range has been touched (by 10^6 adds here), while log-normal
// tails reach a few new octaves as n grows a thousandfold, bounded by the
// 505 KB worst case of the package doc.
func BenchmarkMemory(b *testing.B) {
	dists := []struct {
		name string
		draw func(r *rand.Rand) float64
	}{
		{"lognormal", func(r *rand.Rand) float64 { return 200 * math.Exp(1.5*r.NormFloat64()) }},
		{"uniform1-1000", func(r *rand.Rand) float64 { return 1 + 999*r.Float64() }},
	}
	for _, d := range dists {
		for _, n := range []int{10_000, 1_000_000, 10_000_000} {
			b.Run(fmt.Sprintf("%s/adds=%.0e", d.name, float64(n)), func(b *testing.B) {
				// Values are drawn on the fly: a pre-drawn 10^7 slice would be
				// the very memory this benchmark shows is not needed.
				build := func() *Histogram {
					r := rand.New(rand.NewPCG(1, 1))
					h := New()
					for range n {
						_ = h.Add(d.draw(r))
					}
					return h
				}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				h := build()
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
				data, err := json.Marshal(h)
				if err != nil {
					b.Fatal(err)
				}
				held := heldBytes(h)
				runtime.KeepAlive(h)

				for b.Loop() {
					build()
				}
				b.ReportMetric(float64(held), "held-B")
				b.ReportMetric(float64(heap), "heap-B")
				b.ReportMetric(float64(8*n), "raw-B")
				b.ReportMetric(float64(len(data)), "json-B")
			})
		}
	}
}

// heldBytes counts the memory a histogram's own structures hold.
func heldBytes(h *Histogram) int {
	n := int(unsafe.Sizeof(*h)) + 8*cap(h.samples) + 8*cap(h.chunks)
	for _, c := range h.chunks {
		if c != nil {
			n += int(unsafe.Sizeof(*c))
		}
	}
	return n
}
