package scenarios

import "strings"

// The load phase kind: open- and closed-loop load, one run or a sweep.
// Its keys and checks; its row is in phaseKindTable.

var loadKeys = []string{"kind", "description", "concurrency", "rate", "arrival", "burstiness", "requests", "duration", "ramp_up",
	"sweep", "max_in_flight", "max_dispatch_lag", "prompt_tokens", "max_tokens", "prompt", "seed", "slo", "shared_prefix", "max_error_rate", "stop_when_saturated"}

// checkLoad applies the defaults of a load phase and checks its shape.
func checkLoad(e *errs, p *Phase, path string) {
	checkLoadMode(e, p, path)
	checkLoadArrival(e, p, path)
	checkLoadBounds(e, p, path)
	checkLoadSizes(e, p, path)
	if p.Has("shared_prefix") {
		checkSharedPrefix(e, p, path)
	}
}

// checkLoadMode checks that exactly one of concurrency, rate and sweep
// drives the phase, and each one's values.
func checkLoadMode(e *errs, p *Phase, path string) {
	modes := 0
	if p.Has("concurrency") {
		modes++
		if p.Concurrency < 1 {
			e.add(p.At("concurrency"), "%s.concurrency: must be at least 1, got %d", path, p.Concurrency)
		}
	}
	if p.Has("rate") {
		modes++
		if !(p.Rate > 0) {
			e.add(p.At("rate"), "%s.rate: must be a positive number of requests per second, got %v", path, p.Rate)
		}
	}
	if p.Has("sweep") {
		modes++
		checkSweep(e, p, path)
	}
	if modes != 1 {
		e.add(p.Pos, "%s: a load phase needs exactly one of concurrency (closed loop), rate (open loop) or sweep", path)
	}
}

// checkSweep checks a sweep's points: of one kind, at least one, each
// positive.
func checkSweep(e *errs, p *Phase, path string) {
	sw := &p.Sweep
	switch {
	case len(sw.Concurrency) > 0 && len(sw.Rate) > 0:
		e.add(p.At("sweep"), "%s.sweep: sweep concurrency or rate, not both", path)
	case len(sw.Concurrency) == 0 && len(sw.Rate) == 0:
		e.add(p.At("sweep"), "%s.sweep: a sweep needs points, e.g. sweep: {concurrency: [1, 8, 32]}", path)
	}
	for i, c := range sw.Concurrency {
		if c < 1 {
			e.add(sw.ItemAt("concurrency", i), "%s.sweep.concurrency[%d]: must be at least 1, got %d", path, i, c)
		}
	}
	for i, r := range sw.Rate {
		if !(r > 0) {
			e.add(sw.ItemAt("rate", i), "%s.sweep.rate[%d]: must be positive, got %v", path, i, r)
		}
	}
}

// checkLoadArrival defaults and checks the arrival process, which only
// open-loop load has.
func checkLoadArrival(e *errs, p *Phase, path string) {
	openLoop := p.Has("rate") || len(p.Sweep.Rate) > 0
	if p.Arrival == "" {
		p.Arrival = "poisson"
	} else if !openLoop {
		e.add(p.At("arrival"), "%s.arrival: applies to open-loop load (rate), not to concurrency", path)
	}
	if !oneOf(p.Arrival, arrivals) {
		e.add(p.At("arrival"), "%s.arrival: unknown %q (one of %s)%s", path, p.Arrival, strings.Join(arrivals, ", "), suggest(p.Arrival, arrivals))
	}
	if p.Has("burstiness") && p.Arrival != "gamma" {
		e.add(p.At("burstiness"), "%s.burstiness: applies to arrival: gamma", path)
	}
	if p.Burstiness == 0 {
		p.Burstiness = 1
	}
	if p.Burstiness < 0 {
		e.add(p.At("burstiness"), "%s.burstiness: must be positive, got %v", path, p.Burstiness)
	}
}

// checkLoadBounds checks what ends the phase (a request count and/or a
// duration) and the limits on how it runs.
func checkLoadBounds(e *errs, p *Phase, path string) {
	if p.Requests.List != nil {
		e.add(p.At("requests"), "%s.requests: a load phase takes a count, e.g. requests: 1000", path)
	}
	if p.Has("requests") && p.Requests.Count < 1 {
		e.add(p.At("requests"), "%s.requests: must be at least 1, got %d", path, p.Requests.Count)
	}
	if !p.Has("requests") && !p.Has("duration") {
		e.add(p.Pos, "%s: a load phase needs a bound: requests: N and/or duration: D (per sweep point)", path)
	}
	if p.Has("duration") && p.Duration.Duration <= 0 {
		e.add(p.At("duration"), "%s.duration: must be positive", path)
	}
	if p.StopWhenSaturated && len(p.Sweep.Rate) == 0 && len(p.Sweep.Concurrency) == 0 {
		e.add(p.At("stop_when_saturated"), "%s.stop_when_saturated: applies to a sweep", path)
	}
	if p.MaxInFlight < 0 {
		e.add(p.At("max_in_flight"), "%s.max_in_flight: must be positive, got %d", path, p.MaxInFlight)
	}
}

// checkLoadSizes defaults and checks the prompt and output sizes.
func checkLoadSizes(e *errs, p *Phase, path string) {
	if p.PromptDist == nil && len(p.PromptTokens) == 0 && p.Prompt.Text == "" && p.Prompt.File == "" && p.Prompt.Dataset == "" {
		p.PromptTokens = IntList{512}
	}
	if len(p.PromptTokens) > 1 {
		e.add(p.At("prompt_tokens"), "%s.prompt_tokens: a load phase takes one size or a distribution", path)
	}
	if p.MaxTokensDist == nil {
		defMax(p, 128)
	}
	checkDist(e, p.PromptDist, path+".prompt_tokens")
	checkDist(e, p.MaxTokensDist, path+".max_tokens")
}

// checkSharedPrefix checks shared_prefix, whose prefix must leave room in
// the smallest prompt.
func checkSharedPrefix(e *errs, p *Phase, path string) {
	sp := &p.Shared
	if sp.Groups < 1 {
		e.add(sp.At("groups"), "%s.shared_prefix.groups: must be at least 1, got %d", path, sp.Groups)
	}
	if sp.PrefixTokens < 1 {
		e.add(sp.At("prefix_tokens"), "%s.shared_prefix.prefix_tokens: must be at least 1, got %d", path, sp.PrefixTokens)
	}
	if smallest := minPrompt(p); smallest > 0 && sp.PrefixTokens >= smallest {
		e.add(sp.At("prefix_tokens"), "%s.shared_prefix.prefix_tokens: %d leaves no room in prompts of %d tokens", path, sp.PrefixTokens, smallest)
	}
}

func minPrompt(p *Phase) int {
	if p.PromptDist != nil {
		return p.PromptDist.Min
	}
	if len(p.PromptTokens) > 0 {
		return p.PromptTokens[0]
	}
	return 0
}
