//go:build !unix

package scenarios

import "time"

var processStart = time.Now()

// cpuTime falls back to the wall clock where getrusage is not available.
func cpuTime() time.Duration { return time.Since(processStart) }
