// Command h1proto measures what an own HTTP/1.1 stream reader would buy
// tollgate's client (issue 26, targets 1, 2 and 4) before anyone rewrites
// engine/transport: a prototype that keeps one goroutine per stream on a
// kept-alive TCP connection, writes each request in one Write, parses the
// head (http.ReadResponse or by hand) and the chunked body itself, and
// does the work tollgate must do per event (engine/transport/sse finds
// it, engine/openai's accumulator decodes its JSON and keeps the token's
// arrival, measure.Derive ends the request), timed by the kernel's
// receive timestamps. It runs, interleaved on one `tollgate serve`:
//
//   - bare: bench/regress's bare reader (bench/internal/bare), the floor;
//   - transport: engine/transport itself (openai.Client.Stream) in a loop
//     of the same shape, so only the client differs;
//   - tollgate: the tollgate binary on a scenario, as bench/regress runs it
//     (start-up, load loop, report), calibration off;
//   - h1-*: the prototype's variants (variants in h1.go).
//
// Each client runs in a child process; its CPU (user+sys) and peak RSS
// come from rusage. It has no thresholds.
//
//	go run ./bench/h1proto                 # 5 rounds, about 4 minutes on 2 loaded cores
//	go run ./bench/h1proto -smoke          # tiny sizes: that it runs
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/closedloop"
	"github.com/tollgate-dev/tollgate/bench/internal/rounds"
	"github.com/tollgate-dev/tollgate/bench/internal/serve"
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/stats"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := childMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench/h1proto child:", err)
			os.Exit(1)
		}
		return
	}
	c := config{}
	flag.IntVar(&c.rounds, "rounds", 5, "interleaved rounds of the stream and short cases")
	flag.IntVar(&c.streams, "streams", 32, "concurrent streams of the stream and short cases")
	flag.IntVar(&c.tokens, "tokens", 256, "tokens per request of the stream case")
	flag.IntVar(&c.shortReqs, "short-requests", 1024, "requests of the 16-token case")
	flag.IntVar(&c.hold, "hold", 2000, "streams held open at once for memory per stream (0: skip)")
	flag.IntVar(&c.holdRounds, "hold-rounds", 1, "rounds of the hold case")
	clients := flag.String("clients", strings.Join(allClients, ","), "clients to run, in this order")
	smoke := flag.Bool("smoke", false, "1 round at tiny sizes (that it runs; its figures mean nothing)")
	flag.Parse()
	c.clients = strings.Split(*clients, ",")
	for _, cl := range c.clients {
		if _, ok := variants[cl]; !ok && !slices.Contains(allClients, cl) {
			fmt.Fprintf(os.Stderr, "bench/h1proto: unknown client %q\n", cl)
			os.Exit(2)
		}
	}
	if *smoke {
		c.rounds, c.streams, c.tokens, c.shortReqs, c.hold, c.holdRounds = 1, 4, 32, 32, 120, 1
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench/h1proto:", err)
		os.Exit(1)
	}
}

var allClients = []string{"bare", "tollgate", "transport", "transport-std", "h1-std", "h1-hand", "h1-hand-nots", "h1-hand-16k", "h1-hand-64k", "h1-hand-skip"}

type config struct {
	rounds, streams, tokens, shortReqs, hold, holdRounds int
	clients                                              []string
}

// shape is one case: requests of toks tokens, concurrency at a time.
type shape struct {
	name                        string
	concurrency, requests, toks int
}

// result is one client's run of one case.
type result struct {
	cpuS, userS  float64
	maxRSSKB     int64
	requests     float64
	events       float64
	reads        float64 // data reads; 0: not counted
	eagain       float64 // failed tries; -1: not counted
	skipped      float64
	late         float64 // reads that found data older than their call after a skipped try
	lateMaxMS    float64 // the longest such data waited
	lost         float64 // waits that missed their data until the deadline
	ttftP50MS    float64
	wall         time.Duration
	eventsPerReq float64
}

func (r result) usPerEvent() float64 { return r.cpuS / r.events * 1e6 }
func (r result) usPerReq() float64   { return r.cpuS / r.requests * 1e6 }
func (r result) usPerRead() float64 {
	if r.reads <= 0 {
		return nan
	}
	return r.cpuS / r.reads * 1e6
}

type env struct {
	dir, self, tollgate, regress string
}

func run(c config) error {
	dir, err := os.MkdirTemp("", "tollgate-h1proto-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	e := env{dir: dir, self: self, tollgate: filepath.Join(dir, "tollgate"), regress: filepath.Join(dir, "regress")}
	for bin, pkg := range map[string]string{e.tollgate: "./cmd/tollgate", e.regress: "./bench/regress"} {
		if out, err := exec.Command("go", "build", "-trimpath", "-o", bin, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", pkg, err, out)
		}
	}
	// bench/regress's server: 1 ms decode steps, no prefill cost, so the
	// clients' own cost is what varies.
	srv, err := serve.Start(e.tollgate, "--max-running-seqs", "1024", "--decode-step", "1ms", "--decode-step-per-seq", "1us",
		"--ttft-base", "2ms", "--prefill-tokens-per-s", "1e12")
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Printf("server: tollgate serve, 1 ms decode step + 1 µs per running sequence, 2 ms TTFT base\n")
	fmt.Printf("load average at the start: %s   (%d CPUs)\n\n", rounds.LoadAvg(), rounds.NumCPU())

	cases := []shape{
		{"stream", c.streams, 4 * c.streams, c.tokens},
		{"short", c.streams, c.shortReqs, 16},
	}
	got := make([]map[string][]result, len(cases))
	for i := range got {
		got[i] = map[string][]result{}
	}
	for round := range c.rounds {
		for ci, s := range cases {
			for j := range c.clients {
				cl := c.clients[(round+j)%len(c.clients)]
				r, err := e.runClient(cl, srv.URL, s)
				if err != nil {
					return fmt.Errorf("round %d, %s, %s: %w", round+1, s.name, cl, err)
				}
				got[ci][cl] = append(got[ci][cl], r)
			}
			printRound(round+1, s, got[ci], c.clients)
		}
		fmt.Printf("   load average after round %d: %s\n", round+1, rounds.LoadAvg())
	}
	fmt.Println()
	printMedians(c, cases, got)
	if c.hold > 0 {
		srv.Stop()
		if err := e.hold(c); err != nil {
			return err
		}
	}
	fmt.Printf("load average at the end: %s\n", rounds.LoadAvg())
	return nil
}

// runClient runs client cl on s in a child process.
func (e env) runClient(cl, base string, s shape) (result, error) {
	var cmd *exec.Cmd
	switch cl {
	case "bare":
		cmd = exec.Command(e.regress, "bare", "-url", base, "-concurrency", strconv.Itoa(s.concurrency),
			"-requests", strconv.Itoa(s.requests), "-tokens", strconv.Itoa(s.toks))
	case "tollgate":
		return e.runTollgate(base, s)
	default:
		cmd = exec.Command(e.self, "child", "-client", cl, "-url", base, "-concurrency", strconv.Itoa(s.concurrency),
			"-requests", strconv.Itoa(s.requests), "-tokens", strconv.Itoa(s.toks))
	}
	cmd.Stderr = os.Stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		return result{}, err
	}
	var cr childReport
	if err := json.Unmarshal(out, &cr); err != nil {
		return result{}, fmt.Errorf("%s printed %q: %w", cl, out, err)
	}
	r := stateOf(cmd.ProcessState, time.Since(start))
	r.requests = float64(cr.Requests)
	// The bare reader counts no events: it asks for s.toks per request
	// (ignore_eos) and checks its bytes say they came.
	r.events, r.eventsPerReq = float64(cr.Requests*s.toks), float64(s.toks)
	r.ttftP50MS, r.reads, r.eagain, r.skipped, r.late = nan, float64(cr.Reads), -1, float64(cr.Skipped), float64(cr.Late)
	r.lateMaxMS, r.lost = cr.LateMaxMS, float64(cr.Lost)
	if cl != "bare" {
		r.events, r.eventsPerReq = float64(cr.Events), float64(cr.Events)/float64(cr.Requests)
		r.ttftP50MS, r.eagain = cr.TTFTP50MS, float64(cr.EAGAIN)
	}
	return r, nil
}

func stateOf(ps *os.ProcessState, wall time.Duration) result {
	r := result{wall: wall, cpuS: (ps.UserTime() + ps.SystemTime()).Seconds(), userS: ps.UserTime().Seconds()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		r.maxRSSKB = ru.Maxrss
	}
	return r
}

// runTollgate runs the tollgate binary on s (bench/internal/closedloop)
// with calibration off: the load loop's cost, not the prompts' sizing.
func (e env) runTollgate(base string, s shape) (result, error) {
	run, err := closedloop.Tollgate(e.tollgate, e.dir, s.name, base, closedloop.Shape{
		Concurrency: s.concurrency, Requests: s.requests, MaxTokens: s.toks, Load: "prompt: {calibrate: false}"})
	if err != nil {
		return result{}, err
	}
	r := stateOf(run.State, run.Wall)
	r.requests, r.eventsPerReq, r.events = run.Succeeded, run.TokenEventsMean, run.TokenEventsMean*run.Succeeded
	r.ttftP50MS, r.eagain = run.TTFTP50MS, -1
	return r, nil
}

// hold measures resident memory per open stream as bench/client does: the
// peak RSS of a run holding c.hold streams open at once less that of a run
// of holdBase, over the difference in streams.
func (e env) hold(c config) error {
	const holdBase, tokens = 100, 30
	n := c.hold
	if n <= holdBase {
		return fmt.Errorf("-hold %d: at least %d", n, holdBase+1)
	}
	// 100 ms steps: a stream lasts 3 s, well past the ramp to n streams.
	srv, err := serve.Start(e.tollgate, "--max-running-seqs", strconv.Itoa(2*n), "--decode-step", "100ms", "--decode-step-per-seq", "1us")
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Printf("hold: %d streams open at once (%d tokens each, 100 ms steps); KB per open stream = (peak RSS at %d − at %d) / %d\n",
		n, tokens, n, holdBase, n-holdBase)
	for round := range c.holdRounds {
		for _, cl := range c.clients {
			var rss [2]int64
			for i, k := range []int{holdBase, n} {
				r, err := e.runClient(cl, srv.URL, shape{"hold", k, k, tokens})
				if err != nil {
					return fmt.Errorf("hold round %d, %s, %d streams: %w", round+1, cl, k, err)
				}
				rss[i] = r.maxRSSKB
			}
			fmt.Printf("   %-13s peak RSS %6.1f MiB at %d, %5.1f MiB at %d: %5.1f KB per open stream\n",
				cl, float64(rss[1])/1024, n, float64(rss[0])/1024, holdBase, float64(rss[1]-rss[0])*1024/float64(n-holdBase)/1000)
		}
	}
	return nil
}

func printRound(round int, s shape, got map[string][]result, clients []string) {
	fmt.Printf("round %d  %s (%d streams × %d tokens, %d requests)\n", round, s.name, s.concurrency, s.toks, s.requests)
	bare := got["bare"]
	for _, cl := range clients {
		r := got[cl][len(got[cl])-1]
		rel := ""
		if len(bare) > 0 && cl != "bare" {
			b := bare[len(bare)-1]
			rel = fmt.Sprintf("  ×bare %.3f", r.usPerEvent()/b.usPerEvent())
		}
		fmt.Printf("   %-13s CPU %6.3fs (user %5.3fs) %7.2f µs/event %7.1f µs/request%s  %s  TTFT p50 %s  (wall %.1fs)\n",
			cl, r.cpuS, r.userS, r.usPerEvent(), r.usPerReq(), rel, readsText(r), rounds.MS(r.ttftP50MS), r.wall.Seconds())
	}
}

// readsText says how a client read: data reads per event, CPU per read,
// and failed tries (EAGAIN) per data read, where it counts them.
func readsText(r result) string {
	if r.reads <= 0 {
		return fmt.Sprintf("%-44s", "reads not counted")
	}
	s := fmt.Sprintf("%.2f reads/event %6.2f µs/read", r.reads/r.events, r.usPerRead())
	if r.eagain >= 0 {
		s += fmt.Sprintf(" EAGAIN/read %.2f", r.eagain/r.reads)
	}
	if r.skipped > 0 {
		s += fmt.Sprintf(" skipped/read %.2f, %.0f found data waiting (max %.1f ms), %.0f lost wake-ups", r.skipped/r.reads, r.late, r.lateMaxMS, r.lost)
	}
	return fmt.Sprintf("%-44s", s)
}

// printMedians prints, per case and client, the medians over the rounds
// of each figure and of each round's ratio to bare and to transport.
func printMedians(c config, cases []shape, got []map[string][]result) {
	fmt.Printf("medians over %d rounds (a ratio's median is of each round's ratio)\n", c.rounds)
	for ci, s := range cases {
		fmt.Printf("%s (%d streams × %d tokens, %d requests)\n", s.name, s.concurrency, s.toks, s.requests)
		fig := result.usPerEvent
		unit := "µs/event"
		if s.name == "short" {
			fig, unit = result.usPerReq, "µs/request"
		}
		for _, cl := range c.clients {
			rs := got[ci][cl]
			line := fmt.Sprintf("   %-13s CPU %8.2f %s", cl, rounds.Median(rounds.Of(rs, fig)), unit)
			for _, ref := range []string{"bare", "transport"} {
				if refs, ok := got[ci][ref]; ok && ref != cl {
					line += fmt.Sprintf("   /%s %.3f", ref, rounds.Median(ratios(rs, refs, fig)))
				}
			}
			if v := rounds.Median(rounds.Of(rs, result.usPerRead)); !isNaN(v) {
				line += fmt.Sprintf("   %.2f µs/read, %.2f reads/event", v, rounds.Median(rounds.Of(rs, func(r result) float64 { return r.reads / r.events })))
				if refs, ok := got[ci]["bare"]; ok && cl != "bare" {
					line += fmt.Sprintf(", per read /bare %.3f", rounds.Median(ratios(rs, refs, result.usPerRead)))
				}
			}
			if v := rounds.Median(rounds.Of(rs, func(r result) float64 { return r.eagain / r.reads })); r0(rs).eagain >= 0 && !isNaN(v) {
				line += fmt.Sprintf(", EAGAIN/read %.2f", v)
			}
			if v := rounds.Median(rounds.Of(rs, func(r result) float64 { return r.ttftP50MS })); !isNaN(v) {
				line += fmt.Sprintf("   TTFT p50 %.3f ms", v)
			}
			fmt.Println(line)
		}
	}
}

func r0(rs []result) result {
	if len(rs) == 0 {
		return result{eagain: -1}
	}
	return rs[0]
}

func ratios(a, b []result, f func(result) float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		out[i] = f(a[i]) / f(b[i])
	}
	return out
}

var nan = math.NaN()

func isNaN(x float64) bool { return math.IsNaN(x) }

// childReport is what a child prints for its parent (bench/regress's bare
// reader prints the fields it has of the same names).
type childReport struct {
	Requests  int     `json:"requests"`
	Events    int     `json:"events"`
	Reads     int64   `json:"reads"`
	EAGAIN    int64   `json:"eagain"`
	Skipped   int64   `json:"skipped"`
	Late      int64   `json:"late"`
	LateMaxMS float64 `json:"late_max_ms"`
	Lost      int64   `json:"lost"`
	TTFTP50MS float64 `json:"ttft_p50_ms"`
}

// body is the request bench/regress's bare reader sends: a prompt of about
// 64 words, ignore_eos and include_usage as engine/openai sends them.
func body(tokens int) string {
	prompt := strings.TrimSpace(strings.Repeat("bare reader prompt word ", 16))
	return fmt.Sprintf(`{"model":"tollgate-sim","messages":[{"role":"user","content":%q}],"max_tokens":%d,"stream":true,`+
		`"temperature":0,"top_p":1,"ignore_eos":true,"stream_options":{"include_usage":true}}`, prompt, tokens)
}

func childMain(args []string) error {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	client := fs.String("client", "", "transport or an h1-* variant")
	base := fs.String("url", "", "server base URL")
	conc := fs.Int("concurrency", 1, "streams")
	requests := fs.Int("requests", 1, "requests in all")
	tokens := fs.Int("tokens", 16, "max_tokens of each request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var cr childReport
	var err error
	if *client == "transport" || *client == "transport-std" {
		cr, err = runTransport(*base, *conc, *requests, *tokens, *client == "transport-std")
	} else {
		v, ok := variants[*client]
		if !ok {
			return fmt.Errorf("unknown client %q", *client)
		}
		cr, err = runProto(v, *base, *conc, *requests, *tokens)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(cr)
}

// loop runs requests requests over conc streams, each stream taking the
// next as its last ends; one(stream, i) runs request i and returns its
// metrics.
func loop(conc, requests int, open func() (func(i int) (measure.Metrics, error), func(), error)) (childReport, error) {
	var next atomic.Int64
	ttft := make([]float64, requests)
	events := make([]int, requests)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			one, done, err := open()
			if err != nil {
				cancel(err)
				return
			}
			defer done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= requests {
					return
				}
				m, err := one(i)
				if err != nil {
					cancel(fmt.Errorf("request %d: %w", i, err))
					return
				}
				if m.TTFTMS == nil {
					cancel(fmt.Errorf("request %d: no TTFT", i))
					return
				}
				ttft[i], events[i] = *m.TTFTMS, m.SSETokenEvents
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return childReport{}, err
	}
	cr := childReport{Requests: requests}
	for _, n := range events {
		cr.Events += n
	}
	slices.Sort(ttft)
	cr.TTFTP50MS = stats.NearestRank(ttft, 50)
	return cr, nil
}

// runProto is the prototype: one stream (connection, buffers, parser,
// accumulator) per goroutine.
func runProto(v variant, base string, conc, requests, tokens int) (childReport, error) {
	u, err := url.Parse(base)
	if err != nil {
		return childReport{}, err
	}
	b := body(tokens)
	req := []byte(fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		u.Host, len(b), b))
	var mu sync.Mutex
	var total counts
	cr, err := loop(conc, requests, func() (func(int) (measure.Metrics, error), func(), error) {
		s, err := dialStream(u.Host, v)
		if err != nil {
			return nil, nil, err
		}
		one := func(int) (measure.Metrics, error) { return s.do(req, tokens) }
		done := func() {
			_ = s.nc.Close()
			c := s.rd.counts()
			mu.Lock()
			defer mu.Unlock()
			total.reads += c.reads
			total.eagain += c.eagain
			total.skipped += c.skipped
			total.late += c.late
			total.lost += c.lost
			total.lateMaxNS = max(total.lateMaxNS, c.lateMaxNS)
		}
		return one, done, nil
	})
	cr.Reads, cr.EAGAIN, cr.Skipped, cr.Late = total.reads, total.eagain, total.skipped, total.late
	cr.LateMaxMS, cr.Lost = float64(total.lateMaxNS)/1e6, total.lost
	if !v.kernelTS {
		cr.EAGAIN = -1
	}
	return cr, err
}

// runTransport is engine/transport itself, through openai.Client.Stream,
// in the same loop: the client tollgate's load phase drives. std sends
// through net/http's transport instead of engine/transport's own reader
// (Config.StdHTTP).
func runTransport(base string, conc, requests, tokens int, std bool) (childReport, error) {
	cl, err := openai.New(openai.Config{BaseURL: base, MaxConns: conc, TotalTimeout: 5 * time.Minute, StdHTTP: std})
	if err != nil {
		return childReport{}, err
	}
	defer cl.Close()
	prompt := strings.TrimSpace(strings.Repeat("bare reader prompt word ", 16))
	cr, err := loop(conc, requests, func() (func(int) (measure.Metrics, error), func(), error) {
		one := func(int) (measure.Metrics, error) {
			res, err := cl.Stream(context.Background(), openai.Request{
				Model:    "tollgate-sim",
				Messages: []openai.Message{{Role: "user", Content: prompt}}, MaxTokens: tokens, Stream: true,
			})
			if err == nil && res.SSETokenEvents != tokens {
				err = fmt.Errorf("%w: %d token events of %d", errShort, res.SSETokenEvents, tokens)
			}
			return res.Metrics, err
		}
		return one, func() {}, nil
	})
	cr.EAGAIN = -1
	return cr, err
}
