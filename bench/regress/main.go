// Command regress measures tollgate's client against an older commit of
// itself and against the bare Go reader (bench/internal/bare), interleaved
// on one `tollgate serve`, and prints the ratios (issue 26 target 6). It is
// a measuring tool: it has no thresholds and fails only when something
// cannot run.
//
//	go run ./bench/regress -old 63e1d5a          # 9 rounds, under 2 minutes on 2 cores
//	go run ./bench/regress -smoke                # 1 round, tiny sizes (.ci/run)
//
// The new build is the working tree; the old one is built from a temporary
// `git worktree` of -old. Both are built with -trimpath, so an old commit
// whose packages did not change hits the build cache.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/bare"
	"github.com/tollgate-dev/tollgate/bench/internal/closedloop"
	"github.com/tollgate-dev/tollgate/bench/internal/rounds"
	"github.com/tollgate-dev/tollgate/bench/internal/serve"
	"github.com/tollgate-dev/tollgate/stats"
)

// shape is one measured case: requests of tokens tokens, concurrency at a
// time, each stream taking the next request when its last one ends.
type shape struct {
	name                        string
	concurrency, requests, toks int
}

// fixedShape is the run whose CPU is a client's fixed cost.
var fixedShape = shape{"fixed", 1, 1, 1}

type config struct {
	old    string
	rounds int
	cases  []shape
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bare" {
		if err := bareMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench/regress bare:", err)
			os.Exit(1)
		}
		return
	}
	old := flag.String("old", "HEAD~50", "the older commit to build and compare against")
	rounds := flag.Int("rounds", 9, "interleaved rounds of [old, new, bare] per case")
	streams := flag.Int("streams", 32, "concurrent streams of the streaming case")
	tokens := flag.Int("tokens", 256, "tokens per request of the streaming case")
	shortReqs := flag.Int("short-requests", 1024, "requests of the 16-token case (at -streams concurrency)")
	smoke := flag.Bool("smoke", false, "1 round at tiny sizes against HEAD (a CI check that the tool runs; its figures mean nothing)")
	flag.Parse()
	c := config{old: *old, rounds: *rounds}
	// Each stream of the streaming case runs 4 requests, so process start-up
	// (counted, as bench/client counts it) is a small part of the CPU.
	c.cases = []shape{
		{"stream", *streams, 4 * *streams, *tokens},
		{"short", *streams, *shortReqs, 16},
	}
	if *smoke {
		oldSet := false
		flag.Visit(func(f *flag.Flag) { oldSet = oldSet || f.Name == "old" })
		if !oldSet {
			c.old = "HEAD"
		}
		c.rounds = 1
		c.cases = []shape{{"stream", 4, 8, 32}, {"short", 4, 32, 16}}
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench/regress:", err)
		os.Exit(1)
	}
}

// result is one client's run of one case.
type result struct {
	cpuS         float64 // user+sys of the whole child process (start-up and report included)
	userS        float64 // its user part: the regression was in user space
	events       float64 // token events received
	requests     float64 // requests that succeeded
	ttfbP50MS    float64
	ttftP50MS    float64 // NaN for the bare reader, which does not parse
	wall         time.Duration
	eventsPerReq float64
	// fixedCPUS is the same client's CPU for fixedShape in the same round.
	fixedCPUS float64
}

func (r result) usPerEvent() float64 { return r.cpuS / r.events * 1e6 }
func (r result) usPerReq() float64   { return r.cpuS / r.requests * 1e6 }

// netUSPerEvent and netUSPerReq leave out the fixed cost.
func (r result) netUSPerEvent() float64 { return (r.cpuS - r.fixedCPUS) / r.events * 1e6 }
func (r result) netUSPerReq() float64   { return (r.cpuS - r.fixedCPUS) / r.requests * 1e6 }

// userPer is the user CPU in µs per token event (stream case) or per request.
func (r result) userPer(s shape) float64 {
	if s.name == "short" {
		return r.userS / r.requests * 1e6
	}
	return r.userS / r.events * 1e6
}

func run(c config) error {
	repo, err := os.Getwd()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "tollgate-regress-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	oldHash, err := output(repo, "git", "rev-parse", "--short", c.old+"^{commit}")
	if err != nil {
		return fmt.Errorf("-old %s: %w", c.old, err)
	}
	newBin, oldBin := filepath.Join(dir, "tollgate-new"), filepath.Join(dir, "tollgate-old")
	buildStart := time.Now()
	if _, err := output(repo, "go", "build", "-trimpath", "-o", newBin, "./cmd/tollgate"); err != nil {
		return fmt.Errorf("build the working tree: %w", err)
	}
	if err := buildAt(repo, oldHash, filepath.Join(dir, "old-src"), oldBin); err != nil {
		return err
	}
	head, _ := output(repo, "git", "rev-parse", "--short", "HEAD")
	dirty := ""
	if s, _ := output(repo, "git", "status", "--porcelain", "--untracked-files=no"); s != "" {
		dirty = " + uncommitted changes"
	}
	fmt.Printf("old: %s   new: working tree at %s%s   (built in %.0fs)\n", oldHash, head, dirty, time.Since(buildStart).Seconds())

	// One server for every run, the new build's simulator: 1 ms decode
	// steps, so a stream's client spends its time receiving, and no prefill
	// cost, so the short case measures requests, not the simulator.
	srv, err := serve.Start(newBin, "--max-running-seqs", "1024", "--decode-step", "1ms", "--decode-step-per-seq", "1us",
		"--ttft-base", "2ms", "--prefill-tokens-per-s", "1e12")
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Printf("server: %s serve, 1 ms decode step + 1 µs per running sequence, 2 ms TTFT base\n", filepath.Base(newBin))
	fmt.Printf("load average at the start: %s   (%d CPUs)\n\n", rounds.LoadAvg(), rounds.NumCPU())

	// Prompt calibration (a count_tokens request per prompt before the
	// first is sent) is the scenario's, not the load loop's, and the bare
	// reader has none: it is turned off where both builds read the key.
	load := ""
	const calibrateOff = "prompt: {calibrate: false}"
	probe := closedloop.Shape{Concurrency: 1, Requests: 1, MaxTokens: 1, Load: calibrateOff}
	if closedloop.Reads(oldBin, filepath.Join(dir, "probe.yaml"), srv.URL, probe) && closedloop.Reads(newBin, filepath.Join(dir, "probe.yaml"), srv.URL, probe) {
		load = calibrateOff
		fmt.Printf("scenario: %s (both builds read it)\n", calibrateOff)
	} else {
		fmt.Printf("scenario: prompts calibrated (the old build does not read %q): about 100 µs of a short request's CPU is that\n", calibrateOff)
	}
	clients := []string{"old", "new", "bare"}
	runOne := func(client string, s shape) (result, error) {
		switch client {
		case "bare":
			return runBare(self, srv.URL, s)
		case "old":
			return runTollgate(oldBin, dir, srv.URL, s, load)
		default:
			return runTollgate(newBin, dir, srv.URL, s, load)
		}
	}
	// got[case][client] holds each round's result.
	got := make([]map[string][]result, len(c.cases))
	for i := range got {
		got[i] = map[string][]result{}
	}
	for round := range c.rounds {
		// Each client's fixed cost this round: a run of one 1-token
		// request, which is start-up, the report and little else. The
		// net figures take it away, so they are the cost per event or
		// request the run's size adds (start-up has a target of its own).
		fixed := map[string]float64{}
		for j := range clients {
			cl := clients[(round+j)%len(clients)]
			r, err := runOne(cl, fixedShape)
			if err != nil {
				return fmt.Errorf("round %d, fixed cost, %s: %w", round+1, cl, err)
			}
			fixed[cl] = r.cpuS
		}
		for ci, s := range c.cases {
			// Each round starts with the next client, so none is always first.
			for j := range clients {
				cl := clients[(round+j)%len(clients)]
				r, err := runOne(cl, s)
				if err != nil {
					return fmt.Errorf("round %d, %s, %s: %w", round+1, s.name, cl, err)
				}
				r.fixedCPUS = fixed[cl]
				got[ci][cl] = append(got[ci][cl], r)
			}
			printRound(round+1, s, got[ci], clients)
		}
		fmt.Printf("   load average after round %d: %s\n", round+1, rounds.LoadAvg())
	}
	fmt.Println()
	printMedians(c, got, clients)
	fmt.Printf("load average at the end: %s\n", rounds.LoadAvg())
	return nil
}

// figure is one per-client figure of a case and how it is compared: CPU
// figures as ratios, latencies as differences in ms (a ratio of two small
// TTFBs says little).
type figure struct {
	name  string
	ratio bool
	of    func(result) float64
}

func figures(s shape) []figure {
	cpu, net, user := figure{"CPU µs/event", true, result.usPerEvent}, figure{"net CPU µs/event", true, result.netUSPerEvent}, "user µs/event"
	if s.name == "short" {
		cpu, net, user = figure{"CPU µs/request", true, result.usPerReq}, figure{"net CPU µs/req", true, result.netUSPerReq}, "user µs/request"
	}
	return []figure{
		cpu,
		net,
		{user, true, func(r result) float64 { return r.userPer(s) }},
		{"TTFB p50 ms", false, func(r result) float64 { return r.ttfbP50MS }},
		{"TTFT p50 ms", false, func(r result) float64 { return r.ttftP50MS }},
	}
}

var pairs = [][2]string{{"new", "old"}, {"new", "bare"}, {"old", "bare"}}

func printRound(round int, s shape, got map[string][]result, clients []string) {
	last := func(cl string) result { v := got[cl]; return v[len(v)-1] }
	fmt.Printf("round %d  %s (%d streams × %d tokens, %d requests)\n", round, s.name, s.concurrency, s.toks, s.requests)
	for _, cl := range clients {
		r := last(cl)
		fmt.Printf("   %-4s  CPU %6.3fs (user %5.3fs, fixed %5.3fs)  %7.2f µs/event  %7.1f µs/request  TTFB p50 %6.3f ms  TTFT p50 %s  (%.1f events/request, wall %.1fs)\n",
			cl, r.cpuS, r.userS, r.fixedCPUS, r.usPerEvent(), r.usPerReq(), r.ttfbP50MS, rounds.MS(r.ttftP50MS), r.eventsPerReq, r.wall.Seconds())
	}
	var parts []string
	for _, f := range figures(s) {
		for _, p := range pairs {
			a, b := f.of(last(p[0])), f.of(last(p[1]))
			if isNaN(a) || isNaN(b) {
				continue
			}
			v := a - b
			if f.ratio {
				v = ratio(a, b)
			}
			parts = append(parts, formatPair(f, p, v))
		}
		fmt.Printf("   %-16s %s\n", f.name, strings.Join(parts, "   "))
		parts = parts[:0]
	}
}

func printMedians(c config, got []map[string][]result, clients []string) {
	fmt.Printf("medians over %d rounds (a ratio's median is of each round's ratio)\n", c.rounds)
	for ci, s := range c.cases {
		fmt.Printf("%s (%d streams × %d tokens, %d requests)\n", s.name, s.concurrency, s.toks, s.requests)
		for _, f := range figures(s) {
			var cells []string
			for _, cl := range clients {
				v := rounds.Median(rounds.Of(got[ci][cl], f.of))
				if !isNaN(v) {
					cells = append(cells, fmt.Sprintf("%s %.3f", cl, v))
				}
			}
			for _, p := range pairs {
				a, b := got[ci][p[0]], got[ci][p[1]]
				d := make([]float64, len(a))
				for i := range a {
					x, y := f.of(a[i]), f.of(b[i])
					if f.ratio {
						d[i] = ratio(x, y)
					} else {
						d[i] = x - y
					}
				}
				if v := rounds.Median(d); !isNaN(v) {
					cells = append(cells, formatPair(f, p, v))
				}
			}
			fmt.Printf("   %-16s %s\n", f.name, strings.Join(cells, "   "))
		}
	}
}

func formatPair(f figure, p [2]string, v float64) string {
	if f.ratio {
		return fmt.Sprintf("%s/%s %.3f", p[0], p[1], v)
	}
	return fmt.Sprintf("%s−%s %+.3f", p[0], p[1], v)
}

// ratio is a/b, NaN (not printed) when b is 0: a tiny run's user CPU can
// read 0 at rusage's resolution.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return nan
	}
	return a / b
}

var nan = math.NaN()

func isNaN(x float64) bool { return math.IsNaN(x) }

// buildAt builds cmd/tollgate at commit into bin from a temporary worktree.
func buildAt(repo, commit, src, bin string) error {
	if _, err := output(repo, "git", "worktree", "add", "--detach", src, commit); err != nil {
		return fmt.Errorf("worktree of %s: %w", commit, err)
	}
	defer func() { _, _ = output(repo, "git", "worktree", "remove", "--force", src) }()
	if _, err := output(src, "go", "build", "-trimpath", "-o", bin, "./cmd/tollgate"); err != nil {
		return fmt.Errorf("build %s: %w", commit, err)
	}
	return nil
}

func output(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// runTollgate runs bin on s (bench/internal/closedloop) and reads its CPU
// from the child's rusage and its figures from its JSON report.
func runTollgate(bin, dir, base string, s shape, load string) (result, error) {
	run, err := closedloop.Tollgate(bin, dir, s.name, base, closedloop.Shape{Concurrency: s.concurrency, Requests: s.requests, MaxTokens: s.toks, Load: load})
	if err != nil {
		return result{}, err
	}
	ps := run.State
	return result{
		wall: run.Wall, cpuS: (ps.UserTime() + ps.SystemTime()).Seconds(), userS: ps.UserTime().Seconds(),
		requests: run.Succeeded, eventsPerReq: run.TokenEventsMean, events: run.TokenEventsMean * run.Succeeded,
		ttfbP50MS: run.TTFBP50MS, ttftP50MS: run.TTFTP50MS,
	}, nil
}

// bareReport is what the bare child prints for its parent.
type bareReport struct {
	Requests  int     `json:"requests"`
	Bytes     int64   `json:"bytes"`
	Reads     int64   `json:"reads"` // reads that returned bytes (bench/h1proto prints CPU per read)
	TTFBP50MS float64 `json:"ttfb_p50_ms"`
}

// runBare runs this program as the bare reader in a child process, so its
// CPU is read from rusage exactly as tollgate's is.
func runBare(self, base string, s shape) (result, error) {
	cmd := exec.Command(self, "bare", "-url", base, "-concurrency", strconv.Itoa(s.concurrency),
		"-requests", strconv.Itoa(s.requests), "-tokens", strconv.Itoa(s.toks))
	cmd.Stderr = os.Stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		return result{}, fmt.Errorf("bare reader: %w", err)
	}
	var br bareReport
	if err := json.Unmarshal(out, &br); err != nil {
		return result{}, fmt.Errorf("bare reader printed %q: %w", out, err)
	}
	// It does not parse, so its token events are those the server was asked
	// for: the simulator sends max_tokens content events per request
	// (ignore_eos); readBare checks the bytes say so.
	return result{
		wall:         time.Since(start),
		cpuS:         (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(),
		userS:        cmd.ProcessState.UserTime().Seconds(),
		requests:     float64(br.Requests),
		events:       float64(br.Requests * s.toks),
		eventsPerReq: float64(s.toks),
		ttfbP50MS:    br.TTFBP50MS,
		ttftP50MS:    nan,
	}, nil
}

// chunkedEnd is the last chunk of a chunked body: the end of one response
// on a kept-alive connection. An SSE chunk's data ends in "\n\n", so a read
// cannot end in these bytes before the body does.
const chunkedEnd = "0\r\n\r\n"

// bareMain is the bare reader: -concurrency connections, each a goroutine
// sending the next request as its last response ends, reading each through
// bare.Drain with no HTTP or SSE parsing beyond spotting the body's end.
func bareMain(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ContinueOnError)
	base := fs.String("url", "", "server base URL")
	conc := fs.Int("concurrency", 1, "connections")
	requests := fs.Int("requests", 1, "requests in all")
	tokens := fs.Int("tokens", 16, "max_tokens of each request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	br, err := readBare(*base, *conc, *requests, *tokens)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(br)
}

// readBare sends requests requests of tokens tokens to base over conc
// kept-alive connections and reads them as described at bareMain.
func readBare(base string, conc, requests, tokens int) (bareReport, error) {
	u, err := url.Parse(base)
	if err != nil {
		return bareReport{}, err
	}
	// A prompt of about 64 words, as the tollgate scenario asks for.
	prompt := strings.TrimSpace(strings.Repeat("bare reader prompt word ", 16))
	// ignore_eos and include_usage as engine/openai sends them: without
	// ignore_eos the simulator ends a stream at its drawn EOS, short of
	// max_tokens.
	body := fmt.Sprintf(`{"model":"tollgate-sim","messages":[{"role":"user","content":%q}],"max_tokens":%d,"stream":true,`+
		`"temperature":0,"top_p":1,"ignore_eos":true,"stream_options":{"include_usage":true}}`, prompt, tokens)
	req := []byte(fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		u.Host, len(body), body))

	var next atomic.Int64
	ttfb := make([]float64, requests)
	var total, reads atomic.Int64
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				cancel(err)
				return
			}
			defer c.Close()
			buf := make([]byte, bare.ReadBytes)
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= requests {
					return
				}
				sent := time.Now()
				if _, err := c.Write(req); err != nil {
					cancel(err)
					return
				}
				first := true
				tail := make([]byte, 0, 2*len(chunkedEnd)) // the last bytes read: a terminator can be split across reads
				n, err := bare.Drain(c, buf, func(b []byte) bool {
					reads.Add(1)
					if first {
						ttfb[i] = float64(time.Since(sent).Nanoseconds()) / 1e6
						first = false
					}
					if len(b) >= len(chunkedEnd) {
						tail = append(tail[:0], b[len(b)-len(chunkedEnd):]...)
					} else {
						tail = append(tail, b...)
						tail = tail[max(0, len(tail)-len(chunkedEnd)):]
					}
					return string(tail) == chunkedEnd
				})
				total.Add(n)
				if err == nil && first {
					err = errors.New("connection closed before a response")
				}
				if err != nil {
					cancel(fmt.Errorf("request %d: %w", i, err))
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return bareReport{}, err
	}
	// An event is over 150 bytes; fewer bytes mean streams ended early (or
	// a body's end was seen too soon) and every figure would be wrong.
	if least := int64(requests) * int64(tokens) * 150; total.Load() < least {
		return bareReport{}, fmt.Errorf("%d bytes for %d requests of %d tokens, under %d: streams ended early", total.Load(), requests, tokens, least)
	}
	slices.Sort(ttfb)
	return bareReport{Requests: requests, Bytes: total.Load(), Reads: reads.Load(), TTFBP50MS: stats.NearestRank(ttfb, 50)}, nil
}
