//go:build race

package main

// raceEnabled: the test binary runs under the race detector, so the CLI
// binary the tests exec is built with it too.
const raceEnabled = true
