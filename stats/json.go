package stats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// wireFormat versions the JSON encoding. A reader rejects any other version
// (and unknown fields) rather than merge shards it might misread.
const wireFormat = 1

// wire is the JSON form of a Histogram:
//
//	{"format":1,"count":3,"invalid":1,"sum":6.5,"sum_exact":["16:1a000000000000"],
//	 "min":0.5,"max":4,"samples":[0.5,2,4]}                                  (exact mode)
//	{"format":1,"count":3000,"sum":30000,"sum_exact":["16:d4c0000000000000","17:1"],
//	 "min":0,"max":20,"sub_bucket_bits":10,"zero":1000,"buckets":[1050880,1000,1024,1000]}
//	                                         (bucket mode: 1000 zeros, 1000 tens, 1000 twenties)
//
// buckets lists only non-empty buckets as flat pairs: the first key, its
// count, then each following key as the gap from the previous one, and its
// count. A key is the top 22 bits of the IEEE-754 binary64 encoding of any
// value in the bucket (bits >> 42), so a reader needs nothing from this
// package to decode it. Gaps keep a dense distribution to a few bytes per
// bucket.
//
// sum is informational, the exact sum rounded; sum_exact is the exact sum as
// the non-zero 64-bit words "index:hex" of an integer in units of 2^−1074,
// so that a merge of decoded shards still has an exact sum.
type wire struct {
	Format        int       `json:"format"`
	Count         int64     `json:"count"`
	Invalid       int64     `json:"invalid,omitempty"`
	Sum           float64   `json:"sum"`
	SumExact      []string  `json:"sum_exact,omitempty"`
	Min           *float64  `json:"min,omitempty"`
	Max           *float64  `json:"max,omitempty"`
	Samples       []float64 `json:"samples,omitempty"`
	SubBucketBits int       `json:"sub_bucket_bits,omitempty"`
	Zero          int64     `json:"zero,omitempty"`
	Buckets       []int64   `json:"buckets,omitempty"`
}

// MarshalJSON encodes h sparsely (see wire). Equal histograms encode to
// equal bytes, however they were built. It has a value receiver so that a
// Histogram held by value in a struct still marshals through it.
func (h Histogram) MarshalJSON() ([]byte, error) {
	w := wire{Format: wireFormat, Count: h.count, Invalid: h.invalid, Sum: h.sum.float()}
	for i, x := range h.sum {
		if x != 0 {
			w.SumExact = append(w.SumExact, strconv.Itoa(i)+":"+strconv.FormatUint(x, 16))
		}
	}
	if h.count > 0 {
		w.Min, w.Max = &h.min, &h.max
	}
	if h.count <= ExactLimit {
		w.Samples = h.samples
		return json.Marshal(w)
	}
	w.SubBucketBits = SubBucketBits
	w.Zero = h.zero
	prev := uint64(0)
	for ci, c := range h.chunks {
		if c == nil {
			continue
		}
		for j, n := range c.c {
			if n == 0 {
				continue
			}
			k := minKey + uint64(ci)<<chunkBits + uint64(j)
			w.Buckets = append(w.Buckets, int64(k-prev), n)
			prev = k
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON replaces h with the decoded histogram. It checks the encoding
// is one MarshalJSON could have written — counts add up, samples are sorted,
// Min and Max fall in the first and last buckets, the sums agree — because a
// shard that is silently wrong would poison every merge it joins.
func (h *Histogram) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wire
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("stats: decode histogram: %w", err)
	}
	d, err := fromWire(&w)
	if err != nil {
		return fmt.Errorf("stats: decode histogram: %w", err)
	}
	*h = *d
	return nil
}

func fromWire(w *wire) (*Histogram, error) {
	if w.Format != wireFormat {
		return nil, fmt.Errorf("format %d, want %d", w.Format, wireFormat)
	}
	if w.Count < 0 || w.Invalid < 0 {
		return nil, errors.New("negative count")
	}
	h := &Histogram{count: w.Count, invalid: w.Invalid}
	if err := h.sum.parse(w.SumExact); err != nil {
		return nil, err
	}
	if got := h.sum.float(); got != w.Sum {
		return nil, fmt.Errorf("sum %v disagrees with sum_exact %v", w.Sum, got)
	}
	if w.Count == 0 {
		if w.Min != nil || w.Max != nil || len(w.Samples) > 0 || w.Zero != 0 || len(w.Buckets) > 0 || w.SubBucketBits != 0 || len(w.SumExact) > 0 {
			return nil, errors.New("empty histogram with values")
		}
		return h, nil
	}
	if w.Min == nil || w.Max == nil || !valid(*w.Min) || !valid(*w.Max) || *w.Min > *w.Max {
		return nil, errors.New("min and max must be finite, non-negative and ordered")
	}
	h.min, h.max = *w.Min+0, *w.Max+0 // +0 turns −0 into 0
	if w.Count <= ExactLimit {
		return h, h.exactFromWire(w)
	}
	return h, h.bucketsFromWire(w)
}

func (h *Histogram) exactFromWire(w *wire) error {
	if int64(len(w.Samples)) != w.Count || w.Zero != 0 || len(w.Buckets) > 0 || w.SubBucketBits != 0 {
		return fmt.Errorf("count %d ≤ %d needs exactly that many samples and no buckets", w.Count, ExactLimit)
	}
	var sum accumulator
	for i, v := range w.Samples {
		if !valid(v) || i > 0 && v < w.Samples[i-1] {
			return fmt.Errorf("sample %d (%v) is invalid or out of order", i, v)
		}
		sum.add(v + 0)
	}
	h.samples = make([]float64, len(w.Samples))
	for i, v := range w.Samples {
		h.samples[i] = v + 0
	}
	if sum != h.sum {
		return errors.New("sum_exact disagrees with the samples")
	}
	if h.samples[0] != h.min || h.samples[len(h.samples)-1] != h.max {
		return errors.New("min or max disagrees with the samples")
	}
	return nil
}

func (h *Histogram) bucketsFromWire(w *wire) error {
	if len(w.Samples) > 0 {
		return fmt.Errorf("count %d > %d must be in buckets, not samples", w.Count, ExactLimit)
	}
	if w.SubBucketBits != SubBucketBits {
		return fmt.Errorf("sub_bucket_bits %d, want %d", w.SubBucketBits, SubBucketBits)
	}
	if len(w.Buckets)%2 != 0 {
		return errors.New("buckets must be key/count pairs")
	}
	if w.Zero < 0 || w.Zero > w.Count {
		return errors.New("zero count out of range")
	}
	h.zero = w.Zero
	left := w.Count - w.Zero // what the buckets must still account for; checked as we go so crafted counts cannot overflow
	var k, first, last uint64
	for i := 0; i < len(w.Buckets); i += 2 {
		gap, n := w.Buckets[i], w.Buckets[i+1]
		if gap <= 0 && i > 0 || gap < 0 || uint64(gap) > maxKey-k {
			return fmt.Errorf("bucket pair %d: key out of order or range", i/2)
		}
		k += uint64(gap)
		if k < minKey {
			return fmt.Errorf("bucket key %d below the first bucket %d", k, minKey)
		}
		if n <= 0 || n > left {
			return fmt.Errorf("bucket pair %d: count %d out of range", i/2, n)
		}
		left -= n
		if i == 0 {
			first = k
		}
		last = k
		c := h.chunkAt(int((k - minKey) >> chunkBits))
		c.n += n
		c.c[(k-minKey)&(chunkSize-1)] += n
	}
	if left != 0 {
		return errors.New("bucket counts do not add up to count")
	}
	// Min and Max are exact, so they must sit in the extreme non-empty buckets.
	if (h.zero > 0) != (h.min < ZeroBelow) || h.zero == 0 && key(h.min) != first {
		return errors.New("min disagrees with the lowest bucket")
	}
	if len(w.Buckets) == 0 && h.max >= ZeroBelow || len(w.Buckets) > 0 && key(h.max) != last {
		return errors.New("max disagrees with the highest bucket")
	}
	return nil
}

// valid reports whether v may be recorded: finite and non-negative.
func valid(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// parse reads the "index:hex" words written by MarshalJSON.
func (a *accumulator) parse(words []string) error {
	*a = accumulator{}
	prev := -1
	for _, s := range words {
		is, hs, ok := strings.Cut(s, ":")
		i, err1 := strconv.Atoi(is)
		x, err2 := strconv.ParseUint(hs, 16, 64)
		if !ok || err1 != nil || err2 != nil || x == 0 || i <= prev || i >= accWords {
			return fmt.Errorf("sum_exact word %q malformed, zero or out of order", s)
		}
		a[i], prev = x, i
	}
	return nil
}
