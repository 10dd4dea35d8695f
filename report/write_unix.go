//go:build unix

package report

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f, held until f is closed or its
// process ends; it waits for a removeStale that holds it to let go.
func lockFile(f *os.File) error { return flock(f, syscall.LOCK_EX) }

// tryLock takes the lock lockFile takes, if no one holds it.
func tryLock(f *os.File) bool { return flock(f, syscall.LOCK_EX|syscall.LOCK_NB) == nil }

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// openNoFollow opens path for reading without following a link or
// waiting on a FIFO.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
