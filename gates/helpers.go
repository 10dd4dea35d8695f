package gates

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

func number(v any, what string) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int:
		return float64(x), nil
	case nil:
		return 0, fmt.Errorf("%s is absent", what)
	}
	return 0, fmt.Errorf("%s must be a number, got %T", what, v)
}

// ratio(a, b) = a / b; an error when b is 0 rather than an infinity that
// would make every comparison pass or fail by accident.
func ratio(a, b any) (float64, error) {
	x, err := number(a, "ratio: the numerator")
	if err != nil {
		return 0, err
	}
	y, err := number(b, "ratio: the denominator")
	if err != nil {
		return 0, err
	}
	if y == 0 {
		return 0, fmt.Errorf("ratio(%v, 0): the denominator is zero", x)
	}
	return x / y, nil
}

// pct(new, old) = (new − old) / old × 100: the percent change from old.
func pct(newV, oldV any) (float64, error) {
	r, err := ratio(newV, oldV)
	if err != nil {
		return 0, fmt.Errorf("pct: %w", err)
	}
	return (r - 1) * 100, nil
}

// within(a, b, tol) is |a − b| ≤ tol × |b|: a within a fraction tol of b.
func within(a, b, tol any) (bool, error) {
	x, err := number(a, "within: the value")
	if err != nil {
		return false, err
	}
	y, err := number(b, "within: the reference")
	if err != nil {
		return false, err
	}
	t, err := number(tol, "within: the tolerance")
	if err != nil {
		return false, err
	}
	return math.Abs(x-y) <= t*math.Abs(y), nil
}

// samples(run) is every sample of a run, phase after phase.
func samples(run any) ([]any, error) {
	m, ok := run.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("samples: expected a run, got %T", run)
	}
	phases, _ := m["phases"].(map[string]any)
	order, _ := m["phase_order"].([]any)
	var out []any
	for _, name := range order {
		p, _ := phases[fmt.Sprint(name)].(map[string]any)
		s, ok := p["samples"].([]any)
		if !ok {
			return nil, fmt.Errorf("samples: phase %v of run %v has no samples (is report.samples off?)", name, m["name"])
		}
		out = append(out, s...)
	}
	return out, nil
}

// distinct(list) or distinct(list, "field") counts distinct values.
func distinct(list any, field ...string) (int, error) {
	xs, ok := list.([]any)
	if !ok {
		return 0, fmt.Errorf("distinct: expected a list, got %T", list)
	}
	if len(field) > 1 {
		return 0, fmt.Errorf("distinct: takes a list and at most one field name")
	}
	seen := map[string]bool{}
	for i, x := range xs {
		if len(field) == 1 {
			m, ok := x.(map[string]any)
			if !ok {
				return 0, fmt.Errorf("distinct: item %d is not a mapping", i)
			}
			v, ok := m[field[0]]
			if !ok {
				return 0, fmt.Errorf("distinct: item %d has no %q", i, field[0])
			}
			x = v
		}
		seen[fmt.Sprintf("%T:%v", x, x)] = true
	}
	return len(seen), nil
}

// findRun returns the one run whose params include every given key/value.
func findRun(data map[string]any, params map[string]any) (any, error) {
	runs, _ := data["runs"].(map[string]any)
	var names []string
	var found any
	for name, r := range runs {
		m, _ := r.(map[string]any)
		ps, _ := m["params"].(map[string]any)
		ok := true
		for k, want := range params {
			if got, has := ps[k]; !has || fmt.Sprint(got) != fmt.Sprint(want) {
				ok = false
				break
			}
		}
		if ok {
			names = append(names, name)
			found = r
		}
	}
	sort.Strings(names)
	switch len(names) {
	case 1:
		return found, nil
	case 0:
		return nil, fmt.Errorf("run(%v): no run has these params", params)
	}
	return nil, fmt.Errorf("run(%v): %d runs match (%s); give more params", params, len(names), strings.Join(names, ", "))
}
