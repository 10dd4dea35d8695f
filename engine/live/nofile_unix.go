//go:build unix

package live

import "golang.org/x/sys/unix"

// processFileLimit is the process's soft limit on open files; 0 when unknown.
func processFileLimit() uint64 {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	return uint64(rl.Cur)
}
