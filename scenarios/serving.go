package scenarios

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/workload"
)

// The serving phase kinds: warmup, prefill, decode, prefix_cache and
// requests. Each one's keys and checks; their rows are in phaseKindTable.

var (
	warmupKeys      = []string{"kind", "description", "requests", "prompt_tokens", "max_tokens", "prompt", "seed", "max_error_rate"}
	prefillKeys     = []string{"kind", "description", "prompt_tokens", "max_tokens", "repeat", "prompt", "seed", "max_error_rate"}
	decodeKeys      = []string{"kind", "description", "prompt_tokens", "max_tokens", "repeat", "prompt", "seed", "max_error_rate"}
	prefixCacheKeys = []string{"kind", "description", "prompt_tokens", "suffix_tokens", "max_tokens", "repeat", "prompt", "seed", "max_error_rate"}
	requestsKeys    = []string{"kind", "description", "requests", "max_tokens", "repeat", "max_error_rate", "prompt", "seed"}

	// On a seam target, prefill and decode are the seam's transfers.
	prefillSeamKeys = []string{"kind", "description"}
	decodeSeamKeys  = []string{"kind", "description", "tokens"}
)

// checkPrefill: a prefill phase sends a list of prompt sizes.
func checkPrefill(e *errs, p *Phase, path string) {
	// One size or a list of sizes (IntList), as the schema says. Written
	// but empty (or not a size), the message is at the key; a decode error
	// already there is the one kept.
	switch {
	case len(p.PromptTokens) > 0:
	case p.Has("prompt_tokens"):
		e.add(p.At("prompt_tokens"), "%s.prompt_tokens: give one size (256) or a non-empty list of sizes ([512, 1024, 2048, 4096])", path)
	default:
		e.add(p.Pos, "%s: a prefill phase needs prompt_tokens: one size (256) or a list of sizes, e.g. [512, 1024, 2048, 4096]", path)
	}
	defMax(p, 1)
}

func checkDecode(e *errs, p *Phase, path string) {
	singlePromptSize(e, p, path, 512)
	defMax(p, 256)
}

func checkPrefixCache(e *errs, p *Phase, path string) {
	singlePromptSize(e, p, path, 4096)
	defMax(p, 1)
	if p.SuffixTokens == 0 {
		p.SuffixTokens = 32
	}
	if p.SuffixTokens < 0 {
		e.add(p.At("suffix_tokens"), "%s.suffix_tokens: must be positive, got %d", path, p.SuffixTokens)
	}
	// small_suffix is a cached prompt with a few new tokens after it: a
	// suffix longer than the prompt measures a mostly new prompt.
	if len(p.PromptTokens) == 1 && p.SuffixTokens > p.PromptTokens[0] {
		key, what := "suffix_tokens", fmt.Sprintf("suffix_tokens %d", p.SuffixTokens)
		if !p.Has("suffix_tokens") {
			key, what = "prompt_tokens", fmt.Sprintf("the default suffix_tokens %d", p.SuffixTokens)
		}
		e.add(p.At(key), "%s.%s: %s is longer than the prompt it follows (prompt_tokens %d); small_suffix measures the reuse of a cached prompt, so its suffix is a few tokens: give suffix_tokens below prompt_tokens",
			path, key, what, p.PromptTokens[0])
	}
}

// singlePromptSize defaults prompt_tokens to def for a phase kind that
// sends one prompt size, and refuses a list.
func singlePromptSize(e *errs, p *Phase, path string, def int) {
	switch len(p.PromptTokens) {
	case 0:
		p.PromptTokens = IntList{def}
	case 1:
	default:
		e.add(p.At("prompt_tokens"), "%s.prompt_tokens: a %s phase takes one size, got %d (a prefill phase takes a list)", path, p.Kind, len(p.PromptTokens))
	}
}

// checkWarmup defaults and checks a warmup phase, which takes a count of
// requests.
func checkWarmup(e *errs, p *Phase, path string) {
	if p.Requests.List != nil {
		e.add(p.At("requests"), "%s.requests: a warmup phase takes a count, e.g. requests: 2", path)
	}
	if !p.Has("requests") {
		p.Requests.Count = 2
	}
	if p.Requests.Count < 1 && p.Has("requests") {
		e.add(p.At("requests"), "%s.requests: must be at least 1, got %d", path, p.Requests.Count)
	}
	singlePromptSize(e, p, path, 64)
	defMax(p, 16)
}

// checkRequestsPhase checks a requests phase's list; with prompt.dataset
// the list comes from the file (checkDataset).
func checkRequestsPhase(e *errs, p *Phase, path string) {
	if p.Prompt.Dataset != "" {
		defMax(p, 16)
		return
	}
	if len(p.Requests.List) == 0 {
		e.add(p.At("requests"), "%s: a requests phase needs a list of requests, e.g. requests: [{messages: [{role: user, content: hi}]}]", path)
	}
	defMax(p, 16)
	for i, r := range p.Requests.List {
		if (len(r.Messages) == 0) == (r.Prompt == "") {
			e.add(r.Pos, "%s.requests[%d]: give either messages or prompt", path, i)
		}
		for j, m := range r.Messages {
			if err := workload.CheckRole(m.Role); err != nil {
				e.add(m.At("role"), "%s.requests[%d].messages[%d].role: %v", path, i, j, err)
			}
		}
	}
}
