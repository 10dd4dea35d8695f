package scenarios

import (
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// PhaseCapacity searches the load for the highest value that meets every
// objective of the phase.
const PhaseCapacity = "capacity"

// CapacityKind is the capacity kind's scenario side: its keys and checks.
// The live side is live's capacityKind; its row in phaseKindTable
// registers both (live.Kinds is generated from it).
func CapacityKind() KindSpec {
	return KindSpec{name: PhaseCapacity, keys: capacityKeys, dists: true, check: onErrs(checkCapacity)}
}

// CapacityFields are a capacity phase's own keys (the capacity block);
// Phase has them through KindFields.
type CapacityFields struct {
	// Capacity is the phase's search.
	Capacity Capacity `yaml:"capacity" json:"capacity"`
}

// Capacity is what a capacity phase searches and how: the load it varies
// (by: rate or concurrency), its bounds, the precision it stops at, the time
// it may take, how each probe is run, and the objectives a probe must meet.
type Capacity struct {
	Meta `json:"-"`
	// By is rate (open loop, the default) or concurrency (closed loop).
	By string `yaml:"by" json:"by"`
	// Min and Max bound the search; Start is the first probe (default Min).
	Min   float64 `yaml:"min" json:"min"`
	Max   float64 `yaml:"max" json:"max"`
	Start float64 `yaml:"start" json:"start,omitempty"`
	// Precision is the bracket's relative width at which the search stops
	// (fail ÷ pass ≤ 1 + precision), a fraction (5% is 0.05).
	Precision Percent `yaml:"precision" json:"precision"`
	// Budget bounds the search's wall time; a probe that would not fit is
	// not started and the search ends with the bracket it has.
	Budget Duration `yaml:"budget" json:"budget"`
	Probe  Probe    `yaml:"probe" json:"probe"`
	// Objectives are what a probe must meet, each "metric.stat <= limit"
	// (or >=), error_rate <= f, goodput_pct >= p.
	Objectives Objectives `yaml:"objectives" json:"objectives"`
}

// Probe says how long one probe of a capacity search runs.
type Probe struct {
	Meta `json:"-"`
	// Warmup is sent and discarded before the measured window.
	Warmup Duration `yaml:"warmup" json:"warmup"`
	// Duration is the measured (steady-state) window; an open-loop probe
	// stretches it until MinRequests are sent in it.
	Duration    Duration `yaml:"duration" json:"duration"`
	MinRequests int      `yaml:"min_requests" json:"min_requests"`
	// Repeat is how many times the found value is probed in all; each must pass.
	Repeat int `yaml:"repeat" json:"repeat"`
	// Hold is the sustained window the found value is confirmed with
	// (nil: derived at run time, 2 × the median e2e at the found value ÷
	// precision; 0: no hold).
	Hold *Duration `yaml:"hold" json:"hold,omitempty"`
}

// Percent is a fraction written as a percentage ("5%").
type Percent struct{ Fraction float64 }

func (x *Percent) decodeNode(d *decoder, n *yaml.Node, path string) {
	s, ok := strings.CutSuffix(strings.TrimSpace(n.Value), "%")
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if n.Kind != yaml.ScalarNode || !ok || err != nil {
		d.errorf(n, "%s: expected a percentage such as 5%%, got %s", path, describe(n))
		return
	}
	x.Fraction = f / 100
}

// MarshalJSON writes the percentage as written.
func (x Percent) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(strconv.FormatFloat(x.Fraction*100, 'g', -1, 64) + "%")), nil
}

// Objective is one condition a capacity probe must meet.
type Objective struct {
	Pos Pos `json:"-"`
	// Text is the objective as written, normalised ("ttft_ms.p99 <= 500").
	Text string `json:"text"`
	// Metric is a request metric, error_rate or goodput_pct; Stat is the
	// statistic of a request metric ("" for the other two).
	Metric, Stat string `json:"-"`
	// Op is "<=" or ">=".
	Op    string  `json:"-"`
	Limit float64 `json:"-"`
}

// Objectives are a capacity phase's objectives, in the order written.
type Objectives []Objective

// CapacityMetrics are the per-request metrics a capacity objective may
// read, at any of CapacityStats; queue_ms is the client's send delay.
var CapacityMetrics = []string{"ttft_ms", "tpot_ms", "e2e_ms", "ttfb_ms", "itl_ms", "decode_tokens_per_s", "prefill_tokens_per_s", "queue_ms"}

// CapacityStats are the statistics of a request metric an objective may bound.
var CapacityStats = []string{"mean", "min", "p50", "p90", "p95", "p99", "max"}

var objectiveRE = regexp.MustCompile(`^\s*([a-z_0-9]+)(?:\.([a-z0-9]+))?\s*(<=|>=)\s*([0-9.eE+-]+)\s*$`)

func (x *Objectives) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "%s: expected a list such as [\"ttft_ms.p99 <= 500\", \"error_rate <= 0.01\"], got %s", path, describe(n))
		return
	}
	*x = Objectives{}
	all := append(append([]string{}, CapacityMetrics...), "error_rate", "goodput_pct")
	for i, item := range n.Content {
		at := path + "[" + strconv.Itoa(i) + "]"
		m := objectiveRE.FindStringSubmatch(item.Value)
		if item.Kind != yaml.ScalarNode || m == nil {
			d.errorf(item, "%s: expected \"metric.stat <= limit\" such as \"ttft_ms.p99 <= 500\", got %s", at, describe(item))
			continue
		}
		o := Objective{Pos: d.pos(item), Metric: m[1], Stat: m[2], Op: m[3]}
		f, err := strconv.ParseFloat(m[4], 64)
		switch {
		case !oneOf(o.Metric, all):
			d.errorf(item, "%s: a capacity phase produces no metric %q (one of %s)%s", at, o.Metric, strings.Join(all, ", "), suggest(o.Metric, all))
			continue
		case oneOf(o.Metric, CapacityMetrics) && !oneOf(o.Stat, CapacityStats):
			d.errorf(item, "%s: %s needs a statistic, one of %s, e.g. %s.p99", at, o.Metric, strings.Join(CapacityStats, ", "), o.Metric)
			continue
		case !oneOf(o.Metric, CapacityMetrics) && o.Stat != "":
			d.errorf(item, "%s: %s is one number per probe; write it without .%s", at, o.Metric, o.Stat)
			continue
		case err != nil || f < 0:
			d.errorf(item, "%s: the limit must be a number of at least 0, got %q", at, m[4])
			continue
		}
		o.Limit = f
		name := o.Metric
		if o.Stat != "" {
			name += "." + o.Stat
		}
		o.Text = name + " " + o.Op + " " + strconv.FormatFloat(f, 'g', -1, 64)
		*x = append(*x, o)
	}
}

// Name is the objective's left side ("ttft_ms.p99").
func (o Objective) Name() string {
	if o.Stat == "" {
		return o.Metric
	}
	return o.Metric + "." + o.Stat
}

var capacityKeys = []string{"kind", "description", "capacity", "max_in_flight", "max_dispatch_lag", "arrival", "burstiness", "prompt_tokens", "max_tokens", "prompt", "seed", "slo", "shared_prefix"}

// checkCapacity applies a capacity phase's defaults and checks it.
func checkCapacity(e *errs, p *Phase, path string) {
	c := &p.Capacity
	if !p.Has("capacity") {
		e.add(p.Pos, "%s: a capacity phase needs capacity: {min, max, objectives}, e.g. capacity: {min: 1, max: 64, objectives: [\"ttft_ms.p99 <= 500\"]}", path)
		return
	}
	checkCapacityBounds(e, c, path)
	checkCapacityBudget(e, c, path)
	checkCapacityProbe(e, &c.Probe, path)
	checkFirstProbeFits(e, c, path)
	checkCapacityObjectives(e, p, path)
	checkCapacityTraffic(e, p, path)
}

// checkCapacityBounds defaults capacity.by and checks the search range and
// its starting point; by concurrency, every bound is a whole number.
func checkCapacityBounds(e *errs, c *Capacity, path string) {
	if c.By == "" {
		c.By = "rate"
	}
	if c.By != "rate" && c.By != "concurrency" {
		e.add(c.At("by"), "%s.capacity.by: unknown %q (rate or concurrency)", path, c.By)
	}
	if !c.Has("min") || !c.Has("max") {
		e.add(c.Pos, "%s.capacity: give the bounds of the search, min and max", path)
	}
	if c.Min <= 0 {
		e.add(c.At("min"), "%s.capacity.min: must be positive, got %v", path, c.Min)
	}
	if c.Has("max") && c.Max <= c.Min {
		e.add(c.At("max"), "%s.capacity.max: must be above min (%v), got %v", path, c.Min, c.Max)
	}
	if c.By == "concurrency" {
		for _, k := range []struct {
			key string
			v   float64
		}{{"min", c.Min}, {"max", c.Max}, {"start", c.Start}} {
			if k.v != float64(int(k.v)) {
				e.add(c.At(k.key), "%s.capacity.%s: a concurrency is a whole number, got %v", path, k.key, k.v)
			}
		}
	}
	if c.Start == 0 {
		c.Start = c.Min
	} else if c.Start < c.Min || c.Start > c.Max {
		e.add(c.At("start"), "%s.capacity.start: must lie within min and max, got %v", path, c.Start)
	}
}

// checkCapacityBudget defaults and checks when the search stops: the
// precision it narrows to and the time it may take.
func checkCapacityBudget(e *errs, c *Capacity, path string) {
	if !c.Has("precision") {
		c.Precision.Fraction = 0.05
	} else if f := c.Precision.Fraction; !(f > 0) || f >= 1 {
		e.add(c.At("precision"), "%s.capacity.precision: must be above 0%% and below 100%%, got %v%%", path, f*100)
	}
	if !c.Has("budget") {
		c.Budget.Duration = 5 * 60e9
	} else if c.Budget.Duration <= 0 {
		e.add(c.At("budget"), "%s.capacity.budget: must be positive", path)
	}
}

// checkCapacityProbe defaults and checks how each point of the search is
// measured.
func checkCapacityProbe(e *errs, pr *Probe, path string) {
	if pr.Duration.Duration == 0 {
		pr.Duration.Duration = 5e9
	}
	if !pr.Has("warmup") {
		pr.Warmup.Duration = 1e9
	}
	if !pr.Has("min_requests") {
		pr.MinRequests = 50
	} else if pr.MinRequests < 1 {
		e.add(pr.At("min_requests"), "%s.capacity.probe.min_requests: must be at least 1, got %d", path, pr.MinRequests)
	}
	if !pr.Has("repeat") {
		pr.Repeat = 2
	} else if pr.Repeat < 1 {
		e.add(pr.At("repeat"), "%s.capacity.probe.repeat: must be at least 1, got %d", path, pr.Repeat)
	}
	if h := pr.Hold; h != nil && h.Duration != 0 && h.Duration < pr.Duration.Duration {
		e.add(pr.At("hold"), "%s.capacity.probe.hold: a hold shorter than a probe's window (%s) confirms nothing; give at least %s, or 0s for no hold", path, pr.Duration.Duration, pr.Duration.Duration)
	}
}

// checkFirstProbeFits refuses a search whose first probe could not start:
// the engine starts a probe only when its estimated length (warm-up and
// twice the window, live.probeLength) fits the budget, so such a search
// would run no probe at all and end "within budget" with nothing found.
// By rate the window stretches until min_requests are sent at the
// probe's rate, which is what makes min_requests: 1e9 run nothing.
func checkFirstProbeFits(e *errs, c *Capacity, path string) {
	pr := &c.Probe
	if c.Budget.Duration <= 0 || c.Start <= 0 || pr.MinRequests < 1 {
		return // reported on their own
	}
	window := pr.Duration.Duration.Seconds()
	stretched := false
	if c.By == "rate" {
		if need := float64(pr.MinRequests) / c.Start; need > window {
			window, stretched = need, true
		}
	}
	length := pr.Warmup.Duration.Seconds() + 2*window
	budget := c.Budget.Duration.Seconds()
	if length <= budget {
		return
	}
	if stretched {
		e.add(pr.At("min_requests"), "%s.capacity.probe.min_requests: %d requests at the first probe's rate (%v/s) take a window of %.4gs, and a probe (warm-up + 2 × window = %.4gs) does not fit the budget (%s): the search would run no probe; lower min_requests, raise start, or raise capacity.budget",
			path, pr.MinRequests, c.Start, window, length, c.Budget.Duration)
		return
	}
	at := pr.At("duration")
	if !pr.Has("duration") {
		at = c.At("budget")
	}
	e.add(at, "%s.capacity.probe: a probe (warm-up %s + 2 × duration %s = %.4gs) does not fit the budget (%s): the search would run no probe; shorten the probe or raise capacity.budget",
		path, pr.Warmup.Duration, pr.Duration.Duration, length, c.Budget.Duration)
}

// checkCapacityObjectives checks that there are objectives and that each
// one can be measured and passed in the direction it is written.
func checkCapacityObjectives(e *errs, p *Phase, path string) {
	c := &p.Capacity
	if len(c.Objectives) == 0 {
		e.add(c.At("objectives"), "%s.capacity.objectives: a capacity search needs at least one objective, e.g. [\"ttft_ms.p99 <= 500\"]", path)
	}
	for _, o := range c.Objectives {
		if o.Metric == "goodput_pct" && len(p.SLO.Limits) == 0 {
			e.add(o.Pos, "%s.capacity.objectives: goodput_pct needs per-request limits in slo, e.g. slo: {ttft_ms: 500}", path)
		}
		if o.Metric == "goodput_pct" && o.Op != ">=" || o.Metric == "error_rate" && o.Op != "<=" {
			e.add(o.Pos, "%s.capacity.objectives: write %s with %s", path, o.Metric, map[string]string{"goodput_pct": ">=", "error_rate": "<="}[o.Metric])
		}
		if o.Metric == "queue_ms" && c.By == "concurrency" {
			e.add(o.Pos, "%s.capacity.objectives: a closed loop (by: concurrency) has no queue_ms", path)
		}
		if msg := unmeetable(o); msg != "" {
			e.add(o.Pos, "%s.capacity.objectives: %s cannot be met at any load, the minimum included: %s", path, o.Text, msg)
		}
	}
}

// unmeetable says why an objective can never pass, whatever the server
// ("" when it can): a latency, a token rate or a time below or at 0, a
// share above its whole.
func unmeetable(o Objective) string {
	switch {
	case o.Metric == "goodput_pct" && o.Limit > 100:
		return "goodput_pct is at most 100; give a limit of at most 100"
	case o.Metric == "error_rate" || o.Metric == "goodput_pct" || o.Metric == "queue_ms":
		return ""
	case o.Op == "<=" && o.Limit == 0 && (strings.HasSuffix(o.Metric, "_ms") && o.Metric != "itl_ms"):
		return "every request takes time; give a limit above 0"
	case o.Op == "<=" && o.Limit == 0 && strings.HasSuffix(o.Metric, "_per_s"):
		return "a request that produces it has a rate above 0; bound it from below (>=) or give a limit above 0"
	}
	return ""
}

// checkCapacityTraffic defaults and checks what each probe sends: its
// arrival process and its prompt and output sizes.
func checkCapacityTraffic(e *errs, p *Phase, path string) {
	if p.Arrival == "" {
		p.Arrival = "poisson"
	} else if p.Capacity.By == "concurrency" {
		e.add(p.At("arrival"), "%s.arrival: applies to a search by rate, not by concurrency", path)
	}
	if !oneOf(p.Arrival, arrivals) {
		e.add(p.At("arrival"), "%s.arrival: unknown %q (one of %s)%s", path, p.Arrival, strings.Join(arrivals, ", "), suggest(p.Arrival, arrivals))
	}
	if p.Burstiness == 0 {
		p.Burstiness = 1
	}
	if p.PromptDist == nil && len(p.PromptTokens) == 0 && p.Prompt.Text == "" && p.Prompt.File == "" {
		p.PromptTokens = IntList{512}
	}
	if len(p.PromptTokens) > 1 {
		e.add(p.At("prompt_tokens"), "%s.prompt_tokens: a capacity phase takes one size or a distribution", path)
	}
	if p.MaxTokensDist == nil {
		defMax(p, 128)
	}
	checkDist(e, p.PromptDist, path+".prompt_tokens")
	checkDist(e, p.MaxTokensDist, path+".max_tokens")
}
