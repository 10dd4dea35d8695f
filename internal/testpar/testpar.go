// Package testpar raises go test's -parallel for packages whose tests wait
// on clocks rather than CPU. It is called from a TestMain, after flag.Parse.
package testpar

import (
	"flag"
	"strconv"
	"testing"
)

// Raise sets go test's -parallel to at least n unless -parallel was given
// on the command line. The default, GOMAXPROCS (2 on a small CI runner),
// suits tests that compute; tests that mostly wait (on the simulator's
// decode steps, arrival schedules, capacity probes, a server) would leave
// the machine idle while they queue for one of two slots.
func Raise(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); !given && f != nil {
		if cur, err := strconv.Atoi(f.Value.String()); err == nil && cur < n {
			_ = f.Value.Set(strconv.Itoa(n))
		}
	}
}

// Run is a TestMain for a package that needs nothing else: it parses the
// flags, raises -parallel to n and runs the tests (a TestMain that returns
// exits with m.Run's code).
func Run(m *testing.M, n int) {
	flag.Parse()
	Raise(n)
	m.Run()
}
