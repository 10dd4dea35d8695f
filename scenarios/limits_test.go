package scenarios

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// matrixScenario has keys axes of values values each; the seam target
// ignores the matrix values, which only name the runs.
func matrixScenario(keys, values int) string {
	var b strings.Builder
	b.WriteString("matrix:\n")
	for k := 0; k < keys; k++ {
		fmt.Fprintf(&b, "  k%d: [", k)
		for v := 0; v < values; v++ {
			if v > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "v%d", v)
		}
		b.WriteString("]\n")
	}
	b.WriteString("targets:\n  route: {kind: seam, transport: direct, cache: cached, output_tokens: [a]}\nphases: {decode: {tokens: 1}}\n")
	return b.String()
}

func TestMatrixRunCap(t *testing.T) {
	for _, tc := range []struct {
		name         string
		keys, values int
		max          int
		want         string // "" loads
	}{
		{name: "exactly the cap loads", keys: 2, values: 3, max: 9},
		{name: "4^6 refused", keys: 6, values: 4, want: "m.yaml:2:3: matrix: expands to 4096 runs (k0: 4, k1: 4, k2: 4, k3: 4, k4: 4, k5: 4 values × 1 target(s)); at most 1000"},
		{name: "12 keys refused", keys: 12, values: 10, want: "expands to 1000000000000 runs"},
		{name: "overflowing count refused", keys: 40, values: 10, want: "expands to more than"},
		{name: "a lower cap", keys: 2, values: 4, max: 10, want: "expands to 16 runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			sc, err := Parse("m.yaml", []byte(matrixScenario(tc.keys, tc.values)), Options{LookupEnv: noEnv, MaxRuns: tc.max})
			runtime.ReadMemStats(&after)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(sc.Runs) != tc.max {
					t.Fatalf("%d runs, want %d", len(sc.Runs), tc.max)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("errors:\n%v\nwant one containing %q", err, tc.want)
			}
			// Refused before anything is expanded: bounded by what it
			// allocates, which a busy machine cannot move (4,096 runs
			// expanded take hundreds of MiB; see the 1k-run bound below).
			if mib := (after.TotalAlloc - before.TotalAlloc) >> 20; mib > 32 {
				t.Errorf("refusing allocated %d MiB", mib)
			}
			t.Logf("refused after %d KiB", (after.TotalAlloc-before.TotalAlloc)>>10)
		})
	}
}

func TestScenarioFileSizeCap(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	pad := "# " + strings.Repeat("x", 1000) + "\n"
	if err := os.WriteFile(big, []byte(strings.Repeat(pad, MaxFileBytes/len(pad)+1)+"phases: {decode: {}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readScenario(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("readScenario: want ErrTooLarge, got %v", err)
	}
	inc := filepath.Join(dir, "inc.yaml")
	if err := os.WriteFile(inc, []byte("include: big.yaml\nphases: {decode: {}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, file, want string }{
		{name: "the file", file: big, want: big + ": cannot read scenario: " + big + ": file too large: 1049159 bytes (1.0 MiB), over the 1 MiB cap on a scenario"},
		{name: "an included file", file: inc, want: inc + ":1:10: include \"big.yaml\": cannot read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.file, Options{LookupEnv: noEnv})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("errors:\n%v\nwant one containing %q", err, tc.want)
			}
		})
	}
	if _, err := Parse("p.yaml", make([]byte, MaxFileBytes+1), Options{}); err == nil || !strings.Contains(err.Error(), "over 1 MiB") {
		t.Fatalf("Parse of %d bytes: %v", MaxFileBytes+1, err)
	}
}

// 40,000 undefined references used to build 40,000 messages each listing
// every var: quadratic time and gigabytes.
func TestManyUndefinedVarsStayLinear(t *testing.T) {
	parse := func(n int) {
		_, err := Parse("u.yaml", manyVars(n, "${vars.n%d}", "phases: {decode: {}}\n"), Options{LookupEnv: noEnv})
		var list ErrorList
		if !errors.As(err, &list) {
			t.Fatalf("want an ErrorList, got %v", err)
		}
		if len(list) > maxErrors+1 || !strings.Contains(list[len(list)-1].Msg, "more problems not shown") {
			t.Errorf("%d errors, the last %q; want at most %d and a note", len(list), list[len(list)-1].Msg, maxErrors+1)
		}
	}
	checkLinear(t, parse)
}

// BenchmarkLoad1kRuns loads a matrix at the default cap (10×10×10).
func BenchmarkLoad1kRuns(b *testing.B) {
	src := []byte(matrixScenario(3, 10))
	for b.Loop() {
		sc, err := Parse("m.yaml", src, Options{LookupEnv: noEnv})
		if err != nil || len(sc.Runs) != 1000 {
			b.Fatal(err)
		}
	}
}

// The schema check decoded the whole document, and yaml.v3 decodes a
// mapping in time quadratic in its keys: 40,000 vars took 23 s.
func TestManyVarsLoadInLinearTime(t *testing.T) {
	parse := func(n int) {
		last := fmt.Sprintf("x%d", n-1)
		sc, err := Parse("v.yaml", manyVars(n, "x%d", "name: ${vars.v"+strconv.Itoa(n-1)+"}\ntargets:\n  route: {kind: seam, transport: direct, cache: cached, output_tokens: [a]}\nphases: {decode: {tokens: 1}}\n"), Options{LookupEnv: noEnv})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Name != last || len(sc.Vars) != n {
			t.Errorf("name %q, %d vars; want %q, %d", sc.Name, len(sc.Vars), last, n)
		}
	}
	checkLinear(t, parse)
}

// checkLinear measures parse at 5,000 and 40,000 vars in one run and
// wants the ratio of the two halfway (on a log scale) between linear
// time's 8 and quadratic time's 64. Each is the least of three, in CPU
// time: a busy machine makes the process wait for a core, which the wall
// clock counts and CPU time does not (the wall clock's ratio reached 23x
// beside stress-ng --cpu 4; CPU time's stays near 8x, idle or loaded).
func checkLinear(t *testing.T, parse func(n int)) {
	t.Helper()
	fastest := func(n int) time.Duration {
		best := time.Duration(math.MaxInt64)
		for range 3 {
			runtime.GC() // each starts from the same heap, not the last one's garbage
			start := cpuTime()
			parse(n)
			best = min(best, cpuTime()-start)
		}
		return best
	}
	small, large := fastest(5000), fastest(40000)
	t.Logf("CPU time: 5,000 vars %v, 40,000 vars %v (%.1fx)", small, large, float64(large)/float64(small))
	if float64(large) > 24*float64(small) {
		t.Errorf("8x the vars took %.1fx the CPU time (%v, %v): want about linear (8x), not quadratic (64x)", float64(large)/float64(small), small, large)
	}
}

// manyVars is a scenario with 40,000 vars v0..v39999, var i holding
// fmt.Sprintf(value, i), followed by rest.
func manyVars(n int, value, rest string) []byte {
	var b strings.Builder
	b.WriteString("vars:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  v%d: "+value+"\n", i, i)
	}
	b.WriteString(rest)
	return []byte(b.String())
}

// Allocation does not depend on how busy the machine is, so it can be
// bounded in a test: the target is 200 MB for any file under 1 MB,
// and a 1,000-run matrix allocated 4 GB while the schema was compiled once
// per run.
func TestLoad1kRunsAllocatesUnder200MB(t *testing.T) {
	src := []byte(matrixScenario(3, 10))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sc, err := Parse("m.yaml", src, Options{LookupEnv: noEnv})
	runtime.ReadMemStats(&after)
	if err != nil || len(sc.Runs) != 1000 {
		t.Fatalf("%d runs, %v", len(sc.Runs), err)
	}
	if mb := float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20); mb > 200 {
		t.Errorf("loading 1,000 runs allocated %.0f MB, want at most 200", mb)
	}
}
