// Command tollgate runs declarative LLM-serving performance scenarios,
// writes a schema-validated JSON report and gates CI on it.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

func main() {
	// TOLLGATE_CPUPROFILE=path profiles the whole process, for bench/ work.
	if path := os.Getenv("TOLLGATE_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tollgate:", err)
			os.Exit(ExitInvalid)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "tollgate:", err)
			os.Exit(ExitInvalid)
		}
		code := Main(os.Args[1:], os.Stdout, os.Stderr)
		pprof.StopCPUProfile()
		_ = f.Close()
		os.Exit(code)
	}
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}
