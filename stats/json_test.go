package stats

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		invalid int
	}{
		{"empty", 0, 0},
		{"only invalid", 0, 3},
		{"one value", 1, 0},
		{"exact", 300, 1},
		{"at the limit", ExactLimit, 0},
		{"just past the limit", ExactLimit + 1, 0},
		{"bucketed", 200_000, 2},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 5))
			h := New()
			for _, v := range mergeValues(r, tt.n) {
				mustAdd(t, h, v)
			}
			for range tt.invalid {
				_ = h.Add(math.Inf(1))
			}
			data := mustJSON(t, h)
			var d Histogram
			if err := json.Unmarshal(data, &d); err != nil {
				t.Fatalf("Unmarshal(%.200s): %v", data, err)
			}
			sameHistogram(t, h, &d) // includes re-encoding to identical bytes
			// The decoded histogram keeps working.
			mustAdd(t, h, 42)
			mustAdd(t, &d, 42)
			sameHistogram(t, h, &d)
		})
	}
}

// TestJSONByValue pins the value receiver: a Histogram held by value in a
// report struct must not marshal as {}.
func TestJSONByValue(t *testing.T) {
	var s struct{ H Histogram }
	mustAdd(t, &s.H, 1.5)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"samples":[1.5]`) {
		t.Errorf("by-value Histogram encoded as %s", b)
	}
}

func TestJSONSparse(t *testing.T) {
	h := New()
	for range 5000 {
		mustAdd(t, h, 10)
	}
	mustAdd(t, h, 1e9)
	var w wire
	if err := json.Unmarshal(mustJSON(t, h), &w); err != nil {
		t.Fatal(err)
	}
	if len(w.Buckets) != 4 || w.Buckets[0] != int64(key(10)) || w.Buckets[1] != 5000 ||
		w.Buckets[2] != int64(key(1e9)-key(10)) || w.Buckets[3] != 1 {
		t.Errorf("buckets = %v, want two key-gap/count pairs", w.Buckets)
	}
}

func TestJSONRejectsInconsistent(t *testing.T) {
	exact := New()
	for _, v := range []float64{1, 2, 4} {
		mustAdd(t, exact, v)
	}
	bucketed := New()
	r := rand.New(rand.NewPCG(9, 9))
	for _, v := range mergeValues(r, 3000) {
		mustAdd(t, bucketed, v)
	}
	tests := []struct {
		name   string
		base   *Histogram
		mutate func(m map[string]any)
	}{
		{"unknown field", exact, func(m map[string]any) { m["extra"] = 1 }},
		{"future format", exact, func(m map[string]any) { m["format"] = 2 }},
		{"negative count", exact, func(m map[string]any) { m["count"] = -1 }},
		{"count exceeds samples", exact, func(m map[string]any) { m["count"] = 4 }},
		{"unsorted samples", exact, func(m map[string]any) { m["samples"] = []any{2, 1, 4} }},
		{"negative sample", exact, func(m map[string]any) { m["samples"] = []any{-1, 2, 4} }},
		{"samples disagree with the exact sum", exact, func(m map[string]any) { m["samples"] = []any{1, 2, 5} }},
		{"min disagrees", exact, func(m map[string]any) { m["min"] = 0.5 }},
		{"sum disagrees", exact, func(m map[string]any) { m["sum"] = 8 }},
		{"malformed sum word", exact, func(m map[string]any) { m["sum_exact"] = []any{"x:1"} }},
		{"zero sum word", exact, func(m map[string]any) { m["sum_exact"] = []any{"3:0"} }},
		{"empty with samples", exact, func(m map[string]any) {
			m["count"], m["sum"] = 0, 0
			delete(m, "sum_exact")
		}},
		{"buckets below the limit", exact, func(m map[string]any) { m["buckets"] = []any{minKey, 3} }},
		{"samples above the limit", bucketed, func(m map[string]any) { m["samples"] = []any{1} }},
		{"other resolution", bucketed, func(m map[string]any) { m["sub_bucket_bits"] = 11 }},
		{"odd bucket list", bucketed, func(m map[string]any) { m["buckets"] = m["buckets"].([]any)[1:] }},
		{"bucket counts short", bucketed, func(m map[string]any) { m["count"] = m["count"].(float64) + 1 }},
		{"key below range", bucketed, func(m map[string]any) { m["buckets"].([]any)[0] = 5 }},
		{"repeated key", bucketed, func(m map[string]any) { m["buckets"].([]any)[2] = 0 }},
		{"zero count bucket", bucketed, func(m map[string]any) { m["buckets"].([]any)[1] = 0 }},
		{"zero bucket but min above it", bucketed, func(m map[string]any) { m["min"] = 1.0 }},
		{"max outside the last bucket", bucketed, func(m map[string]any) { m["max"] = m["max"].(float64) * 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(mustJSON(t, tt.base), &m); err != nil {
				t.Fatal(err)
			}
			tt.mutate(m)
			data, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			d := New()
			mustAdd(t, d, 7)
			before := mustJSON(t, d)
			if err := json.Unmarshal(data, d); err == nil {
				t.Fatalf("accepted %.300s", data)
			}
			if after := mustJSON(t, d); !bytes.Equal(before, after) {
				t.Error("a rejected decode changed the histogram")
			}
		})
	}
}
