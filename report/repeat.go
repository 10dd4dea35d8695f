package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Repetitions summarises a scenario run several times (run --repeat-runs
// N): for every number in every run of the report, at the same path, its
// value in each repetition and their mean, median and coefficient of
// variation. One run of a benchmark says little about the next; the
// spread across whole runs is the noise a regression must beat, and the
// median of runs is a figure that one slow run does not move. report/fold's
// Repeat computes it.
type Repetitions struct {
	Count int `json:"count"`
	// Runs mirrors the report's runs: the same keys (maps and lists, as
	// JSON decodes them), with a RepStat where the report has a number, or
	// its decoded map in a report read back. Per-request samples and error
	// examples are left out.
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
