package rounds

import (
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64 // NaN: none
	}{
		{"odd", []float64{3, 1, 2}, 2},
		{"even takes the lower by nearest rank", []float64{4, 1, 3, 2}, 2},
		{"empty has none", nil, math.NaN()},
		{"a missing figure makes none", []float64{1, math.NaN(), 3}, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Median(tc.xs)
			if math.IsNaN(tc.want) != math.IsNaN(got) || !math.IsNaN(got) && got != tc.want {
				t.Fatalf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
			}
		})
	}
}

// Median sorts a copy: the rounds it is given keep their order.
func TestMedianLeavesItsInputAlone(t *testing.T) {
	xs := []float64{3, 1, 2}
	Median(xs)
	if xs[0] != 3 || xs[1] != 1 || xs[2] != 2 {
		t.Fatalf("input reordered: %v", xs)
	}
}
