package gates

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Bombs that are not constant load, and are stopped at run time by the
// byte and iteration budget before they allocate: each errors naming the
// budget, in well under a second, with bounded memory.
func TestBuiltinBombsAreBounded(t *testing.T) {
	env := seamEnv(t)
	name := `runs["direct/cached"].name`
	for _, tc := range []struct{ name, expr string }{
		{"repeat of toJSON", `len(repeat(toJSON(runs), 400000)) > 0`},
		{"toJSON of a million references", `len(toJSON(map(1..1000000, runs))) > 0`},
		{"string of a million references", `len(string(map(1..1000000, runs))) > 0`},
		{"toJSON in a loop", `len(map(1..1000000, toJSON(runs))) > 0`},
		{"join of toJSONs", `len(join(map(1..100000, toJSON(runs)), "")) > 0`},
		{"upper in a loop", `len(map(1..1000000, upper(toJSON(runs)))) > 0`},
		{"split into characters", `len(split(repeat(` + name + `, 60000000 / len(` + name + `) | int()), "")) > 0`},
		{"replace that grows", `len(replace(repeat(` + name + `, 100000), "c", repeat("x", 1000))) > 0`},
		{"nested loops over a list", `let l = map(1..1000, runs); all(l, all(l, all(l, true)))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, problems := Compile([]Spec{spec("bomb", tc.expr)}, env)
			if len(problems) > 0 {
				t.Fatalf("%s: %v", tc.expr, problems)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			res := set.Evaluate(env)[0]
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if res.Status != "error" || !strings.Contains(res.Message, "budget") {
				t.Errorf("%s: %s %q, want an error naming the budget", tc.expr, res.Status, res.Message)
			}
			if took > stopsWithin { // that it stops, not how fast

				t.Errorf("took %v", took)
			}
			if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 512 {
				t.Errorf("allocated %d MiB", mb)
			}
			t.Logf("%v, %d MiB: %s", took, (after.TotalAlloc-before.TotalAlloc)>>20, res.Message)
		})
	}
}

// stopsWithin bounds a budgeted check or evaluation: that it stops, not
// how fast (the machines are shared, and a loaded one took 4 s for what
// takes 0.4 s idle); without its budget each of these would run for hours
// or run out of memory.
const stopsWithin = 60 * time.Second * raceSlowdown
