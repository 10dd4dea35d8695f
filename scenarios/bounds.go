package scenarios

// MaxPhaseRequests bounds the requests one phase may plan (repeat × the
// requests of one repetition, a count of requests, a number of sessions).
// A run of a million requests is legitimate; a billion could never finish
// (at a thousand requests a second it is eleven days), and a number far
// past it is a typo or an attack whose cost should not reach the engine.
const MaxPhaseRequests = 1_000_000_000

// checkRequestBounds refuses a phase whose counts plan more than
// MaxPhaseRequests requests, naming the key that makes the number. It runs
// after the kind's defaults, so an unset repeat is 1.
func checkRequestBounds(e *errs, p *Phase, path string) {
	over := func(key string, n, per int, what string) {
		if n <= 0 || per <= 0 || n <= MaxPhaseRequests/per {
			return
		}
		msg := "%s.%s: %d %s is over the bound of %d requests a phase may plan"
		args := []any{path, key, n, what, MaxPhaseRequests}
		if per > 1 {
			msg = "%s.%s: %d %s × %d requests each is over the bound of %d requests a phase may plan"
			args = []any{path, key, n, what, per, MaxPhaseRequests}
		}
		e.add(p.At(key), msg+" (at 1,000 requests a second that is over 11 days); lower it, or bound a long run by duration", args...)
	}
	switch p.Kind {
	case PhasePrefill, PhaseDecode, PhasePrefixCache, PhaseRequests:
		per := 1
		switch p.Kind {
		case PhasePrefill:
			per = max(len(p.PromptTokens), 1)
		case PhasePrefixCache:
			per = 3 // fresh, identical, small_suffix
		case PhaseRequests:
			per = max(len(p.Requests.List), p.Requests.Count, 1)
		}
		over("repeat", p.Repeat, per, "repetitions")
	}
	if p.Requests.List == nil {
		over("requests", p.Requests.Count, 1, "requests")
	}
	if p.Kind == PhaseSessions || p.Kind == PhaseAgent {
		turns := 1
		if p.Kind == PhaseSessions {
			turns = max(p.Conversation.Turns, 1)
		}
		over("sessions", p.Conversation.Sessions, turns, "sessions")
	}
}
