// Package embedded is the only adapter between a scenario's sim block and
// tollgate's simulator (engine/sim): the mapping, validation, start and stop,
// and the effective configuration the report shows.
package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/engine/sim"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Config maps a scenario's sim block onto the simulator's config.
func Config(s *scenarios.SimConfig) sim.Config {
	if s == nil {
		return sim.Config{}
	}
	// The simulator reads 0 as "default"; a 0 written in the scenario means
	// none, which the simulator spells as a nanosecond.
	dur := func(key string, d scenarios.Duration) time.Duration {
		if d.Duration == 0 && s.Has(key) {
			return time.Nanosecond
		}
		return d.Duration
	}
	faults := make([]sim.Fault, 0, len(s.Faults))
	for _, f := range s.Faults {
		faults = append(faults, sim.Fault{Kind: f.Kind, Probability: f.Probability, EveryNth: f.EveryNth,
			RetryAfter: f.RetryAfter.Duration, Stall: f.Stall.Duration, TrickleInterval: f.TrickleInterval.Duration, AfterTokens: f.AfterTokens})
	}
	var tools *sim.ToolCalls
	if t := s.ToolCalls; t != nil {
		d := sim.DefaultToolCalls()
		tools = &d
		if t.Probability != nil {
			tools.Probability = *t.Probability
		}
		if t.ArgumentTokens != 0 {
			tools.ArgumentTokens = t.ArgumentTokens
		}
		if t.PerReply != 0 {
			tools.PerReply = t.PerReply
		}
	}
	return sim.Config{
		Model: s.Model, TTFTBase: dur("ttft_base", s.TTFTBase), PrefillTokensPerS: s.PrefillTokensPerS,
		DecodeStep: dur("decode_step", s.DecodeStep), DecodeStepPerSeq: dur("decode_step_per_seq", s.DecodeStepPerSeq),
		MaxRunningSeqs: s.MaxRunningSeqs, CacheCapacityTokens: s.CacheCapacityTokens, BlockTokens: s.BlockTokens,
		DisablePrefixCache: s.DisablePrefixCache, MaxModelLen: s.MaxModelLen, DefaultMaxTokens: s.DefaultMaxTokens, Seed: s.Seed,
		Faults: faults, ToolCalls: tools,
	}
}

// Validate checks a sim block the way the simulator will (faults included),
// so a bad one is an invalid scenario whatever the flags.
func Validate(s *scenarios.SimConfig) error {
	srv, err := sim.New(Config(s))
	if err != nil {
		return err
	}
	return srv.Close()
}

// Start runs the simulator on 127.0.0.1 with a random port. It outlives
// ctx's cancellation (an interrupt) until stop is called, so requests in
// flight get their grace period.
func Start(ctx context.Context, s *scenarios.SimConfig) (baseURL string, stop func(), err error) {
	srv, err := sim.New(Config(s))
	if err != nil {
		return "", nil, fmt.Errorf("embedded simulator: %w", err)
	}
	baseURL, err = srv.Start(context.WithoutCancel(ctx), "127.0.0.1:0")
	if err != nil {
		_ = srv.Close()
		return "", nil, fmt.Errorf("embedded simulator: %w", err)
	}
	return baseURL, func() { _ = srv.Close() }, nil
}

// Effective is the simulator configuration a run will use, defaults filled
// in, for the report.
func Effective(s *scenarios.SimConfig) (map[string]any, error) {
	srv, err := sim.New(Config(s))
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	c := srv.Config()
	out := map[string]any{
		"model": c.Model, "max_model_len": c.MaxModelLen, "ttft_base": c.TTFTBase.String(),
		"prefill_tokens_per_s": c.PrefillTokensPerS, "decode_step": c.DecodeStep.String(),
		"decode_step_per_seq": c.DecodeStepPerSeq.String(), "max_running_seqs": c.MaxRunningSeqs,
		"cache_capacity_tokens": c.CacheCapacityTokens, "block_tokens": c.BlockTokens,
		"disable_prefix_cache": c.DisablePrefixCache, "default_max_tokens": c.DefaultMaxTokens, "seed": c.Seed,
	}
	if s != nil && len(s.Faults) > 0 {
		out["faults"] = s.Faults
	}
	if t := c.ToolCalls; t != nil {
		out["tool_calls"] = map[string]any{"probability": t.Probability, "argument_tokens": t.ArgumentTokens, "per_reply": t.PerReply}
	}
	return out, nil
}
