//go:build unix

package safefile

import "syscall"

// openFlags opens without blocking on a FIFO that appeared after the Stat.
const openFlags = syscall.O_NONBLOCK
