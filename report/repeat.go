package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Repetitions summarises a scenario run several times (run --repeat-runs
// N): for every number in every run of the report, at the same path, its
// value in each repetition and their mean, median and coefficient of
// variation. One run of a benchmark says little about the next; the
// spread across whole runs is the noise a regression must beat, and the
// median of runs is a figure that one slow run does not move.
type Repetitions struct {
	Count int `json:"count"`
	// Runs mirrors the report's runs: the same keys, with a RepStat where
	// the report has a number. Per-request samples and error examples are
	// left out.
	Runs map[string]any `json:"runs"`
}

// RepStat is one figure across repetitions.
type RepStat struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	// CV is the sample standard deviation over the mean (0 when the mean
	// is 0 or n < 2): unitless, so figures of any unit compare.
	CV     float64   `json:"cv"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Values []float64 `json:"values"`
}

// skippedKeys hold per-request data or text, not figures of a run.
var skippedKeys = map[string]bool{"samples": true, "examples": true, "warnings": true, "metadata": true}

// Repeat summarises reps, the reports of one scenario's repetitions in
// order. A figure absent from some repetitions (a phase that stopped
// early) is summarised over those that have it.
func Repeat(reps []*Report) (*Repetitions, error) {
	values := map[string][]float64{}
	var order []string
	for i, r := range reps {
		b, err := json.Marshal(r.Runs)
		if err != nil {
			return nil, fmt.Errorf("repetition %d: %w", i+1, err)
		}
		var tree any
		if err := json.Unmarshal(b, &tree); err != nil {
			return nil, fmt.Errorf("repetition %d: %w", i+1, err)
		}
		walkNumbers(tree, "", func(path string, v float64) {
			if _, ok := values[path]; !ok {
				order = append(order, path)
			}
			values[path] = append(values[path], v)
		})
	}
	out := &Repetitions{Count: len(reps), Runs: map[string]any{}}
	for _, path := range order {
		setPath(out.Runs, splitPath(path), repStat(values[path]))
	}
	return out, nil
}

// walkNumbers calls fn with the path (keys and list indices joined by
// NUL) of every number under v.
func walkNumbers(v any, path string, fn func(string, float64)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if skippedKeys[k] {
				continue
			}
			walkNumbers(c, joinPath(path, k), fn)
		}
	case []any:
		for i, c := range x {
			walkNumbers(c, joinPath(path, "#"+strconv.Itoa(i)), fn)
		}
	case float64:
		fn(path, x)
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "\x00" + key
}

func splitPath(path string) []string {
	var out []string
	start := 0
	for i := 0; i < len(path); i++ {
		if path[i] == 0 {
			out = append(out, path[start:i])
			start = i + 1
		}
	}
	return append(out, path[start:])
}

// setPath stores v at keys under m; a key "#i" is index i of a list.
func setPath(m map[string]any, keys []string, v RepStat) {
	var cur any = m
	for i, k := range keys {
		last := i == len(keys)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[k] = v
				return
			}
			next, ok := c[k]
			if !ok {
				next = container(keys[i+1])
				c[k] = next
			}
			cur = next
		case *[]any:
			idx, _ := strconv.Atoi(k[1:])
			for len(*c) <= idx {
				*c = append(*c, nil)
			}
			if last {
				(*c)[idx] = v
				return
			}
			if (*c)[idx] == nil {
				(*c)[idx] = container(keys[i+1])
			}
			cur = (*c)[idx]
		}
	}
}

func container(next string) any {
	if len(next) > 0 && next[0] == '#' {
		return &[]any{}
	}
	return map[string]any{}
}

func repStat(v []float64) RepStat {
	s := RepStat{N: len(v), Values: v, Min: slices.Min(v), Max: slices.Max(v)}
	var sum float64
	for _, x := range v {
		sum += x
	}
	s.Mean = sum / float64(len(v))
	sorted := slices.Sorted(slices.Values(v))
	if n := len(sorted); n%2 == 1 {
		s.Median = sorted[n/2]
	} else {
		s.Median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	if len(v) > 1 && s.Mean != 0 {
		var ss float64
		for _, x := range v {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.CV = math.Sqrt(ss/float64(len(v)-1)) / math.Abs(s.Mean)
	}
	return s
}

// MarshalJSON writes lists built by setPath as plain JSON arrays.
func (r *Repetitions) MarshalJSON() ([]byte, error) {
	type plain struct {
		Count int            `json:"count"`
		Runs  map[string]any `json:"runs"`
	}
	return json.Marshal(plain{Count: r.Count, Runs: flatten(r.Runs).(map[string]any)})
}

func flatten(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, c := range x {
			out[k] = flatten(c)
		}
		return out
	case *[]any:
		out := make([]any, len(*x))
		for i, c := range *x {
			out[i] = flatten(c)
		}
		return out
	default:
		return v
	}
}

// Variation is one figure's spread across repetitions.
type Variation struct {
	Path string // dotted, under runs (embedded.phases.decode.tpot_ms.p50)
	CV   float64
}

// MostVariable returns the k figures with the largest cv whose path ends
// in suffix (".p50": the medians of each metric), largest first.
func (r *Repetitions) MostVariable(k int, suffix string) []Variation {
	var out []Variation
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case RepStat:
			if strings.HasSuffix(path, suffix) {
				out = append(out, Variation{Path: path, CV: x.CV})
			}
		case map[string]any:
			if cv, ok := x["cv"].(float64); ok && x["median"] != nil { // decoded from JSON
				if strings.HasSuffix(path, suffix) {
					out = append(out, Variation{Path: path, CV: cv})
				}
				return
			}
			for key, c := range x {
				walk(c, strings.TrimPrefix(path+"."+key, "."))
			}
		case *[]any:
			walk(*x, path)
		case []any:
			for i, c := range x {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(r.Runs, "")
	slices.SortFunc(out, func(a, b Variation) int {
		if a.CV != b.CV {
			return cmp.Compare(b.CV, a.CV)
		}
		return cmp.Compare(a.Path, b.Path)
	})
	if len(out) > k {
		out = out[:k]
	}
	return out
}
