// Package compare compares two tollgate reports of the same scenario, metric
// by metric, says which changes are beyond run-to-run noise, and finds the
// regressions a CI job should fail on. It is the one delta and noise engine:
// the text table, tollgate compare --markdown and the HTML page's old-vs-new
// table all render its Result.
//
// Like is compared with like: a metric of a prompt size, variant or load
// point is compared with the same slice of the other report, and a phase's
// own distribution is left out when it pools several slices (a different
// mix of prompt sizes moves a pooled p50 whatever each size did).
//
// A --fail-on threshold is a one-sided bootstrap test per selected
// statistic of "the change is within the limit"; the tests of one
// comparison are corrected together by Holm–Bonferroni, so an unchanged
// build fails any of them with probability at most Options.Alpha (1%) however
// many slices they select. Where noise cannot be estimated (fewer than
// DefaultMinSamples samples per side, or none kept) the verdict is "cannot
// tell", which fails only with Options.FailOnUnknown.
package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/suggest"
	"github.com/tollgate-dev/tollgate/report"
)

// Defaults of Options.
const (
	DefaultResamples  = 2000
	DefaultConfidence = 0.95
	DefaultSeed       = 2026
	// DefaultMinSamples is the fewest samples per side for which the
	// bootstrap may call any change beyond noise; a statistic may need more
	// (minSamplesFor). Below it the percentile bootstrap's intervals are far
	// too narrow: with identical lognormal (σ = 0.3) distributions on both
	// sides, the 95% interval of the p50 difference excluded 0 in 34% of
	// trials at n = 2, 12% at n = 3, 7% at n = 4, and 2–4% from n = 5 to 50.
	// TestBootstrapFalsePositives holds those rates.
	DefaultMinSamples = 5
	// DefaultAlpha is the family-wise error rate of a comparison's
	// --fail-on tests: an unchanged build fails one of them at most once in
	// a hundred comparisons while the samples of a run are independent. A
	// CI gate pays for every false failure, and within-run samples cannot
	// see drift between runs (a burst of load on a shared runner during one
	// run): at 0.05, one of twenty back-to-back pairs of the unchanged
	// simulator on a loaded 2-core machine failed so (bench/compare-noise).
	DefaultAlpha = 0.01
)

// ErrNotReport is report.ErrNotReport, so a caller of Compare need not
// import report to test for it.
var ErrNotReport = report.ErrNotReport

// ErrIncomparable marks reports that differ in scenario, model or host.
var ErrIncomparable = errors.New("reports are not comparable")

// Options of Compare.
type Options struct {
	// FailOn are the thresholds whose breach is a regression.
	FailOn []Threshold
	// AllowAny compares reports of different scenarios, models or hosts
	// (--baseline-any). Different schema versions are never compared.
	AllowAny bool
	// FailOnUnknown makes a threshold breach whose noise cannot be told
	// (too few samples, or none) a regression (--fail-on-unknown). Without
	// it such a breach is listed as "cannot tell" and never failed on.
	FailOnUnknown bool
	// Alpha is the family-wise error rate of the --fail-on tests: the
	// chance that an unchanged build fails at least one of them, however
	// many metrics and slices the thresholds select (Holm–Bonferroni over
	// every tested statistic). Zero takes DefaultAlpha.
	Alpha float64
	// Resamples, Confidence, MinSamples and Seed tune the bootstrap; zero
	// values take the defaults above.
	Resamples  int
	Confidence float64
	MinSamples int
	Seed       uint64
}

// Noise methods.
const (
	// NoiseBootstrap: both reports kept samples; Intervals hold the bootstrap
	// confidence intervals of new − old.
	NoiseBootstrap = "bootstrap"
	// NoiseNone: seam runs are computed in virtual time and are exactly
	// reproducible, so any difference is real.
	NoiseNone = "deterministic"
	// NoiseUnknown: no samples (or too few); a change is never called
	// beyond noise: "cannot tell", failed on only with FailOnUnknown.
	NoiseUnknown = "unknown"
)

// Noise is what is known about a metric's run-to-run noise.
type Noise struct {
	Method    string
	Note      string              // e.g. "no samples: noise unknown"
	Intervals map[string]Interval // by statistic, with NoiseBootstrap
	OldN      int
	NewN      int
	Floor     int // Options.MinSamples in effect
	// AcrossRuns: the samples are whole runs (run --repeat-runs on both
	// sides), one value of each statistic per run, and the statistics
	// compared are their medians of runs.
	AcrossRuns bool
}

// Need is the fewest samples per side that would tell a change of stat from
// noise: the reports' samples are the only noise estimate there is. 0 when
// noise is known (or no number of samples would help: a side lacks stat).
func (n Noise) Need(stat string) int {
	switch n.Method {
	case NoiseNone:
		return 0
	case NoiseBootstrap:
		if _, ok := n.Intervals[stat]; ok {
			return 0
		}
	}
	return minSamplesFor(stat, max(n.Floor, DefaultMinSamples))
}

// Verdict of a change against noise.
type Verdict int

const (
	// Unknown: no way to tell change from noise.
	Unknown Verdict = iota
	// Within: the change is within noise (or there is none).
	Within
	// Beyond: the change is beyond noise.
	Beyond
)

// Metric is one metric both reports have.
type Metric struct {
	Path      string   // gate syntax: runs["direct/cached"].phases.decode.seam_latency_ms
	Segments  []string // runs, direct/cached, phases, decode, seam_latency_ms
	Name      string   // seam_latency_ms
	Direction Direction
	Scalar    bool               // one value, under the statistic "value"
	Old, New  map[string]float64 // statistic → value; a statistic over zero samples is absent
	Noise     Noise

	oldSamples, newSamples []float64 // with NoiseBootstrap, for the --fail-on tests
	// With Noise.AcrossRuns: each statistic's value in every repetition.
	oldReps, newReps map[string][]float64
}

// Change is the percent change of a statistic, (new − old) ÷ |old| × 100;
// ±Inf for a change from 0, and ok false when either side lacks it.
func (m *Metric) Change(stat string) (pct float64, ok bool) {
	o, ook := m.Old[stat]
	n, nok := m.New[stat]
	if !ook || !nok {
		return 0, false
	}
	switch {
	case o == n:
		return 0, true
	case o == 0:
		return math.Copysign(math.Inf(1), n), true
	}
	return (n - o) / math.Abs(o) * 100, true
}

// Verdict says whether the change of a statistic is beyond noise.
func (m *Metric) Verdict(stat string) Verdict {
	o, ook := m.Old[stat]
	n, nok := m.New[stat]
	if !ook || !nok {
		return Unknown
	}
	if o == n {
		return Within // no change at all, whatever the noise
	}
	switch m.Noise.Method {
	case NoiseNone:
		return Beyond
	case NoiseBootstrap:
		iv, ok := m.Noise.Intervals[stat]
		if !ok {
			return Unknown
		}
		if iv.Excludes0() {
			return Beyond
		}
		return Within
	}
	return Unknown
}

// Worse reports whether a statistic moved the way the metric's direction
// calls worse.
func (m *Metric) Worse(stat string) bool {
	pct, ok := m.Change(stat)
	if !ok {
		return false
	}
	switch m.Direction {
	case LowerIsBetter:
		return pct > 0
	case HigherIsBetter:
		return pct < 0
	}
	return false
}

// Outcome is what a change of one statistic amounts to, judged against
// noise: the one reading that tollgate compare's table and the HTML page's
// old-vs-new table both show.
type Outcome int

const (
	// OutcomeUnknown: noise is unknown (or a side lacks the statistic).
	OutcomeUnknown Outcome = iota
	// OutcomeSame: no change, or a change within noise.
	OutcomeSame
	// OutcomeBetter: beyond noise, the way the metric's direction calls better.
	OutcomeBetter
	// OutcomeWorse: beyond noise, the way its direction calls worse.
	OutcomeWorse
	// OutcomeChanged: beyond noise, on a neutral metric.
	OutcomeChanged
)

func (o Outcome) String() string {
	switch o {
	case OutcomeSame:
		return "same"
	case OutcomeBetter:
		return "better"
	case OutcomeWorse:
		return "worse"
	case OutcomeChanged:
		return "changed"
	}
	return "unknown"
}

// Outcome judges the change of a statistic: its verdict against noise,
// then its direction.
func (m *Metric) Outcome(stat string) Outcome {
	switch m.Verdict(stat) {
	case Beyond:
		switch {
		case m.Direction == Neutral:
			return OutcomeChanged
		case m.Worse(stat):
			return OutcomeWorse
		}
		return OutcomeBetter
	case Within:
		return OutcomeSame
	}
	return OutcomeUnknown
}

// Headline is the statistic a table row leads with: p50, or value.
func (m *Metric) Headline() string {
	if m.Scalar {
		return "value"
	}
	return "p50"
}

// Regression is a threshold breach, or a test of one.
type Regression struct {
	Metric    *Metric // nil when the metric is missing from the new report
	Path      string
	Stat      string
	Threshold Threshold
	Old       float64
	New       *float64 // nil: absent in the new report
	ChangePct float64
	// P is the bootstrap p-value of "the change is within the threshold"
	// and Bound the Holm–Bonferroni bound it had to reach; both NaN where
	// no test was made (deterministic, missing, cannot tell).
	P, Bound float64
	// Need is, for a breach that cannot be told, the samples per side
	// that would tell it; for a test, the samples per side at which its
	// MDE would be the threshold's own size.
	Need int
	// MDE is the minimum detectable effect of a test, in percent: the
	// smallest change it tells from none with 80% probability at the
	// strictest Holm bound, at the observed spread and sample count. A
	// change beyond the threshold by MDE is failed as often. NaN where no
	// test was made.
	MDE float64
	// Method names the test (and its degrees of freedom).
	Method   string
	Decision Decision
	Reason   string // one line: what moved, by how much, against which limit and noise
	seq      int    // the order Compare selected it in: threshold, then report order
}

// Decision is the verdict of one --fail-on statistic, and of a whole
// comparison (Result.Verdict): no regression, inconclusive or regressed.
type Decision int

const (
	// NoRegression: within the threshold, judged against known noise (or
	// exactly, for deterministic runs).
	NoRegression Decision = iota
	// Inconclusive: over the threshold but not beyond noise, or noise that
	// cannot be told at all (too few samples, or none kept). Never a pass
	// unless the user accepts it (tollgate compare --accept-inconclusive).
	Inconclusive
	// Regressed: beyond the threshold and beyond noise.
	Regressed
)

func (d Decision) String() string {
	switch d {
	case Inconclusive:
		return "inconclusive"
	case Regressed:
		return "regression"
	}
	return "no regression"
}

// Result of Compare.
type Result struct {
	Old, New *report.Report
	Metrics  []*Metric
	// Regressions breached a FailOn threshold: moved the threshold's bad
	// way by more than its percentage beyond noise (its test rejected
	// "within the limit" at the family-wise Alpha), exactly (seam runs), by
	// vanishing from the new report, or, with FailOnUnknown, where noise
	// cannot be told.
	Regressions []Regression
	// WithinNoise breached a threshold's percentage but not beyond noise
	// (its test did not reject at the family-wise Alpha): reported, never
	// failed on.
	WithinNoise []Regression
	// CannotTell breached a threshold's percentage where noise cannot be
	// estimated (too few samples, or none): reported, failed on only with
	// Options.FailOnUnknown (and then also in Regressions).
	CannotTell []Regression
	// Untold counts the statistics a threshold selects that are within its
	// percentage but whose noise cannot be estimated either: inconclusive.
	Untold int
	// Tested is every statistic a threshold selects, threshold by
	// threshold in report order, each
	// with its Decision (and, where tested against noise, its MDE).
	Tested []Regression
	// Need is the most samples per slice and side that telling the
	// CannotTell and Untold statistics needs; FailOnUnknown is the option.
	Need          int
	FailOnUnknown bool
	// Tests is the size of the family the --fail-on tests were corrected
	// for, and Alpha its family-wise error rate.
	Tests int
	Alpha float64
	// Pooled are the phases whose own distributions pool several workloads
	// (prompt sizes, variants, load points) and are compared only per slice.
	Pooled []string
	// OnlyOld and OnlyNew are metric paths present in one report only.
	OnlyOld, OnlyNew []string
	// Notes are what a reader should know: a failed run, a different host name.
	Notes []string
	// Definitions are the definition notes of each side that another tool
	// measured (report.Imported): where its metrics are defined otherwise
	// than tollgate's, so that no reader compares them silently.
	Definitions []Definitions
}

// Definitions are the definition notes of one side of a comparison.
type Definitions struct {
	// Side is old or new; Heading names the tool and the file.
	Side, Heading string
	Notes         []string
}

// definitions are the notes of the sides another tool measured.
func definitions(old, new *report.Report) []Definitions {
	var out []Definitions
	for _, side := range []struct {
		name string
		r    *report.Report
	}{{"old", old}, {"new", new}} {
		if imp := side.r.Imported; imp != nil {
			out = append(out, Definitions{Side: side.name, Heading: imp.Heading(), Notes: imp.Notes})
		}
	}
	return out
}

// Compare compares every metric both reports have. It refuses reports of
// different schema versions, and, unless opts.AllowAny, of different
// scenarios (name or sha256), models or host hardware; the error says what
// differs and wraps ErrIncomparable.
func Compare(old, new *report.Report, opts Options) (*Result, error) {
	if err := comparable(old, new, opts.AllowAny); err != nil {
		return nil, err
	}
	if opts.Resamples <= 0 {
		opts.Resamples = DefaultResamples
	}
	if opts.Confidence <= 0 || opts.Confidence >= 1 {
		opts.Confidence = DefaultConfidence
	}
	if opts.MinSamples <= 0 {
		opts.MinSamples = DefaultMinSamples
	}
	if opts.Seed == 0 {
		opts.Seed = DefaultSeed
	}
	if opts.Alpha <= 0 || opts.Alpha >= 1 {
		opts.Alpha = DefaultAlpha
	}
	om, oorder, pooled, err := metrics(old)
	if err != nil {
		return nil, fmt.Errorf("old report: %w", err)
	}
	nm, norder, _, err := metrics(new)
	if err != nil {
		return nil, fmt.Errorf("new report: %w", err)
	}
	res := &Result{Old: old, New: new, Alpha: opts.Alpha, Pooled: pooled, FailOnUnknown: opts.FailOnUnknown}
	byPath := map[string]*Metric{}
	mismatch := map[string]string{} // load point path → what differs
	unlike := map[string]bool{}     // metric paths of those points
	for _, k := range oorder {
		oe := om[k]
		ne, ok := nm[k]
		if !ok {
			res.OnlyOld = append(res.OnlyOld, k)
			continue
		}
		if oe.workload != ne.workload {
			// The same position of a different sweep: not like with like.
			res.OnlyOld = append(res.OnlyOld, k)
			res.OnlyNew = append(res.OnlyNew, k)
			mismatch[pointOf(k)] = fmt.Sprintf("%s is %s in old, %s in new", pointOf(k), oe.workload, ne.workload)
			unlike[k] = true
			continue
		}
		if len(oe.values) == 0 && len(ne.values) == 0 {
			continue // absent on both sides (a per-token rate of prefill)
		}
		name := oe.path[len(oe.path)-1]
		m := &Metric{Path: k, Segments: oe.path, Name: name, Direction: direction(name),
			Scalar: oe.scalar, Old: oe.values, New: ne.values}
		m.Noise = noise(oe, ne, k, opts)
		switch {
		case m.Noise.AcrossRuns:
			m.oldReps, m.newReps = oe.reps, ne.reps
			m.Old, m.New = medianOfRuns(oe.values, oe.reps), medianOfRuns(ne.values, ne.reps)
		case m.Noise.Method == NoiseBootstrap:
			m.oldSamples, m.newSamples = oe.samples, ne.samples
		}
		res.Metrics = append(res.Metrics, m)
		byPath[k] = m
	}
	for _, k := range norder {
		if _, ok := om[k]; !ok {
			res.OnlyNew = append(res.OnlyNew, k)
		}
	}
	res.Notes = notes(old, new)
	res.Definitions = definitions(old, new)
	for _, p := range sortedKeys(mismatch) {
		res.Notes = append(res.Notes, "load point "+mismatch[p]+": not compared")
	}

	var tests []Regression
	seq := 0
	for _, t := range opts.FailOn {
		matched := false
		for _, k := range oorder {
			e := om[k]
			if !t.matches(e.path) {
				continue
			}
			if unlike[k] {
				matched = true // present, but under a different load: noted, not judged
				continue
			}
			if _, ok := e.values[t.Stat]; ok {
				matched = true
				seq++
				if r, test := judge(res, byPath[k], k, e, t, seq, opts); test {
					tests = append(tests, r)
				}
			} else if ne, ok := nm[k]; ok {
				_, inNew := ne.values[t.Stat]
				matched = matched || inNew // nothing to regress from
			}
		}
		for _, k := range res.OnlyNew {
			if _, ok := nm[k].values[t.Stat]; ok && t.matches(nm[k].path) {
				matched = true
			}
		}
		if !matched {
			return nil, noMatch(t, om, oorder, nm, norder, pooled)
		}
	}
	holm(res, tests, opts)
	sort.SliceStable(res.Tested, func(a, b int) bool { return res.Tested[a].seq < res.Tested[b].seq })
	return res, nil
}

// Verdict is the comparison's: regressed when any --fail-on statistic
// regressed, else inconclusive when any could not be decided (over a
// threshold within noise, or noise unknown), else no regression.
func (res *Result) Verdict() Decision {
	v := NoRegression
	for _, r := range res.Tested {
		v = max(v, r.Decision)
	}
	if len(res.Regressions) > 0 {
		return Regressed
	}
	return v
}

// pointOf is the load point part of a metric's path: runs.r.phases.load.points[0].
func pointOf(key string) string {
	if i := strings.Index(key, ".points["); i >= 0 {
		if j := strings.Index(key[i:], "]"); j >= 0 {
			return key[:i+j+1]
		}
	}
	return key
}

// ErrNoMetric marks a --fail-on threshold that selects no metric of either
// report.
var ErrNoMetric = errors.New("no metric matches")

// noMatch explains a threshold that selects nothing, with the nearest
// metric name or path segment when one is a plausible typo.
func noMatch(t Threshold, om map[string]*entry, oorder []string, nm map[string]*entry, norder []string, pooled []string) error {
	names, segs := map[string]bool{}, map[string]bool{}
	var nameList, segList []string
	for _, side := range []struct {
		m     map[string]*entry
		order []string
	}{{om, oorder}, {nm, norder}} {
		for _, k := range side.order {
			p := side.m[k].path
			if n := p[len(p)-1]; !names[n] {
				names[n] = true
				nameList = append(nameList, n)
			}
			for _, sg := range p[:len(p)-1] {
				if !segs[sg] {
					segs[sg] = true
					segList = append(segList, sg)
				}
			}
		}
	}
	sel := t.Selector
	if len(sel) == 0 {
		return fmt.Errorf("--fail-on %q: %w: no metric", t.Raw, ErrNoMetric)
	}
	name := sel[len(sel)-1]
	hint := ""
	switch {
	case !names[name]:
		hint = fmt.Sprintf("no metric is named %q%s", name, suggest.DidYouMean(name, nameList))
	default:
		for _, sg := range sel[:len(sel)-1] {
			if !segs[sg] {
				hint = fmt.Sprintf("no run, phase or slice is named %q%s", sg, suggest.DidYouMean(sg, segList))
				break
			}
		}
	}
	if hint == "" {
		hint = fmt.Sprintf("no %s has a %s", strings.Join(sel, "."), t.Stat)
		if len(pooled) > 0 {
			hint += fmt.Sprintf(" (phases pooling several workloads are compared per slice only: %s)", strings.Join(pooled, ", "))
		}
	}
	return fmt.Errorf("--fail-on %s: %w: %s; metric names: %s", t.Raw, ErrNoMetric, hint, example(oorder, t.Stat == "value"))
}

// judge checks one metric against one threshold. A breach of a
// deterministic metric, a metric gone from the new report and a breach
// whose noise cannot be told are recorded here; a metric with samples on
// both sides is returned as a test (test true) for holm to decide.
func judge(res *Result, m *Metric, key string, oe *entry, t Threshold, seq int, opts Options) (r Regression, test bool) {
	oldV := oe.values[t.Stat]
	r = Regression{Metric: m, Path: key, Stat: t.Stat, Threshold: t, Old: oldV, P: math.NaN(), Bound: math.NaN(), MDE: math.NaN(), seq: seq}
	decided := func(d Decision) {
		r.Decision = d
		if d == Regressed {
			res.Regressions = append(res.Regressions, r)
		}
		res.Tested = append(res.Tested, r)
	}
	if m == nil {
		r.Reason = fmt.Sprintf("%s.%s: %s in old, missing in the new report (limit %s)", key, t.Stat, num(oldV), t.Raw)
		decided(Regressed)
		return r, false
	}
	newV, ok := m.New[t.Stat]
	if !ok {
		r.Reason = fmt.Sprintf("%s.%s: %s in old, absent in new (no samples produced it; limit %s)", key, t.Stat, num(oldV), t.Raw)
		decided(Regressed)
		return r, false
	}
	r.New = &newV
	pct, _ := m.Change(t.Stat)
	r.ChangePct = pct
	exceeds := t.exceeds(pct)
	base := fmt.Sprintf("%s.%s: %s → %s (%s, limit %s)", key, t.Stat, num(oldV), num(newV), FormatChange(pct), t.Raw)
	switch {
	case m.Noise.Method == NoiseNone:
		r.Reason = base + "; " + noiseString(m, t.Stat)
		if exceeds {
			decided(Regressed)
		} else {
			decided(NoRegression)
		}
		return r, false
	case m.Noise.Method == NoiseBootstrap && m.Noise.Need(t.Stat) == 0:
		r.Reason = base
		return r, true
	}
	r.Need = m.Noise.Need(t.Stat)
	res.Need = max(res.Need, r.Need)
	if !exceeds {
		res.Untold++
		r.Reason = base + "; inconclusive, cannot tell: " + noiseString(m, t.Stat)
		decided(Inconclusive)
		return r, false
	}
	r.Reason = base + "; cannot tell: " + noiseString(m, t.Stat)
	res.CannotTell = append(res.CannotTell, r)
	if opts.FailOnUnknown {
		decided(Regressed)
	} else {
		decided(Inconclusive)
	}
	return r, false
}

// holm decides the tests: each is a one-sided test of "the change is
// within the threshold" (Yuen's trimmed-mean test on the logs for a p50 and
// for any statistic over whole runs, robust.go; a bootstrap for the tail
// percentiles and the mean), and together they are corrected by
// Holm–Bonferroni so that an unchanged build fails any of them with
// probability at most opts.Alpha however many slices the thresholds select.
// A test rejected is a regression; one that breached the percentage but was
// not rejected is inconclusive (within noise); one within the percentage is
// no regression. Each gets its minimum detectable effect at the first Holm
// bound (the strictest), and the samples per side that would bring it to
// the threshold's size.
func holm(res *Result, tests []Regression, opts Options) {
	res.Tests = len(tests)
	if len(tests) == 0 {
		return
	}
	// The smallest p-value B resamples can give is 1/(B+1); the first Holm
	// bound is Alpha/m, so B must be well beyond m/Alpha.
	b := max(opts.Resamples, min(int(math.Ceil(20*float64(len(tests))/opts.Alpha)), 100000))
	strictest := opts.Alpha / float64(len(tests))
	sides := make([][2]trimmedSide, len(tests))
	robust := make([]bool, len(tests))
	pools := map[string]*pool{}
	for i := range tests {
		r := &tests[i]
		o, n, ok := r.Metric.robustValues(r.Stat)
		if !ok {
			continue
		}
		so, ook := logTrimmed(o)
		sn, nok := logTrimmed(n)
		if !ook || !nok {
			continue
		}
		sides[i], robust[i] = [2]trimmedSide{so, sn}, true
		k := poolKey(r.Metric, r.Stat)
		if pools[k] == nil {
			pools[k] = &pool{}
		}
		pools[k].add(so)
		pools[k].add(sn)
	}
	cache := map[*Metric]map[string][]float64{}
	for i := range tests {
		r := &tests[i]
		if robust[i] {
			y := yuenTest(sides[i][0], sides[i][1], *pools[poolKey(r.Metric, r.Stat)])
			r.P = y.pValue(r.Threshold)
			r.MDE = y.mde(strictest)
			r.Method = fmt.Sprintf("trimmed-mean t on logs, df %.0f", y.df)
			if y.pooled {
				r.Method += ", spread pooled over the phase's slices"
			}
			r.Need = need(min(sides[i][0].n, sides[i][1].n), r.MDE, r.Threshold.Percent)
			continue
		}
		rel, ok := cache[r.Metric]
		if !ok {
			if m := r.Metric; m.Noise.AcrossRuns {
				// One test per statistic, over its values in each run.
				rel = map[string][]float64{}
				for stat := range m.Noise.Intervals {
					rel[stat] = relChanges(m.oldReps[stat], m.newReps[stat], b, opts.Seed, r.Path+"."+stat)["p50"]
				}
			} else {
				rel = relChanges(r.Metric.oldSamples, r.Metric.newSamples, b, opts.Seed, r.Path)
			}
			cache[r.Metric] = rel
		}
		r.P = pValue(rel[r.Stat], r.Threshold)
		r.Method = "bootstrap"
		if d := rel[r.Stat]; len(d) > 1 {
			se := (quantile(d, 0.8413) - quantile(d, 0.1587)) / 2
			r.MDE = (normalQuantile(1-strictest) + normalQuantile(power)) * se
			r.Need = need(min(r.Metric.Noise.OldN, r.Metric.Noise.NewN), r.MDE, r.Threshold.Percent)
		}
	}
	order := make([]int, len(tests))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return tests[order[a]].P < tests[order[b]].P })
	rejected := make([]bool, len(tests))
	rejecting := true
	for rank, i := range order {
		r := &tests[i]
		r.Bound = opts.Alpha / float64(len(tests)-rank)
		rejecting = rejecting && r.P <= r.Bound && r.Threshold.exceeds(r.ChangePct)
		rejected[i] = rejecting
	}
	for i, r := range tests { // in report order
		test := fmt.Sprintf("%s; %s p=%.2g vs Holm bound %.2g (%d tests, family-wise α %.2g); detectable ±%s",
			noiseString(r.Metric, r.Stat), r.Method, r.P, r.Bound, len(tests), opts.Alpha, pctString(r.MDE))
		switch {
		case rejected[i]:
			r.Reason += "; beyond noise: " + test
			r.Decision = Regressed
			res.Regressions = append(res.Regressions, r)
		case r.Threshold.exceeds(r.ChangePct):
			r.Reason += "; inconclusive, within noise: " + test
			r.Decision = Inconclusive
			res.WithinNoise = append(res.WithinNoise, r)
		default:
			r.Reason += "; " + test
			r.Decision = NoRegression
		}
		res.Tested = append(res.Tested, r)
	}
}

// poolKey groups the tests whose spread is shared: one statistic of one
// metric in the slices (prompt sizes, variants, load points) of one phase
// of one run, over requests or over whole runs.
func poolKey(m *Metric, stat string) string {
	seg := m.Segments
	end := len(seg) - 1
	if i := slices.Index(seg, "phases"); i >= 0 && i+2 <= end {
		end = i + 2
	}
	return fmt.Sprintf("%q %s %s %v", seg[:end], m.Name, stat, m.Noise.AcrossRuns)
}

// robustValues are the values the trimmed-mean test of stat compares: a
// statistic's values in each run when both reports repeated the scenario,
// else, for a p50, the per-request samples. ok false where the bootstrap
// decides instead (a tail percentile or a mean of requests).
func (m *Metric) robustValues(stat string) (old, new []float64, ok bool) {
	if m.Noise.AcrossRuns {
		o, n := m.oldReps[stat], m.newReps[stat]
		return o, n, len(o) > 0 && len(n) > 0
	}
	if stat != "p50" || m.oldSamples == nil || m.newSamples == nil {
		return nil, nil, false
	}
	return m.oldSamples, m.newSamples, true
}

// normalQuantile is the standard normal quantile function.
func normalQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }

// pctString writes a percentage without a sign: 3.2%, or ? when unknown.
func pctString(p float64) string {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return "?"
	}
	if p >= 100 {
		return fmt.Sprintf("%.0f%%", p)
	}
	return fmt.Sprintf("%.2g%%", p)
}

// noise decides how a metric's noise is known: deterministic for seam runs,
// a bootstrap when both reports kept enough samples, unknown otherwise.
func noise(oe, ne *entry, path string, opts Options) Noise {
	if oe.deterministic && ne.deterministic {
		return Noise{Method: NoiseNone, Note: "deterministic (virtual time)"}
	}
	if n, ok := acrossRuns(oe, ne, path, opts); ok {
		return n
	}
	if oe.samples == nil || ne.samples == nil {
		note := "no samples: noise unknown"
		if oe.samplesNote != "" {
			note = oe.samplesNote
		} else if ne.samplesNote != "" {
			note = ne.samplesNote
		}
		return Noise{Method: NoiseUnknown, Note: note}
	}
	n := Noise{OldN: len(oe.samples), NewN: len(ne.samples), Floor: opts.MinSamples}
	if n.OldN < opts.MinSamples || n.NewN < opts.MinSamples {
		n.Method = NoiseUnknown
		n.Note = fmt.Sprintf("n=%d/%d: noise unknown, needs %d samples per side", n.OldN, n.NewN, opts.MinSamples)
		return n
	}
	n.Method = NoiseBootstrap
	n.Intervals = bootstrap(oe.samples, ne.samples, opts.Resamples, opts.Confidence, opts.Seed, path)
	for stat := range n.Intervals {
		if min(n.OldN, n.NewN) < minSamplesFor(stat, opts.MinSamples) {
			delete(n.Intervals, stat)
		}
	}
	n.Note = fmt.Sprintf("bootstrap %d resamples, %.0f%%, n=%d/%d", opts.Resamples, opts.Confidence*100, n.OldN, n.NewN)
	return n
}

// acrossRuns is the noise of a metric both reports repeated (run
// --repeat-runs, at least opts.MinSamples runs a side): each statistic is
// a sample of one value per run, bootstrapped as a median of runs. Whole
// runs see what per-request samples of one run cannot, the drift between
// runs (a burst of load on a shared machine that slows one run), so they
// decide where both reports have them.
func acrossRuns(oe, ne *entry, path string, opts Options) (Noise, bool) {
	n := Noise{Method: NoiseBootstrap, AcrossRuns: true, Floor: opts.MinSamples, Intervals: map[string]Interval{}}
	for stat, ov := range oe.reps {
		nv := ne.reps[stat]
		if len(ov) < opts.MinSamples || len(nv) < opts.MinSamples {
			continue
		}
		n.OldN, n.NewN = len(ov), len(nv)
		n.Intervals[stat] = bootstrap(ov, nv, opts.Resamples, opts.Confidence, opts.Seed, path+"."+stat)["p50"]
	}
	if len(n.Intervals) == 0 {
		return Noise{}, false
	}
	n.Note = fmt.Sprintf("bootstrap %d resamples, %.0f%%, over runs n=%d/%d (medians of runs)", opts.Resamples, opts.Confidence*100, n.OldN, n.NewN)
	return n, true
}

// medianOfRuns is values with every statistic that has repetitions
// replaced by the (nearest-rank) median of its values across runs.
func medianOfRuns(values map[string]float64, reps map[string][]float64) map[string]float64 {
	out := make(map[string]float64, len(values))
	for stat, v := range values {
		out[stat] = v
		if r := reps[stat]; len(r) > 0 {
			out[stat] = quantile(slices.Sorted(slices.Values(r)), 0.5)
		}
	}
	return out
}

// minSamplesFor is the fewest samples per side for an interval of a
// statistic to be trusted. Measured as for DefaultMinSamples (400 trials of
// identical distributions, 95% intervals), the false-positive rate of a tail
// percentile stays near 5% only with about 1.5 samples beyond it: p90 from
// n = 15 (7.5% at n = 10), p95 from n = 30 (19% at n = 10, where the
// nearest-rank p95 is the maximum), hence n ≥ 150 ÷ (100 − p). The mean of a
// skewed distribution needs n = 30 (11–17% at n ≤ 10, 6% at 30).
func minSamplesFor(stat string, floor int) int {
	need := floor
	switch stat {
	case "p90":
		need = 15
	case "p95":
		need = 30
	case "p99":
		need = 150
	case "mean":
		need = 30
	}
	return max(need, floor)
}

// comparable refuses reports that cannot be compared, saying exactly what differs.
func comparable(old, new *report.Report, allowAny bool) error {
	for _, side := range []struct {
		name string
		r    *report.Report
	}{{"old", old}, {"new", new}} {
		if side.r == nil {
			return fmt.Errorf("%s report: %w: nil", side.name, ErrNotReport)
		}
		if side.r.Tool.Name != "tollgate" || side.r.SchemaVersion == 0 {
			return fmt.Errorf("%s report: %w (tool %q, schema_version %d)", side.name, ErrNotReport, side.r.Tool.Name, side.r.SchemaVersion)
		}
	}
	if old.SchemaVersion != new.SchemaVersion {
		return fmt.Errorf("%w: schema_version %d (old) vs %d (new); reports of different formats are never compared",
			ErrIncomparable, old.SchemaVersion, new.SchemaVersion)
	}
	if old.SchemaVersion != report.SchemaVersion {
		return fmt.Errorf("%w: schema_version %d; this tollgate reads schema_version %d", ErrIncomparable, old.SchemaVersion, report.SchemaVersion)
	}
	if allowAny {
		return nil
	}
	var diffs []string
	diff := func(what, o, n string) {
		if o != n {
			diffs = append(diffs, fmt.Sprintf("%s: old %q, new %q", what, o, n))
		}
	}
	diff("scenario name", old.Scenario.Name, new.Scenario.Name)
	if old.Scenario.SHA256 != new.Scenario.SHA256 {
		// Named by field (phases.decode.max_tokens), not by two hashes.
		diffs = append(diffs, "scenario differs in: "+strings.Join(report.IdentityDiff(old.Scenario, new.Scenario, "old", "new"), ", "))
	}
	diff("host os", old.Host.OS, new.Host.OS)
	diff("host arch", old.Host.Arch, new.Host.Arch)
	diff("host cpu_model", old.Host.CPUModel, new.Host.CPUModel)
	if old.Host.CPUCores != new.Host.CPUCores {
		diffs = append(diffs, fmt.Sprintf("host cpu_cores: old %d, new %d", old.Host.CPUCores, new.Host.CPUCores))
	}
	for _, rn := range old.RunNames() {
		o, n := old.Runs[rn], new.Runs[rn]
		if o == nil || n == nil {
			continue
		}
		diff(fmt.Sprintf("run %s target kind", rn), o.Target.Kind, n.Target.Kind)
		if o.Target.Model != "" && n.Target.Model != "" {
			diff(fmt.Sprintf("run %s model", rn), o.Target.Model, n.Target.Model)
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%w:\n  %s\npass --baseline-any to compare them anyway", ErrIncomparable, strings.Join(diffs, "\n  "))
}

// notes are facts that do not refuse a comparison but qualify it.
func notes(old, new *report.Report) []string {
	var out []string
	if old.Host.Hostname != new.Host.Hostname && old.Imported == nil && new.Imported == nil {
		out = append(out, fmt.Sprintf("host name differs (old %q, new %q); hardware matches", old.Host.Hostname, new.Host.Hostname))
	}
	for _, side := range []struct {
		name string
		r    *report.Report
	}{{"old", old}, {"new", new}} {
		if side.r.Incomplete || side.r.Status == report.StatusIncomplete {
			out = append(out, side.name+" report is incomplete (interrupted)")
		}
		for _, rn := range side.r.RunNames() {
			if run := side.r.Runs[rn]; run != nil && run.Status == report.StatusError {
				out = append(out, fmt.Sprintf("%s report: run %s failed: %s", side.name, rn, run.Error))
			}
		}
	}
	return out
}

func example(order []string, scalar bool) string {
	var names []string
	seen := map[string]bool{}
	for _, k := range order {
		i := strings.LastIndexAny(k, ".]")
		name := k[i+1:]
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) > 12 {
		names = append(names[:12], "…")
	}
	hint := strings.Join(names, ", ")
	if scalar {
		return hint
	}
	return hint + " (single-valued ones take .value)"
}

// Comparable reports whether old may serve as a baseline for new: both
// tollgate reports of the same schema version and, unless allowAny, the same
// scenario (name and sha256), host hardware and, for runs present in both,
// target kind and model. The error says exactly what differs.
func Comparable(old, new *report.Report, allowAny bool) error {
	return comparable(old, new, allowAny)
}
