package engine

import (
	"testing"

	"github.com/tollgate-dev/tollgate/internal/testpar"
)

// TestMain raises -parallel: the shape tests run every example and every
// phase kind × target kind on the simulator, and each such run spends
// nearly all its time waiting on the simulator's clock (decode steps,
// arrival schedules, capacity probes and holds), not on the CPU.
func TestMain(m *testing.M) { testpar.Run(m, minParallel) }

// minParallel is the -parallel TestMain gives. Each shape run is its own
// report and, for embedded targets, its own simulator on its own port.
// At 8 the package was bound by its slots (~290 s of runs, 52 s wall, 21 s
// of CPU); at 16 the longest run (capacity.yaml's search, ~20 s) bounds it.
const minParallel = 16
