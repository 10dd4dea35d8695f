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
	Bracket        Bracket  `json:"bracket"`
	// BoundBy is the objective that failed at bracket.fail ("saturated"
	// when only saturation did, "max" when nothing failed up to max).
	BoundBy      string           `json:"bound_by"`
	Stop         string           `json:"stop"`
	PrecisionPct float64          `json:"precision_pct"`
	Min          float64          `json:"min"`
	Max          float64          `json:"max"`
	Objectives   []string         `json:"objectives"`
	WallS        float64          `json:"wall_s"`
	ProbeCount   int              `json:"probe_count"`
	Probes       []*CapacityProbe `json:"probes"`
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
	// Step is bracket (growing or shrinking to a bracket), bisect or confirm.
	Step      string  `json:"step"`
	DurationS float64 `json:"duration_s"`
	// Requests sent in the window, of which Succeeded answered; Unfinished
	// were still unanswered when the probe ended and were cancelled.
	Requests   int `json:"requests"`
	Succeeded  int `json:"succeeded"`
	Unfinished int `json:"unfinished"`
	// AchievedRatePerS is sends per second in the window; ServedPerS is
	// completions per second in it.
	AchievedRatePerS *float64         `json:"achieved_rate_per_s,omitempty"`
	ServedPerS       *float64         `json:"served_per_s,omitempty"`
	Objectives       []ObjectiveValue `json:"objectives"`
	Verdict          string           `json:"verdict"`
	// Reasons say why a probe did not pass; Saturation lists the
	// saturation signals seen (both empty for a clean pass).
	Reasons    []string `json:"reasons"`
	Saturation []string `json:"saturation"`
	// CutShort: saturation ended the probe before its window did.
	CutShort bool `json:"cut_short"`
}

// ObjectiveValue is one objective's statistic in one probe.
type ObjectiveValue struct {
	Objective string   `json:"objective"`
	Value     *float64 `json:"value,omitempty"`
	Pass      bool     `json:"pass"`
}
