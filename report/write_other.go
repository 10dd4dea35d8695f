//go:build !unix

package report

import (
	"errors"
	"os"
)

// Without flock a temporary file's writer cannot be told gone: none is
// locked, and none is taken for stale.
func lockFile(*os.File) error { return nil }

func tryLock(*os.File) bool { return false }

func openNoFollow(string) (*os.File, error) { return nil, errors.ErrUnsupported }
