package fold

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/tollgate-dev/tollgate/report"
)

// skippedKeys hold per-request data or text, not figures of a run.
var skippedKeys = map[string]bool{"samples": true, "examples": true, "warnings": true, "metadata": true}

// Repeat summarises reps, the reports of one scenario's repetitions in
// order (run --repeat-runs N), into report.Repetitions. A figure absent
// from some repetitions (a phase that stopped early) is summarised over
// those that have it.
func Repeat(reps []*report.Report) (*report.Repetitions, error) {
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
	runs := map[string]any{}
	for _, path := range order {
		setPath(runs, splitPath(path), repStat(values[path]))
	}
	return &report.Repetitions{Count: len(reps), Runs: flatten(runs).(map[string]any)}, nil
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

// setPath stores v at keys under m; a key "#i" is index i of a list. The
// lists it builds are *[]any, so that they can grow in place; flatten
// makes them plain.
func setPath(m map[string]any, keys []string, v report.RepStat) {
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

// flatten turns the *[]any lists setPath builds into []any, the form JSON
// decodes a repetitions tree into, so a tree built here and one read back
// from a report have the same shape.
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

func repStat(v []float64) report.RepStat {
	s := report.RepStat{N: len(v), Values: v, Min: slices.Min(v), Max: slices.Max(v)}
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
