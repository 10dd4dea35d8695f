package engine

import (
	"flag"
	"os"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/testpar"
)

// TestMain raises -parallel: the shape tests run every example and every
// phase kind × target kind on the simulator, and each such run spends
// nearly all its time waiting on the simulator's clock (decode steps,
// arrival schedules, capacity probes and holds), not on the CPU.
func TestMain(m *testing.M) {
	flag.Parse()
	testpar.Raise(minParallel)
	os.Exit(m.Run())
}

// minParallel is the -parallel TestMain gives. Each shape run is its own
// report and, for embedded targets, its own simulator on its own port.
const minParallel = 8
