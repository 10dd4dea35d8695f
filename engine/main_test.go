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
// 16 took the package from 52 s to 39 s, but beside stress-ng --cpu 4 and
// another suite (load 26) TestShapeIsTheReportForEveryKind's capacity rows
// then missed their min (queue_ms.p99 at 10/s 514-1263 ms against 500) on
// every try: the rows' own client is what a busier package starves.
const minParallel = 8
