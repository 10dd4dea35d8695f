//go:build race

package live

// raceEnabled: the race detector slows the client and the in-process
// simulator several times over, so a measurement of the simulated server's
// capacity would measure the detector instead.
const raceEnabled = true
