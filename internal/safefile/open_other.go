//go:build !unix

package safefile

// openFlags: no FIFOs to guard against here beyond the Stat.
const openFlags = 0
