package stats

import (
	"math"
	"math/bits"
)

// accWords sizes the exact sum. Bit i of the accumulator is worth 2^(i−1074),
// the weight of the smallest subnormal float64, so every finite non-negative
// float64 is an integer number of units. The largest float64 reaches bit 2097
// and 2^63 additions add at most 63 carry bits, so 2161 bits (34 words) can
// never overflow.
const accWords = 34

// accumulator is an exact, order-independent sum of non-negative float64s.
//
// Floating-point addition is not associative, so a plain float64 sum of the
// same values added in a different order — one histogram versus shards merged
// later — can differ in the last bits, and the merged JSON would not equal
// the single one. Summing in a wide fixed-point integer makes the sum exact,
// so Merge is exact in every field and Sum is correctly rounded once, on read.
// The cost is 272 bytes per histogram and a few adds per value.
type accumulator [accWords]uint64

// add adds v, which must be finite and non-negative.
func (a *accumulator) add(v float64) {
	b := math.Float64bits(v)
	exp := int(b>>52) & 0x7ff
	mant := b & (1<<52 - 1)
	pos := 0 // subnormal (or zero): v = mant × 2^−1074
	if exp != 0 {
		// Normal: v = (2^52 + mant) × 2^(exp−1075), i.e. shifted exp−1 units.
		mant |= 1 << 52
		pos = exp - 1
	}
	w, s := pos/64, uint(pos%64)
	var c uint64
	a[w], c = bits.Add64(a[w], mant<<s, 0)
	// mant>>(64−s) is 0 when s == 0: Go defines over-wide unsigned shifts as 0.
	a[w+1], c = bits.Add64(a[w+1], mant>>(64-s), c)
	for i := w + 2; c != 0; i++ {
		a[i], c = bits.Add64(a[i], 0, c)
	}
}

// merge adds the exact sum o into a.
func (a *accumulator) merge(o *accumulator) {
	var c uint64
	for i := range a {
		a[i], c = bits.Add64(a[i], o[i], c)
	}
}

// float returns the sum rounded to the nearest float64 (ties to even), or
// +Inf when it exceeds the float64 range.
func (a *accumulator) float() float64 {
	top := -1
	for i := accWords - 1; i >= 0; i-- {
		if a[i] != 0 {
			top = i
			break
		}
	}
	if top < 0 {
		return 0
	}
	p := top*64 + 63 - bits.LeadingZeros64(a[top]) // index of the highest set bit
	if p < 53 {
		// At most 53 significant bits, all in word 0: exactly representable.
		return math.Ldexp(float64(a[0]), -1074)
	}
	win := a.window(p - 63) // bits p−63..p, bit p at the top
	mant := win >> 11       // the 53 bits p..p−52
	half := win>>10&1 == 1  // bit p−53
	sticky := win&(1<<10-1) != 0 || a.anyBelow(p-63)
	if half && (sticky || mant&1 == 1) {
		mant++ // may reach 2^53, which float64 holds exactly
	}
	return math.Ldexp(float64(mant), p-52-1074)
}

// window returns the 64 bits starting at bit pos; bits below 0 read as 0.
func (a *accumulator) window(pos int) uint64 {
	if pos < 0 {
		return a[0] << uint(-pos)
	}
	w, s := pos/64, uint(pos%64)
	x := a[w] >> s
	if s > 0 && w+1 < accWords {
		x |= a[w+1] << (64 - s)
	}
	return x
}

// anyBelow reports whether any bit below pos is set.
func (a *accumulator) anyBelow(pos int) bool {
	if pos <= 0 {
		return false
	}
	w, s := pos/64, uint(pos%64)
	for i := range w {
		if a[i] != 0 {
			return true
		}
	}
	return s > 0 && a[w]&(1<<s-1) != 0
}
