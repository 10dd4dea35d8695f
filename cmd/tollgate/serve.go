package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/engine/sim"
)

func serveFlags(stderr io.Writer) (*pflag.FlagSet, func() (string, sim.Config)) {
	d := sim.DefaultConfig()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8000", "listen on `HOST:PORT` (port 0 picks a free one)")
	c := sim.Config{}
	fs.StringVar(&c.Model, "model", d.Model, "the model id served")
	fs.DurationVar(&c.TTFTBase, "ttft-base", d.TTFTBase, "fixed time to first token")
	fs.Float64Var(&c.PrefillTokensPerS, "prefill-tokens-per-s", d.PrefillTokensPerS, "prefill throughput for uncached prompt tokens")
	fs.DurationVar(&c.DecodeStep, "decode-step", d.DecodeStep, "time per decode step with one running sequence")
	fs.DurationVar(&c.DecodeStepPerSeq, "decode-step-per-seq", d.DecodeStepPerSeq, "added to each decode step per extra running sequence")
	fs.IntVar(&c.MaxRunningSeqs, "max-running-seqs", d.MaxRunningSeqs, "running sequences before requests queue")
	fs.IntVar(&c.CacheCapacityTokens, "cache-capacity-tokens", d.CacheCapacityTokens, "prefix cache capacity (LRU)")
	fs.IntVar(&c.BlockTokens, "block-tokens", d.BlockTokens, "prefix cache block size")
	fs.BoolVar(&c.DisablePrefixCache, "no-prefix-cache", false, "turn the prefix cache off")
	fs.Int64Var(&c.Seed, "seed", 0, "seed of the deterministic output text")
	apiKeyEnv := fs.String("api-key-env", "", "require the API key held in this environment `VARIABLE`")
	return fs, func() (string, sim.Config) {
		if *apiKeyEnv != "" {
			c.APIKey = os.Getenv(*apiKeyEnv)
		}
		return *addr, c
	}
}

// cmdServe runs the embedded simulator until SIGINT or SIGTERM.
func cmdServe(args []string, stdout, stderr io.Writer) int {
	fs, get := serveFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitPass
		}
		fmt.Fprintf(stderr, "tollgate serve: %v\n", err)
		return ExitInvalid
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tollgate serve: unexpected arguments %v\n", fs.Args())
		return ExitInvalid
	}
	addr, cfg := get()
	srv, err := sim.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate serve: %v\n", err)
		return ExitInvalid
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	url, err := srv.Start(ctx, addr)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate serve: %v\n", err)
		return ExitNotJudged
	}
	eff := srv.Config()
	fmt.Fprintf(stdout, "tollgate simulator serving %s at %s (Ctrl-C to stop)\n", eff.Model, url)
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		fmt.Fprintf(stderr, "tollgate serve: %v\n", err)
		return ExitNotJudged
	}
	return ExitPass
}
