package report

// KindCapacity is a capacity search: the highest load that meets every
// objective of the phase.
const KindCapacity = "capacity"

// Capacity search outcomes (Capacity.Stop).
const (
	CapacityConverged = "converged" // the bracket is within the precision
	CapacityAtMax     = "max"       // every probe passed up to max
	CapacityBelowMin  = "below_min" // min already failed
	CapacityBudget    = "budget"    // the time budget ran out first
)

// Probe steps (CapacityProbe.Step).
const (
	StepBracket = "bracket" // growing ×2 (or shrinking ÷2) to a bracket
	StepBisect  = "bisect"  // a geometric midpoint of the bracket
	StepConfirm = "confirm" // a repeat of the found value
	StepHold    = "hold"    // the found value held for the sustained window
)

// IntervalConfidencePct is the confidence of each objective's interval
// in a probe, and so of the capacity's interval.
const IntervalConfidencePct = 95

// Probe verdicts (CapacityProbe.Verdict).
const (
	ProbePass      = "pass"
	ProbeFail      = "fail"
	ProbeSaturated = "saturated"
)

// Capacity is what a capacity phase found: the highest value that passed
// (max_rate_per_s or max_concurrency), the bracket around it, what bound it,
// and every probe with its evidence.
type Capacity struct {
	// By is rate (open loop) or concurrency (closed loop).
	By string `json:"by"`
	// MaxRatePerS (by rate) or MaxConcurrency (by concurrency) is the
	// highest value that passed every probe of it; absent when none did.
	MaxRatePerS    *float64 `json:"max_rate_per_s,omitempty"`
	MaxConcurrency *int     `json:"max_concurrency,omitempty"`
	// Interval is where the capacity lies, from the probes: low is the
	// highest probed value at or below the found one that passed beyond
	// its noise, high the lowest above it that failed beyond its noise.
	Interval Interval `json:"interval"`
	// Confirmed: the found value passed a hold of HoldS seconds.
	Confirmed bool `json:"confirmed"`
	// HoldS is the sustained window the found value was (or would have
	// been) held for; HoldWantedS what the rule asked for before the
	// budget shortened it (2 × median e2e ÷ precision, or probe.hold).
	// Absent when no hold was planned (probe.hold: 0s).
	HoldS       *float64 `json:"hold_s,omitempty"`
	HoldWantedS *float64 `json:"hold_wanted_s,omitempty"`
	Bracket     Bracket  `json:"bracket"`
	// BoundBy is the objective that failed at bracket.fail, the one
	// furthest past its limit when several did ("saturated" when only
	// saturation did, "max" when nothing failed up to max). BoundValue is
	// its statistic there (absent when it names no objective); AlsoFailed
	// the other objectives that failed there, in the order written: always
	// a list, empty when none did, so a gate on it never meets a missing key.
	// Both absent in reports before them.
	BoundBy      string           `json:"bound_by"`
	BoundValue   *float64         `json:"bound_value,omitempty"`
	AlsoFailed   []string         `json:"also_failed"`
	Stop         string           `json:"stop"`
	PrecisionPct float64          `json:"precision_pct"`
	Min          float64          `json:"min"`
	Max          float64          `json:"max"`
	Objectives   []string         `json:"objectives"`
	WallS        float64          `json:"wall_s"`
	ProbeCount   int              `json:"probe_count"`
	Probes       []*CapacityProbe `json:"probes"`
}

// Interval bounds the capacity from the probes' evidence (see
// Capacity.Interval); a side is absent when no probe gives it.
type Interval struct {
	Low           *float64 `json:"low,omitempty"`
	High          *float64 `json:"high,omitempty"`
	ConfidencePct float64  `json:"confidence_pct"`
}

// Bracket is the highest passing and the lowest failing value probed.
type Bracket struct {
	Pass *float64 `json:"pass,omitempty"`
	Fail *float64 `json:"fail,omitempty"`
}

// CapacityProbe is one probe of a capacity search: a fixed load held for a
// warm-up (discarded) and a measured window.
type CapacityProbe struct {
	Value float64 `json:"value"`
	// Step is bracket (growing or shrinking to a bracket), bisect, confirm
	// or hold.
	Step      string  `json:"step"`
	DurationS float64 `json:"duration_s"`
	// Requests sent in the window, of which Succeeded answered; Unfinished
	// were still unanswered when the probe ended and were cancelled by the
	// search (not errors: error_rate leaves them out).
	Requests   int `json:"requests"`
	Succeeded  int `json:"succeeded"`
	Unfinished int `json:"unfinished"`
	// AchievedRatePerS is sends per second in the window; ServedPerS is
	// completions per second in it.
	AchievedRatePerS *float64         `json:"achieved_rate_per_s,omitempty"`
	ServedPerS       *float64         `json:"served_per_s,omitempty"`
	Objectives       []ObjectiveValue `json:"objectives"`
	Verdict          string           `json:"verdict"`
	// Clear: the verdict stands beyond the noise, every objective's
	// interval on the side of its verdict (a pass: all within their
	// limits; a fail: one wholly past its limit, or saturated).
	Clear bool `json:"clear"`
	// Reasons say why a probe did not pass; Saturation lists the
	// saturation signals seen (both empty for a clean pass).
	Reasons    []string `json:"reasons"`
	Saturation []string `json:"saturation"`
	// CutShort: saturation ended the probe before its window did.
	CutShort bool `json:"cut_short"`
	// DispatchLagP99MS is how late the client woke for the probe's
	// scheduled sends, p99 (open loop only). ClientLate: past the bound
	// the phase accepts, so the probe did not offer its rate; it fails for
	// the client, never passes, and a search bound by it is invalid.
	DispatchLagP99MS *float64 `json:"dispatch_lag_p99_ms,omitempty"`
	ClientLate       bool     `json:"client_late"`
}

// ObjectiveValue is one objective's statistic in one probe.
type ObjectiveValue struct {
	Objective string   `json:"objective"`
	Value     *float64 `json:"value,omitempty"`
	// Low and High are the statistic's 95 % interval over the window's
	// requests (order statistics for a percentile, the normal interval
	// for a mean, Wilson's for a rate; min and max are their own).
	Low  *float64 `json:"low,omitempty"`
	High *float64 `json:"high,omitempty"`
	Pass bool     `json:"pass"`
}
