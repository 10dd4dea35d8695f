package scenarios

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// maxFuzzScenarioBytes bounds FuzzLoad inputs: real scenarios are a few KiB,
// and larger inputs only slow the fuzzer down without reaching new code.
const maxFuzzScenarioBytes = 64 << 10

// fuzzDeadline is how long one Parse may take before the input counts as a
// hang. Go's fuzzer has no per-input timeout of its own, and the seed corpus
// also runs under -race in CI, so it is generous.
const fuzzDeadline = 30 * time.Second // a hang, not a slow machine

// parseWithin runs Parse on its own goroutine so a hang fails the input
// (with a message) instead of stalling the fuzzer, and turns a panic into a
// failure that carries the stack.
func parseWithin(t *testing.T, data []byte, opts Options) (*Scenario, error) {
	t.Helper()
	type result struct {
		sc    *Scenario
		err   error
		panic string
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{panic: fmt.Sprintf("%v\n%s", r, debug.Stack())}
			}
		}()
		sc, err := Parse("fuzz.yaml", data, opts)
		done <- result{sc: sc, err: err}
	}()
	select {
	case r := <-done:
		if r.panic != "" {
			t.Fatalf("Parse panicked: %s", r.panic)
		}
		return r.sc, r.err
	case <-time.After(fuzzDeadline):
		t.Fatalf("Parse did not return within %v", fuzzDeadline)
		return nil, nil
	}
}

// checkErrorList holds Parse to its contract: the error is an ErrorList, and
// every entry says where (a file line or a --set flag) and what.
func checkErrorList(t *testing.T, err error) ErrorList {
	t.Helper()
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error is %T, not an ErrorList: %v", err, err)
	}
	if len(list) == 0 {
		t.Fatalf("empty ErrorList returned as an error")
	}
	for _, e := range list {
		if e == nil {
			t.Fatalf("nil entry in ErrorList %v", list)
		}
		if e.Pos.Line <= 0 && e.Pos.Set == "" {
			t.Errorf("error without a position: %q (pos %+v)", e.Error(), e.Pos)
		}
		if e.Msg == "" {
			t.Errorf("error without a message at %s", e.Pos)
		}
	}
	return list
}

// addScenarioSeeds adds every example and loader test file, so the fuzzer
// starts from documents that reach deep into decoding and checking.
func addScenarioSeeds(f *testing.F) {
	var files []string
	for _, glob := range []string{"../examples/*.yaml", "testdata/good/*.yaml", "testdata/bad/*.yaml"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		f.Fatal("no seed scenarios found")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzLoad feeds arbitrary bytes to the loader: it must never panic or hang,
// and every rejection must be an ErrorList whose entries carry a position and
// a message, since that is all a user sees before fixing the file.
func FuzzLoad(f *testing.F) {
	addScenarioSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzScenarioBytes {
			t.Skip()
		}
		// A fixed environment, so ${env.X} both resolves and fails.
		opts := Options{LookupEnv: func(name string) (string, bool) {
			if name == "TOLLGATE_FUZZ" {
				return "1", true
			}
			return "", false
		}}
		sc, err := parseWithin(t, data, opts)
		if err != nil {
			if sc != nil {
				t.Errorf("Parse returned both a scenario and an error")
			}
			checkErrorList(t, err)
			return
		}
		if sc == nil {
			t.Fatalf("Parse returned neither a scenario nor an error")
		}
	})
}

// FuzzSet applies one arbitrary --set flag to a known-good scenario. The file
// is fine on its own, so whatever goes wrong is the flag's doing and must be
// reported against it: the user typed the flag, not the file. Flags under
// vars. are the exception: their value is checked where it is interpolated.
func FuzzSet(f *testing.F) {
	base, err := os.ReadFile("testdata/good/three-nodes.yaml")
	if err != nil {
		f.Fatal(err)
	}
	noEnv := func(string) (string, bool) { return "", false }
	if _, err := Parse("three-nodes.yaml", base, Options{LookupEnv: noEnv}); err != nil {
		f.Fatalf("base scenario does not load: %v", err)
	}
	for _, s := range []string{
		"targets.route.activation_bytes=8192",
		"targets.route.output_tokens=[p, q]",
		"vars.mode=direct",
		"vars.mode=bogus",
		"vars.size=lots",
		"targets.route.session_id=s1",
		"gates.0.name=renamed",
		"gates.0.expr=1 < < 2",
		"gates.5.name=x",
		"targets.rout.cache=cached",
		"targets.route.cahce=cached",
		"targets.route=",
		"phases.steady.tokens={a: 1}",
		"name.x=1",
		"=1",
		"a=b=c",
		"matrix=[1]",
		"vars.x=${vars.x}",
		"targets.route.transport=&a [*a]",
		"targets.route.compression.level=9",
		"targets.route.compression.levle=9",
		"targets.route.headers.X=1",
		"gates.1={name: two, expr: 'true'}",
		"gates.1.name=x",
		"targets.new.kind=seam",
		"targets.route.route.3=x",
		"targets..cache=x",
		"profiles.ci.x=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, flag string) {
		if len(flag) > 4<<10 {
			t.Skip()
		}
		_, err := parseWithin(t, base, Options{Sets: []string{flag}, LookupEnv: noEnv})
		if err == nil {
			return
		}
		list := checkErrorList(t, err)
		if f := strings.TrimSpace(flag); strings.HasPrefix(f, "vars.") || strings.HasPrefix(f, "vars=") {
			// A var is a value used elsewhere: a bad one, or a vars block
			// replaced whole (vars=0:) that no longer defines one, is
			// reported where it is used (a file position), which
			// checkErrorList accepts.
			return
		}
		named := false
		for _, e := range list {
			// Pos.Set is the flag as given, with or without the "--set "
			// the user typed in front of it.
			if e.Pos.Set == flag || e.Pos.Set == "--set "+flag {
				named = true
			} else if e.Pos.Set != "" {
				t.Errorf("error names a flag that was not given: %q", e.Error())
			}
		}
		if !named {
			t.Errorf("--set %q broke a good scenario, but no error names the flag:\n%v", flag, err)
		}
	})
}
