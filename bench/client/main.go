// Command client measures tollgate's own client against `tollgate serve` in a
// separate process, to show the client is never the bottleneck of its own
// measurements. Run it by hand (not in CI): go run ./bench/client
//
// Each figure prints with the command that reproduces it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	only := flag.String("only", "", "run one measurement: streams, cpu, ttft, rate")
	flag.Parse()
	if err := run(*only); err != nil {
		fmt.Fprintln(os.Stderr, "bench/client:", err)
		os.Exit(1)
	}
}

type env struct {
	dir, bin string
}

func run(only string) error {
	dir, err := os.MkdirTemp("", "tollgate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e := &env{dir: dir, bin: filepath.Join(dir, "tollgate")}
	if out, err := exec.Command("go", "build", "-o", e.bin, "./cmd/tollgate").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v\n%s", err, out)
	}
	fmt.Printf("host: %s\n\n", hostFacts())
	for _, m := range []struct {
		name string
		fn   func(*env) error
	}{{"streams", streams}, {"cpu", cpuPerEvent}, {"ttft", ttftError}, {"rate", openLoopRate}} {
		if only != "" && only != m.name {
			continue
		}
		if err := m.fn(e); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		fmt.Println()
	}
	return nil
}

func hostFacts() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	model := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
			break
		}
	}
	return fmt.Sprintf("%s, %d CPUs visible", model, numCPU())
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

// server is `tollgate serve` in its own process.
type server struct {
	cmd *exec.Cmd
	url string
	pid int
}

func (e *env) serve(args ...string) (*server, error) {
	cmd := exec.Command(e.bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("serve: %w", err)
	}
	i := strings.Index(line, "http://")
	if i < 0 {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("serve printed %q", line)
	}
	return &server{cmd: cmd, url: strings.Fields(line[i:])[0], pid: cmd.Process.Pid}, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
}

// cpuSeconds reads a live process's user+system CPU from /proc.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return math.NaN()
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ut, st float64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return (ut + st) / 100 // USER_HZ
}

type runResult struct {
	report  map[string]any
	cpuS    float64
	wall    time.Duration
	samples string
}

// tollgate runs a scenario in a child process and returns its report and CPU time.
func (e *env) tollgate(name, scenario string, extra ...string) (*runResult, error) {
	path := filepath.Join(e.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
		return nil, err
	}
	rep := filepath.Join(e.dir, name+".json")
	samples := filepath.Join(e.dir, name+".samples.jsonl")
	args := append([]string{"run", path, "--json-out", rep, "--samples-out", samples, "--quiet", "--no-gate"}, extra...)
	cmd := exec.Command(e.bin, args...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("tollgate %s: %w", strings.Join(args, " "), err)
	}
	r := &runResult{wall: time.Since(start), samples: samples}
	r.cpuS = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	b, err := os.ReadFile(rep)
	if err != nil {
		return nil, err
	}
	return r, json.Unmarshal(b, &r.report)
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func point(r *runResult) map[string]any {
	pts, _ := dig(r.report, "runs", "server", "phases", "load", "points").([]any)
	if len(pts) == 0 {
		return nil
	}
	m, _ := pts[0].(map[string]any)
	return m
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

const loadScenario = `targets:
  server: {kind: openai, base_url: %q, metadata: false, metrics: false, ready_timeout: 10s,
           timeouts: {connect: 30s, total: 5m}, arrival_clock: kernel}
phases:
  load:
    kind: load
    %s
    prompt_tokens: %d
    max_tokens: %d
    prompt: {calibrate: false}
    max_error_rate: 0
report: {samples: false}
`

func streams(e *env) error {
	const c, n, tokens = 2000, 4000, 64
	srv, err := e.serve("--max-running-seqs", "4096", "--decode-step", "20ms", "--decode-step-per-seq", "5us")
	if err != nil {
		return err
	}
	defer srv.stop()
	r, err := e.tollgate("streams", fmt.Sprintf(loadScenario, srv.url, fmt.Sprintf("concurrency: %d\n    requests: %d", c, n), 64, tokens))
	if err != nil {
		return err
	}
	p := point(r)
	fmt.Printf("== %d concurrent streams\n", c)
	fmt.Printf("   requests %v ok %v errors %v, peak in flight %v, achieved concurrency %.0f, ttft p99 %.1f ms, wall %.1fs\n",
		p["requests"], p["succeeded"], dig(p, "errors", "count"), p["peak_in_flight"], num(p["achieved_concurrency"]),
		num(dig(p, "ttft_ms", "p99")), r.wall.Seconds())
	fmt.Printf("   reproduce: go run ./bench/client -only streams\n")
	if num(dig(p, "errors", "count")) != 0 || num(p["peak_in_flight"]) < c {
		return errors.New("did not hold every stream without errors")
	}
	return nil
}

func cpuPerEvent(e *env) error {
	const c, n, tokens = 256, 1024, 256
	srv, err := e.serve("--max-running-seqs", "1024", "--decode-step", "10ms", "--decode-step-per-seq", "1us")
	if err != nil {
		return err
	}
	defer srv.stop()
	simBefore := cpuSeconds(srv.pid)
	r, err := e.tollgate("cpu", fmt.Sprintf(loadScenario, srv.url, fmt.Sprintf("concurrency: %d\n    requests: %d", c, n), 64, tokens))
	if err != nil {
		return err
	}
	simCPU := cpuSeconds(srv.pid) - simBefore
	p := point(r)
	events := num(dig(p, "sse_token_events", "mean")) * num(p["succeeded"])
	fmt.Printf("== client CPU per received token event (%d streams × %d tokens)\n", c, tokens)
	fmt.Printf("   tollgate process CPU %.2fs (user+sys, whole process incl. start-up and report) over %.0f token events = %.2f µs/event\n",
		r.cpuS, events, r.cpuS/events*1e6)
	fmt.Printf("   simulator process CPU %.2fs over the same run (wall %.1fs, %d cores): %.0f%% of one core\n",
		simCPU, r.wall.Seconds(), numCPU(), simCPU/r.wall.Seconds()*100)
	fmt.Printf("   tpot p50 %.2f ms (configured step 10 ms + 1 µs × 255 = 10.26 ms): the simulator kept its schedule\n", num(dig(p, "tpot_ms", "p50")))
	fmt.Printf("   reproduce: go run ./bench/client -only cpu\n")
	return nil
}

func ttftError(e *env) error {
	// Both arrival clocks, back to back in one invocation, so the two are
	// compared under the same conditions.
	for _, clock := range []string{"kernel", "read"} {
		if err := ttftErrorWith(e, clock); err != nil {
			return err
		}
	}
	return nil
}

func ttftErrorWith(e *env, clock string) error {
	// ~256 streams in flight with arrivals spread in time: open loop at 62/s,
	// 256 tokens each at 20 ms per step (about 4.2 s per stream). A closed
	// loop of 256 would send in synchronised bursts of 256, which on two
	// shared cores measures the scheduler more than either process.
	const c, n, base = 256, 1500, 50 * time.Millisecond
	srv, err := e.serve("--max-running-seqs", "1024", "--ttft-base", base.String(), "--prefill-tokens-per-s", "1e12",
		"--decode-step", "20ms", "--decode-step-per-seq", "1us")
	if err != nil {
		return err
	}
	defer srv.stop()
	scenario := strings.Replace(fmt.Sprintf(loadScenario, srv.url, fmt.Sprintf("rate: 62\n    arrival: constant\n    requests: %d", n), 64, 256),
		"arrival_clock: kernel", "arrival_clock: "+clock, 1)
	r, err := e.tollgate("ttft-"+clock, scenario)
	if err != nil {
		return err
	}
	f, err := os.Open(r.samples)
	if err != nil {
		return err
	}
	defer f.Close()
	var errs []float64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s struct {
			TTFT *float64 `json:"ttft_ms"`
		}
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.TTFT != nil {
			errs = append(errs, *s.TTFT-float64(base)/1e6)
		}
	}
	sort.Float64s(errs)
	q := func(p float64) float64 { return errs[max(0, int(math.Ceil(float64(len(errs))*p/100))-1)] }
	server := fetchServerTTFT(srv.url)
	fmt.Printf("== TTFT error at ~%d concurrent streams, arrival clock %s (achieved concurrency %.0f; client TTFT − injected %v), %d requests\n",
		c, clock, num(point(r)["achieved_concurrency"]), base, len(errs))
	fmt.Printf("   client − injected:  min %.3f ms  p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  max %.3f ms\n", errs[0], q(50), q(90), q(99), errs[len(errs)-1])
	if server != nil {
		inj := float64(base) / 1e6
		fmt.Printf("   server − injected (the simulator's own lateness, request arrival → first token flushed):\n")
		fmt.Printf("                       min %.3f ms  p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  max %.3f ms\n",
			server["min"]-inj, server["p50"]-inj, server["p90"]-inj, server["p99"]-inj, server["max"]-inj)
		fmt.Printf("   client − server, by quantile (the client's share):  p50 %.3f ms  p90 %.3f ms  p99 %.3f ms\n",
			q(50)+inj-server["p50"], q(90)+inj-server["p90"], q(99)+inj-server["p99"])
	}
	fmt.Printf("   reproduce: go run ./bench/client -only ttft\n")
	return nil
}

// fetchServerTTFT reads the simulator's server-side TTFT quantiles.
func fetchServerTTFT(url string) map[string]float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/stats", nil)
	if err != nil {
		return nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var v struct {
		TTFT map[string]float64 `json:"server_ttft_ms"`
	}
	if json.NewDecoder(resp.Body).Decode(&v) != nil {
		return nil
	}
	return v.TTFT
}

func openLoopRate(e *env) error {
	const rate, n = 1000, 10000
	srv, err := e.serve("--max-running-seqs", "4096", "--decode-step", "5ms", "--decode-step-per-seq", "1us")
	if err != nil {
		return err
	}
	defer srv.stop()
	r, err := e.tollgate("rate", fmt.Sprintf(loadScenario, srv.url, fmt.Sprintf("rate: %d\n    arrival: constant\n    requests: %d", rate, n), 32, 8))
	if err != nil {
		return err
	}
	p := point(r)
	got := num(p["achieved_rate_per_s"])
	fmt.Printf("== open loop at %d requests/s (%d requests, constant arrivals)\n", rate, n)
	fmt.Printf("   achieved %.2f/s (%+.3f%% of target), queue_ms p50 %.3f p99 %.3f max %.3f, errors %v\n",
		got, (got-rate)/rate*100, num(dig(p, "queue_ms", "p50")), num(dig(p, "queue_ms", "p99")), num(dig(p, "queue_ms", "max")), dig(p, "errors", "count"))
	fmt.Printf("   reproduce: go run ./bench/client -only rate\n")
	return nil
}
