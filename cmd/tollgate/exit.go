package main

// Exit codes, as DESIGN.md defines them. CI acts on these; never renumber.
const (
	ExitPass        = 0   // ran; every gate passed
	ExitGateFailed  = 1   // ran; at least one gate failed
	ExitInvalid     = 2   // invalid invocation or scenario; nothing was sent
	ExitNotJudged   = 3   // the run could not complete or be judged
	ExitInterrupted = 130 // interrupted; a partial report was written
)
