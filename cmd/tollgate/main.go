// Command tollgate runs declarative LLM-serving performance scenarios,
// writes a schema-validated JSON report and gates CI on it.
package main

import (
	"os"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}
