package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/engine/sim"
)

// serveOptions are the serve flags that are not simulator config.
type serveOptions struct {
	addr       string
	requestLog string
}

func serveFlags(stderr io.Writer) (*pflag.FlagSet, func() (serveOptions, sim.Config, error)) {
	d := sim.DefaultConfig()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var o serveOptions
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8000", "listen on `HOST:PORT` (port 0 picks a free one; not HOST:PORT exits 2, cannot bind exits 3)")
	fs.StringVar(&o.requestLog, "request-log", "", "write one JSON line per generation request to `PATH` (arrival, id, tokens, first/last token send times in Unix ns)")
	c := sim.Config{}
	fs.StringVar(&c.Model, "model", d.Model, "the model id served")
	fs.DurationVar(&c.TTFTBase, "ttft-base", d.TTFTBase, "fixed time to first token (0: none)")
	fs.Float64Var(&c.PrefillTokensPerS, "prefill-tokens-per-s", d.PrefillTokensPerS, "prefill throughput for uncached prompt tokens")
	fs.DurationVar(&c.DecodeStep, "decode-step", d.DecodeStep, "time per decode step with one running sequence (0: none)")
	fs.DurationVar(&c.DecodeStepPerSeq, "decode-step-per-seq", d.DecodeStepPerSeq, "added to each decode step per extra running sequence (0: none)")
	fs.IntVar(&c.MaxRunningSeqs, "max-running-seqs", d.MaxRunningSeqs, "running sequences before requests queue")
	fs.IntVar(&c.CacheCapacityTokens, "cache-capacity-tokens", d.CacheCapacityTokens, "prefix cache capacity (LRU)")
	fs.IntVar(&c.BlockTokens, "block-tokens", d.BlockTokens, "prefix cache block size")
	fs.BoolVar(&c.DisablePrefixCache, "no-prefix-cache", false, "turn the prefix cache off")
	fs.Int64Var(&c.Seed, "seed", 0, "seed of the deterministic output text")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", d.IdleTimeout, "close a connection idle this long between requests (advertised as Keep-Alive: timeout); a fresh connection waits max(10×, 2m) for its first request")
	apiKeyEnv := fs.String("api-key-env", "", "require the API key held in this environment `VARIABLE`")
	return fs, func() (serveOptions, sim.Config, error) {
		if *apiKeyEnv != "" {
			c.APIKey = os.Getenv(*apiKeyEnv)
		}
		// The simulator reads 0 as "default"; a 0 given here means none,
		// which it spells as a nanosecond (as engine/embedded does), and
		// the start-up line says as 0.
		for _, f := range []struct {
			name string
			d    *time.Duration
		}{{"ttft-base", &c.TTFTBase}, {"decode-step", &c.DecodeStep}, {"decode-step-per-seq", &c.DecodeStepPerSeq}} {
			if *f.d < 0 {
				return o, c, invalid(fmt.Errorf("--%s %v: want 0 (none) or a positive duration", f.name, *f.d))
			}
			if *f.d == 0 && fs.Changed(f.name) {
				*f.d = time.Nanosecond
			}
		}
		if c.IdleTimeout <= 0 && fs.Changed("idle-timeout") {
			// The simulator reads 0 as its 30 s default, not as none.
			return o, c, invalid(fmt.Errorf("--idle-timeout %v: want a positive duration (a connection idle that long is closed)", c.IdleTimeout))
		}
		return o, c, nil
	}
}

// shown is a simulator duration as it was given: the nanosecond that
// spells "none" is 0.
func shown(d time.Duration) time.Duration {
	if d <= time.Nanosecond {
		return 0
	}
	return d
}

// cmdServe runs the embedded simulator until SIGINT or SIGTERM.
func cmdServe(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, args, stdout, stderr)
}

// serve runs the simulator until ctx ends.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, get := serveFlags(stderr)
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return invalid(fmt.Errorf("unexpected arguments %v", fs.Args()))
	}
	o, cfg, err := get()
	if err != nil {
		return err
	}
	if err := checkAddr(o.addr); err != nil {
		return err // errAddr: invalid
	}
	var logFile *os.File
	if o.requestLog != "" {
		f, err := os.OpenFile(o.requestLog, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
		if err != nil {
			return invalid(fmt.Errorf("--request-log: %w", err))
		}
		logFile = f
		cfg.RequestLog = f
	}
	err = serveUntil(ctx, o.addr, cfg, stdout)
	if logFile != nil {
		if cerr := logFile.Close(); cerr != nil {
			// The log's failure is said after the server's; the exit code
			// is the server's when that is worse.
			code := max(codeOf(err), ExitNotJudged)
			err = &exitError{code, lines(err, fmt.Errorf("--request-log: %w", cerr))}
		}
	}
	return err
}

func serveUntil(ctx context.Context, addr string, cfg sim.Config, stdout io.Writer) error {
	srv, err := sim.New(cfg)
	if err != nil {
		return invalid(err)
	}
	url, err := srv.Start(ctx, addr)
	if err != nil {
		_ = srv.Close()
		return notJudged(err)
	}
	eff := srv.Config()
	fmt.Fprintf(stdout, "tollgate simulator serving %s at %s (Ctrl-C to stop)\n", eff.Model, url)
	// The per-sequence term is easy to forget: say what a token costs at
	// a few batch sizes, so "2 ms steps" is not mistaken for 2 ms per token.
	base, perSeq := shown(eff.DecodeStep), shown(eff.DecodeStepPerSeq)
	step := func(n int) time.Duration { return base + time.Duration(n-1)*perSeq }
	fmt.Fprintf(stdout, "decode: %v per step + %v per extra running sequence = %v per token at 32 streams, %v at 256\n",
		base, perSeq, step(32), step(256))
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		return notJudged(err)
	}
	return nil
}

// errAddr is what an --addr that is not HOST:PORT wraps.
var errAddr = errors.New("invalid --addr")

// checkAddr refuses an address that no machine could listen on, as an
// invalid invocation (exit 2); a well-formed one that cannot be bound here
// (in use, not permitted, not a local address) is the run's failure (3).
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w %q: %w (want HOST:PORT, e.g. 127.0.0.1:8000)", errAddr, addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%w %q: port %q is not a number from 0 to 65535", errAddr, addr, port)
	}
	if host != "" && !validHost(host) {
		return fmt.Errorf("%w %q: host %q is neither an IP address nor a host name", errAddr, addr, host)
	}
	return nil
}

// validHost accepts an IP address (with a zone) or an RFC 1123 host name
// whose last label is not all digits, so 999.1.1.1 is refused.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	labels := strings.Split(strings.TrimSuffix(h, "."), ".")
	if len(h) > 253 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	return strings.Trim(last, "0123456789") != ""
}
