//go:build unix

package scenarios

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used: unlike the wall clock, it
// does not grow while the process waits for a core on a busy machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
