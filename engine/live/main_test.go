package live

import (
	"testing"

	"github.com/tollgate-dev/tollgate/internal/testpar"
)

// TestMain raises -parallel for the tests that call t.Parallel: each runs
// a scenario against its own simulator and spends nearly all its time on
// the simulator's clock or an arrival schedule (a saturation sweep, a
// capacity search, a refused connection's retry), not on the CPU, so two
// slots (GOMAXPROCS on a small runner) left the package at ~64 s of mostly
// idle waiting.
func TestMain(m *testing.M) { testpar.Run(m, minParallel) }

// minParallel is the -parallel TestMain gives.
const minParallel = 8
