package transport

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParsePrometheus: any exposition parses or fails in bounded work,
// never panics, and what it keeps is fit for a report: each key once,
// every value finite, buckets ending at +Inf.
func FuzzParsePrometheus(f *testing.F) {
	for _, name := range []string{"vllm.txt", "sglang.txt", "llamacpp.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "metrics", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("# TYPE \"a.b\" histogram\n{\"a.b_bucket\",le=\"1\"} 1\n{\"a.b_bucket\",le=\"+Inf\"} 2\nbad{ 1\n"))
	f.Add([]byte("# TYPE s summary\ns{quantile=\"0.5\"} NaN\ns_sum 1\ns_count 2\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		s, err := ParsePrometheus(text)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, x := range s.Series {
			if seen[x.Key] {
				t.Fatalf("key %q twice", x.Key)
			}
			seen[x.Key] = true
			vs := []float64{x.Value, x.Count, x.Sum}
			for _, b := range x.Buckets {
				vs = append(vs, b.Count)
			}
			for _, q := range x.Quantiles {
				vs = append(vs, q.Value)
			}
			for _, v := range vs {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s: non-finite %+v", x.Key, x)
				}
			}
			if n := len(x.Buckets); n > 0 && x.Buckets[n-1].LE != "+Inf" {
				t.Fatalf("%s: buckets %+v", x.Key, x.Buckets)
			}
		}
		if len(s.Warnings) > maxWarnings+1 {
			t.Fatalf("%d warnings", len(s.Warnings))
		}
	})
}
