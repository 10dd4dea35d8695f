//go:build !unix

package transport

// OpenFileLimit is unknown here (0).
func OpenFileLimit() uint64 { return 0 }
