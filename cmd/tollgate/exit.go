package main

import "github.com/tollgate-dev/tollgate/gates"

// Exit codes, as DESIGN.md defines them. CI acts on these; never renumber.
// The verdict's codes are the gates package's (gates.Verdict decides them);
// only an invalid invocation is the CLI's own.
const (
	ExitPass        = gates.ExitPass        // ran; every gate passed
	ExitGateFailed  = gates.ExitGateFailed  // ran; at least one gate failed
	ExitInvalid     = 2                     // invalid invocation or scenario; nothing was sent
	ExitNotJudged   = gates.ExitNotJudged   // the run could not complete or be judged
	ExitInterrupted = gates.ExitInterrupted // interrupted; a partial report was written
)
