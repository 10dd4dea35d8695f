//go:build unix

package transport

import "golang.org/x/sys/unix"

// OpenFileLimit is the process's soft limit on open files; 0 when unknown.
func OpenFileLimit() uint64 {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	return uint64(rl.Cur)
}
