// Package closedloop runs the tollgate binary on one closed-loop load
// phase against a server and reads back its load point: how bench/regress
// and bench/h1proto measure tollgate itself, in a child process whose
// rusage is the client's CPU.
package closedloop

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Shape is the load phase: Requests requests of MaxTokens tokens,
// Concurrency at a time.
type Shape struct {
	Concurrency, Requests, MaxTokens int
	// Load is more keys of the load phase, one YAML line (e.g. "prompt:
	// {calibrate: false}"); empty for a scenario any older tollgate reads.
	Load string
}

// Run is one run's load point and the child's process state.
type Run struct {
	Succeeded, Errors    float64
	TTFBP50MS, TTFTP50MS float64
	TokenEventsMean      float64 // sse_token_events mean
	State                *os.ProcessState
	Wall                 time.Duration
}

// scenario has nothing an older tollgate would not know (bench/regress
// runs old builds on it), no gates, no samples.
const scenario = `targets:
  server: {kind: openai, base_url: %q, metadata: false, metrics: false, ready_timeout: 10s,
           timeouts: {connect: 30s, total: 5m}}
phases:
  load:
    kind: load
    concurrency: %d
    requests: %d
    prompt_tokens: 64
    max_tokens: %d
    max_error_rate: 0
    %s
report: {samples: false}
`

// Write writes the scenario of s against base to path.
func Write(path, base string, s Shape) error {
	return os.WriteFile(path, []byte(fmt.Sprintf(scenario, base, s.Concurrency, s.Requests, s.MaxTokens, s.Load)), 0o644)
}

// Reads reports whether bin validates the scenario of s (an older build
// may not know a key of s.Load), writing it to path.
func Reads(bin, path, base string, s Shape) bool {
	if err := Write(path, base, s); err != nil {
		return false
	}
	return exec.Command(bin, "validate", path).Run() == nil
}

// Tollgate runs bin on s against base, its files named name in dir, and
// fails unless every request succeeded.
func Tollgate(bin, dir, name, base string, s Shape) (Run, error) {
	path := filepath.Join(dir, name+".yaml")
	if err := Write(path, base, s); err != nil {
		return Run{}, err
	}
	rep := filepath.Join(dir, name+".json")
	cmd := exec.Command(bin, "run", path, "--json-out", rep, "--quiet", "--no-gate")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return Run{}, fmt.Errorf("%s run: %w\n%s", bin, err, out)
	}
	r := Run{State: cmd.ProcessState, Wall: time.Since(start)}
	b, err := os.ReadFile(rep)
	if err != nil {
		return Run{}, err
	}
	var rp struct {
		Runs map[string]struct {
			Phases map[string]struct {
				Points []struct {
					Succeeded      float64                 `json:"succeeded"`
					Errors         struct{ Count float64 } `json:"errors"`
					TTFB           struct{ P50 float64 }   `json:"ttfb_ms"`
					TTFT           struct{ P50 float64 }   `json:"ttft_ms"`
					SSETokenEvents struct{ Mean float64 }  `json:"sse_token_events"`
				} `json:"points"`
			} `json:"phases"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &rp); err != nil {
		return Run{}, fmt.Errorf("report %s: %w", rep, err)
	}
	pts := rp.Runs["server"].Phases["load"].Points
	if len(pts) != 1 {
		return Run{}, fmt.Errorf("report %s: %d load points, want 1", rep, len(pts))
	}
	p := pts[0]
	if p.Errors.Count != 0 || p.Succeeded != float64(s.Requests) {
		return Run{}, fmt.Errorf("%s: %v of %d requests succeeded, %v errors", bin, p.Succeeded, s.Requests, p.Errors.Count)
	}
	r.Succeeded, r.Errors, r.TTFBP50MS, r.TTFTP50MS, r.TokenEventsMean = p.Succeeded, p.Errors.Count, p.TTFB.P50, p.TTFT.P50, p.SSETokenEvents.Mean
	return r, nil
}
