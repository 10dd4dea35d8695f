// Package stats holds bounded-memory distributions whose shards merge exactly,
// so a one-hour load run costs the memory of a one-minute run and results
// recorded per worker, per process or per machine can be combined afterwards
// as if every value had gone into one place.
//
// # Histogram
//
// A Histogram keeps its first ExactLimit values verbatim, so a short run
// reports exactly the values that happened. Past that it moves to log-linear
// buckets in the style of HdrHistogram: every power of two [2^e, 2^(e+1)) is
// cut into 2^SubBucketBits = 1024 equal sub-buckets. A bucket is identified by
// the top 22 bits of the value's IEEE-754 binary64 encoding (sign, 11 exponent
// bits, the first 10 mantissa bits), which is exactly that cut, is monotonic
// in the value, and costs a shift to compute.
//
// # Error bound
//
// Quantile uses nearest rank: the p-th percentile of n values is the value
// of rank ceil(n·p/100) in sorted order, the same definition as NearestRank
// (and so report.NewStat). Because buckets partition the value line in order, counting ranks
// through the buckets finds the very bucket holding the true nearest-rank
// value v. The reported value is that bucket's midpoint, clamped to the exact
// [Min, Max]. A bucket in [2^e, 2^(e+1)) is 2^e/1024 wide, so the midpoint is
// within 2^e/2048 of v and v ≥ 2^e, hence
//
//	|reported − v| / v ≤ 1/2048 ≈ 0.049 %   (RelativeError)
//
// for every v ≥ ZeroBelow, at every count. Clamping only moves the answer
// towards v, since v itself lies in [Min, Max]. Rank 1 and rank n return
// the exact Min and Max. In exact mode every quantile is exact.
//
// Values below ZeroBelow (1e-6; one nanosecond when the unit is
// milliseconds, below any client clock) share one zero bucket: a quantile
// that falls there is reported as Min, within an absolute 1e-6 of the true
// value, and exactly 0 when the data holds zeros.
//
// Count, Sum, Min and Max are exact in both modes; Sum is accumulated in a
// wide fixed-point integer, so it does not depend on the order of adds and
// merges and is rounded to float64 once, when read.
//
// # Memory
//
// Bucket counts live in lazily allocated chunks of 64 adjacent buckets (520
// bytes each), indexed by a slice of chunk pointers that grows only to the
// largest value seen. Memory depends on the spread of the values, never on
// how many there are. Over 1e-6 .. 1e12 there are at most 61,206 buckets
// (plus the zero bucket), so at most 957 chunks: about 505 KB in the worst
// case, when values fill that whole range densely. Latencies spanning
// 0.1 ms .. 10 min touch about 23 octaves, and in practice a few dozen to a
// few hundred chunks. Beyond 1e12 the bound still holds for any finite value:
// at most 16,704 chunks (≈ 8.8 MB), reached only by data spanning
// 1e-6 .. 1.8e308.
//
// # Invalid values
//
// Add rejects NaN, ±Inf and negative values: it returns an error wrapping
// ErrInvalid, does not record the value, and counts it in Invalid so a
// dropped measurement stays visible even where the error is ignored.
//
// # Concurrency
//
// A Histogram is not safe for concurrent writes. The read methods never
// modify it, so any number of goroutines may read one that no goroutine is
// writing.
package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

const (
	// ExactLimit is how many values a Histogram keeps verbatim before it
	// switches to buckets. 1024 values cost 8 KB, and runs that short are the
	// ones where an exact answer matters most (a smoke test gating on p99 of
	// 200 requests).
	ExactLimit = 1024

	// SubBucketBits sets the resolution: each power of two is cut into
	// 2^SubBucketBits linear sub-buckets.
	SubBucketBits = 10

	// ZeroBelow is the smallest resolvable value: values in [0, ZeroBelow)
	// share the zero bucket.
	ZeroBelow = 1e-6

	// RelativeError bounds |reported − true| / true for any quantile whose
	// true value is at least ZeroBelow: half a sub-bucket, 1/2^(SubBucketBits+1).
	RelativeError = 1.0 / (2 << SubBucketBits)
)

const (
	// keyShift drops the mantissa bits below the first SubBucketBits: what is
	// left of the float64 encoding is the bucket key.
	keyShift = 52 - SubBucketBits
	// minKey is the key of ZeroBelow, the first non-zero bucket
	// (math.Float64bits(1e-6) >> 42; TestKeyConstants checks it).
	minKey = 1027121
	// maxKey is the key of math.MaxFloat64, the last finite bucket.
	maxKey = 2096127

	chunkBits = 6
	chunkSize = 1 << chunkBits
)

// ErrInvalid is wrapped by the error Add returns for NaN, ±Inf and negative
// values.
var ErrInvalid = errors.New("stats: value must be finite and non-negative")

// chunk counts 64 adjacent buckets. Chunks rather than one map entry per
// bucket keep Add allocation-free once a region has been seen (a map grows),
// cost 8 bytes per bucket where the distribution is dense, and let Quantile
// skip whole chunks by their total.
type chunk struct {
	n int64 // total of c, so Quantile can skip the chunk whole
	c [chunkSize]int64
}

// Histogram is a bounded-memory distribution of non-negative values. The zero
// value is an empty histogram ready to use.
type Histogram struct {
	count    int64 // valid values recorded
	invalid  int64 // values rejected by Add
	min, max float64
	sum      accumulator

	// Exact mode (count ≤ ExactLimit): every value, kept sorted so that reads
	// need no sort and therefore never write.
	samples []float64

	// Bucket mode (count > ExactLimit).
	zero   int64    // values in [0, ZeroBelow)
	chunks []*chunk // chunks[i] holds keys minKey+64i .. minKey+64i+63
}

// New returns an empty Histogram.
func New() *Histogram { return &Histogram{} }

// Add records v. NaN, ±Inf and negative values are not recorded: they are
// counted in Invalid and reported by an error wrapping ErrInvalid.
func (h *Histogram) Add(v float64) error {
	// !(v >= 0) is true for NaN as well as negatives.
	if !(v >= 0) || math.IsInf(v, 1) {
		h.invalid++
		return fmt.Errorf("%w: got %v", ErrInvalid, v)
	}
	if v == 0 {
		v = 0 // −0 would otherwise surface as Min and in the JSON
	}
	if h.count == 0 || v < h.min {
		h.min = v
	}
	if h.count == 0 || v > h.max {
		h.max = v
	}
	h.sum.add(v)
	h.count++
	if h.count <= ExactLimit {
		i, _ := slices.BinarySearch(h.samples, v)
		h.samples = slices.Insert(h.samples, i, v)
		return nil
	}
	if h.samples != nil {
		h.toBuckets()
	}
	h.record(v)
	return nil
}

// toBuckets moves the exact samples into buckets; the mode is a function of
// the count alone, so a merged histogram ends in the same state as one that
// saw every value.
func (h *Histogram) toBuckets() {
	for _, v := range h.samples {
		h.record(v)
	}
	h.samples = nil
}

// record counts v in its bucket.
func (h *Histogram) record(v float64) {
	if v < ZeroBelow {
		h.zero++
		return
	}
	i := key(v) - minKey
	c := h.chunkAt(int(i >> chunkBits))
	c.n++
	c.c[i&(chunkSize-1)]++
}

// chunkAt returns chunk i, allocating it (and growing the index) on first use.
func (h *Histogram) chunkAt(i int) *chunk {
	if i >= len(h.chunks) {
		h.chunks = append(h.chunks, make([]*chunk, i+1-len(h.chunks))...)
	}
	c := h.chunks[i]
	if c == nil {
		c = new(chunk)
		h.chunks[i] = c
	}
	return c
}

// key returns the bucket key of v ≥ ZeroBelow.
func key(v float64) uint64 { return math.Float64bits(v) >> keyShift }

// Count returns the number of values recorded (Invalid ones excluded).
func (h *Histogram) Count() int64 { return h.count }

// Invalid returns the number of values Add rejected.
func (h *Histogram) Invalid() int64 { return h.invalid }

// Exact reports whether the histogram still holds every value verbatim, so
// that every quantile is exact. It is true exactly when Count ≤ ExactLimit.
func (h *Histogram) Exact() bool { return h.count <= ExactLimit }

// Sum returns the exact sum rounded to float64 (+Inf if it overflows), 0
// when empty.
func (h *Histogram) Sum() float64 { return h.sum.float() }

// Min returns the smallest value, or NaN when empty: a statistic over no
// values is absent, and report.F turns NaN into an absent field.
func (h *Histogram) Min() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.min
}

// Max returns the largest value, or NaN when empty.
func (h *Histogram) Max() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.max
}

// Mean returns Sum/Count, or NaN when empty.
func (h *Histogram) Mean() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.sum.float() / float64(h.count)
}

// Quantile returns the p-th percentile (0 ≤ p ≤ 100) by nearest rank: the
// value of rank ceil(n·p/100), clamped to 1..n, so p = 0 gives Min and
// p = 100 gives Max. It is exact in exact mode and within RelativeError of
// the true nearest-rank value in bucket mode (see the package doc). It
// returns NaN when the histogram is empty or p is outside [0, 100].
func (h *Histogram) Quantile(p float64) float64 {
	if h.count == 0 || !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	r := Rank(h.count, p)
	switch {
	case r == 1:
		return h.min
	case r == h.count:
		return h.max
	case h.count <= ExactLimit:
		return h.samples[r-1]
	}
	seen := h.zero
	if seen >= r {
		// Every value in the zero bucket lies in [Min, ZeroBelow).
		return h.min
	}
	for ci, c := range h.chunks {
		if c == nil {
			continue
		}
		if seen+c.n < r {
			seen += c.n
			continue
		}
		for j, n := range c.c {
			seen += n
			if seen >= r {
				return h.represent(minKey + uint64(ci)<<chunkBits + uint64(j))
			}
		}
	}
	panic("stats: bucket counts do not add up to Count")
}

// represent returns the value reported for bucket k: its midpoint, which is
// within half a bucket of anything in it, clamped to the exact [Min, Max].
func (h *Histogram) represent(k uint64) float64 {
	lo := math.Float64frombits(k << keyShift)
	hi := math.Float64frombits((k + 1) << keyShift) // +Inf past MaxFloat64; the clamp absorbs it
	mid := lo + (hi-lo)/2                           // exact: lo and hi share all but the last sub-bucket bit
	return min(max(mid, h.min), h.max)
}

// Merge adds every value recorded in other to h, exactly: the result is the
// histogram that adding all values of both to one histogram would give, in
// any order and grouping of merges. It converts between exact and bucket
// mode as the combined count requires. other is not modified.
func (h *Histogram) Merge(other *Histogram) {
	if other == nil {
		return
	}
	if other == h {
		other = h.clone()
	}
	h.invalid += other.invalid
	if other.count == 0 {
		return
	}
	if h.count == 0 {
		h.min, h.max = other.min, other.max
	} else {
		h.min, h.max = min(h.min, other.min), max(h.max, other.max)
	}
	h.sum.merge(&other.sum)
	total := h.count + other.count
	if total <= ExactLimit {
		h.samples = mergeSorted(h.samples, other.samples)
		h.count = total
		return
	}
	h.count = total
	if h.samples != nil {
		h.toBuckets()
	}
	if other.samples != nil {
		for _, v := range other.samples {
			h.record(v)
		}
		return
	}
	h.zero += other.zero
	for ci, oc := range other.chunks {
		if oc == nil {
			continue
		}
		c := h.chunkAt(ci)
		c.n += oc.n
		for j, n := range oc.c {
			c.c[j] += n
		}
	}
}

// mergeSorted returns the sorted union of two sorted slices in a new slice,
// so the result never aliases other's samples.
func mergeSorted(a, b []float64) []float64 {
	out := make([]float64, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0] < a[0] {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// clone returns a deep copy, so that h.Merge(h) reads a stable source.
func (h *Histogram) clone() *Histogram {
	c := *h
	c.samples = slices.Clone(h.samples)
	c.chunks = make([]*chunk, len(h.chunks))
	for i, ch := range h.chunks {
		if ch != nil {
			cp := *ch
			c.chunks[i] = &cp
		}
	}
	return &c
}
