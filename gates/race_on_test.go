//go:build race

package gates

// raceSlowdown scales the time bounds of tests: the race detector slows
// evaluation several times over.
const raceSlowdown = 10
