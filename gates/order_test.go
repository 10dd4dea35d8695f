package gates

import (
	"fmt"
	"slices"
	"testing"
)

// TestMapHelpersListByKey: keys, values and toPairs list a map by sorted
// key, so a gate's observations come in one order on every evaluation.
func TestMapHelpersListByKey(t *testing.T) {
	runs := map[string]any{}
	for _, k := range []string{"relay/stateless", "direct/cached", "relay/cached", "direct/stateless", "b", "a", "c"} {
		runs[k] = map[string]any{"n": float64(len(k))}
	}
	env := map[string]any{"runs": runs}
	for _, tc := range []struct{ name, expr string }{
		{"values", `all(values(runs), .n > 0)`},
		{"keys", `all(keys(runs), runs[#].n > 0)`},
		{"toPairs", `all(toPairs(runs), #[1].n > 0)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, problems := Compile([]Spec{{Name: tc.name, Expr: tc.expr}}, env)
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			var first []string
			for i := range 20 {
				res := set.Evaluate(env)[0]
				var got []string
				for _, o := range res.Observations {
					got = append(got, fmt.Sprint(o.Left))
				}
				if len(got) != len(runs) {
					t.Fatalf("%d observations, want %d: %v", len(got), len(runs), res)
				}
				if i == 0 {
					first = got
					// a, b, c, direct/cached, direct/stateless, relay/cached, relay/stateless
					want := []string{"1", "1", "1", "13", "16", "12", "15"}
					if !slices.Equal(got, want) {
						t.Errorf("order %v, want %v (by sorted key)", got, want)
					}
				} else if !slices.Equal(got, first) {
					t.Fatalf("evaluation %d listed %v, the first %v", i, got, first)
				}
			}
		})
	}
}
