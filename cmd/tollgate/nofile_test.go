//go:build linux || darwin

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Started under a low soft limit on open files, a run still measures a
// concurrency above it, with no open-file warning: Go's runtime (since 1.19)
// raises the soft limit to the hard one at start, so tollgate need not; this
// guards that, and that the report's check reads the raised limit.
func TestRunRaisesTheOpenFileLimit(t *testing.T) {
	t.Parallel()
	hard, err := exec.Command("sh", "-c", "ulimit -Hn").Output()
	if err != nil {
		t.Skip(err)
	}
	if h := strings.TrimSpace(string(hard)); h != "unlimited" && len(h) < 4 {
		t.Skipf("hard limit %s leaves no room above the soft one", h)
	}
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sc, []byte(`
targets:
  s: {kind: embedded, metrics: false, sim: {decode_step: 2ms, max_running_seqs: 512}}
phases:
  load: {kind: load, concurrency: 200, requests: 400, prompt_tokens: 8, max_tokens: 8}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	bin, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	// The embedded simulator's sockets count too: 200 requests hold 400.
	r := runBin(t, "sh", "-c", `ulimit -Sn 128 && exec "$0" run "$1" --quiet --json-out "$2"`, bin, sc, out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "open files") {
		t.Fatalf("the limit was not raised: %s", b)
	}
}
