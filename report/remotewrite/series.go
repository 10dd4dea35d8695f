// Package remotewrite sends a tollgate report's figures to a Prometheus
// remote-write receiver (protocol 1.0: a snappy-compressed protobuf
// WriteRequest, the Prometheus project's own prompb types): per run, phase
// and slice statistics as summary-style gauges in base units, gate verdicts
// and capacity found, each series one sample at the run's end.
//
// Every series it can write is one of the families Catalog lists, with
// exactly the labels listed there (and the user's own): Build emits series
// only through those declarations, so a dashboard can be checked against
// Catalog rather than against a list kept by hand. docs/report.md
// ("Prometheus series") explains the naming.
package remotewrite

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// Prefix starts every metric name tollgate writes.
const Prefix = "tollgate_"

// The labels tollgate sets itself. A series carries those of its level
// (Family.Labels): the scenario on every one, the run and its target on a
// run's, the phase and its slice on a slice's.
const (
	LabelScenario = "scenario"
	LabelRun      = "run"
	LabelTarget   = "target"
	LabelPhase    = "phase"
	LabelSlice    = "slice"
	// LabelQuantile is a statistic's quantile: 0 (min), 0.5, 0.9, 0.95,
	// 0.99, 1 (max), as Prometheus summaries spell them.
	LabelQuantile = "quantile"
	LabelGate     = "gate"
	LabelStatus   = "status"
	LabelClass    = "class"
	LabelEstimate = "estimate"
)

// SliceAll is the slice of a phase's figures over all of it; a breakdown's
// slice is its key (a prompt size "512", a prefix-cache variant "fresh", a
// load point "concurrency 8" or "rate 4/s", a turn "turn 2", a step "step
// 3", a seam's name), as the CSV's point column names it.
const SliceAll = "all"

// level is which labels a family's series carry before its own.
type level int

const (
	levelReport level = iota // scenario
	levelRun                 // scenario, run, target
	levelSlice               // scenario, run, target, phase, slice
)

var levelLabels = map[level][]string{
	levelReport: {LabelScenario},
	levelRun:    {LabelScenario, LabelRun, LabelTarget},
	levelSlice:  {LabelScenario, LabelRun, LabelTarget, LabelPhase, LabelSlice},
}

// Family is one metric name tollgate writes: its help, its unit (the
// base unit its name ends in, "" for a count or a ratio) and the labels
// every one of its series carries, sorted (user labels come on top).
type Family struct {
	Name   string
	Help   string
	Unit   string
	Labels []string
}

// family is a Family as declared: its level and its own labels, in the
// order Build gives their values.
type family struct {
	name, help, unit string
	level            level
	own              []string
}

func (f *family) public() Family {
	l := append(slices.Clone(levelLabels[f.level]), f.own...)
	slices.Sort(l)
	return Family{Name: f.name, Help: f.help, Unit: f.unit, Labels: l}
}

// statistic is one per-request distribution written as a summary-style
// family: name{quantile=…} for min, p50, p90, p95, p99, max, name_mean and
// name_count, scaled from the report's unit to the base unit.
type statistic struct {
	quantiles, mean, count *family
	scale                  float64 // the report's figure ÷ scale is the base unit's
}

// quantiles are the quantile label values of a Stat's fields.
var quantiles = []struct{ field, q string }{
	{"min", "0"}, {"p50", "0.5"}, {"p90", "0.9"}, {"p95", "0.95"}, {"p99", "0.99"}, {"max", "1"},
}

// baseName is the metric name of a report key in its unit: milliseconds
// become seconds (÷ 1000), per-second rates spell it out, counts keep
// their name. False for a unit it has no base for.
func baseName(key, unit string) (name, baseUnit string, scale float64, ok bool) {
	switch unit {
	case "ms":
		if k, cut := strings.CutSuffix(key, "_ms"); cut {
			return Prefix + k + "_seconds", "seconds", 1000, true
		}
	case "tokens/s":
		if k, cut := strings.CutSuffix(key, "_per_s"); cut {
			return Prefix + k + "_per_second", "", 1, true
		}
	case "tokens", "events":
		return Prefix + key, "", 1, true
	}
	return "", "", 0, false
}

func newStatistic(key, unit, help string) (statistic, error) {
	name, bu, scale, ok := baseName(key, unit)
	if !ok {
		return statistic{}, fmt.Errorf("remotewrite: %s: no base unit for %q", key, unit)
	}
	in := ""
	if scale != 1 {
		in = " Written in " + bu + " (the report's milliseconds ÷ 1000)."
	}
	return statistic{
		quantiles: &family{name: name, unit: bu, level: levelSlice, own: []string{LabelQuantile},
			help: help + in + " quantile 0 is the minimum, 1 the maximum (nearest rank)."},
		mean:  &family{name: name + "_mean", unit: bu, level: levelSlice, help: "The mean of " + name + "." + in},
		count: &family{name: name + "_count", level: levelSlice, help: "Requests (or events) " + name + " is over."},
		scale: scale,
	}, nil
}

// catalog is every family, declared once: Build writes through it and
// Catalog lists it. It is built by New and read only.
type catalog struct {
	// serving are report.Metrics, by key.
	serving map[string]statistic
	// Load-point distributions.
	queue, dispatchLag, ttftFromSchedule, e2eFromSchedule statistic
	// Seam distributions.
	seamLatency, seamQueueWait statistic

	reportPassed, gatePassed, runOK                              *family
	requests, succeeded, failed, speedup                         *family
	offeredConcurrency, offeredRate, achievedRate, throughput    *family
	outputTokens, totalTokens, achievedConcurrency, peakInFlight *family
	goodput, pointDuration                                       *family
	capacityRate, capacityConcurrency, capacityConfirmed, probes *family
	seamTransfers, seamTokens, seamPayload, seamWire, seamRatio  *family
}

func newCatalog() (*catalog, error) {
	c := &catalog{serving: map[string]statistic{}}
	var errs []error
	stat := func(key, unit, help string) statistic {
		s, err := newStatistic(key, unit, help)
		errs = append(errs, err)
		return s
	}
	for _, m := range report.Metrics {
		c.serving[m.Key] = stat(m.Key, m.Unit, m.Description)
	}
	c.queue = stat("queue_ms", "ms", "Load point: scheduled send time → the request's first byte written, per request.")
	c.dispatchLag = stat("dispatch_lag_ms", "ms", "Load point: how late the client woke for each scheduled send (open loop).")
	c.ttftFromSchedule = stat("ttft_from_schedule_ms", "ms", "Load point: ttft counted from the scheduled send time.")
	c.e2eFromSchedule = stat("e2e_from_schedule_ms", "ms", "Load point: e2e counted from the scheduled send time.")
	c.seamLatency = stat("seam_latency_ms", "ms", "Seam: one activation transfer's latency.")
	c.seamQueueWait = stat("seam_queue_wait_ms", "ms", "Seam: one transfer's wait in the send queue.")

	fam := func(name, unit string, lv level, help string, own ...string) *family {
		return &family{name: Prefix + name, unit: unit, level: lv, help: help, own: own}
	}
	c.reportPassed = fam("report_passed", "", levelReport, "1 when the report's verdict is pass, else 0; status is the verdict (pass, fail, error, inconclusive, incomplete). Not written for a report that was not gated.", LabelStatus)
	c.gatePassed = fam("gate_passed", "", levelReport, "1 when the gate passed, else 0; status is its verdict (pass, fail, error, skipped, inconclusive).", LabelGate, LabelStatus)
	c.runOK = fam("run_ok", "", levelRun, "1 when the run completed, 0 when it failed (its error is in the report).")
	c.requests = fam("requests", "", levelSlice, "Requests sent (warmup requests are counted, never measured).")
	c.succeeded = fam("requests_succeeded", "", levelSlice, "Requests that succeeded.")
	c.failed = fam("requests_failed", "", levelSlice, "Requests that failed, by error class.", LabelClass)
	c.speedup = fam("speedup_ratio", "", levelSlice, "Prefix cache: fresh ttft p50 ÷ this variant's ttft p50.")
	c.offeredConcurrency = fam("offered_concurrency", "", levelSlice, "Load point: the closed-loop concurrency asked for.")
	c.offeredRate = fam("offered_rate_per_second", "", levelSlice, "Load point: the open-loop rate asked for, requests per second.")
	c.achievedRate = fam("achieved_rate_per_second", "", levelSlice, "Load point: (requests written − 1) ÷ (last write − first write).")
	c.throughput = fam("request_throughput_per_second", "", levelSlice, "Load point: requests completed per second.")
	c.outputTokens = fam("output_tokens_per_second", "", levelSlice, "Load point: completion tokens per second.")
	c.totalTokens = fam("total_tokens_per_second", "", levelSlice, "Load point: prompt + completion tokens per second.")
	c.achievedConcurrency = fam("achieved_concurrency", "", levelSlice, "Load point: Σ e2e ÷ (last completion − first send timestamp), the mean number in flight.")
	c.peakInFlight = fam("peak_in_flight", "", levelSlice, "Load point: the most requests in flight at once.")
	c.goodput = fam("goodput_ratio", "", levelSlice, "Load point: the fraction of requests that met every SLO limit (attained_pct ÷ 100).")
	c.pointDuration = fam("point_duration_seconds", "seconds", levelSlice, "Load point: first write → last completion.")
	c.capacityRate = fam("capacity_rate_per_second", "", levelSlice, "Capacity by rate: the highest rate that passed every probe (estimate found) and the interval around it (interval_low, interval_high).", LabelEstimate)
	c.capacityConcurrency = fam("capacity_concurrency", "", levelSlice, "Capacity by concurrency: the highest concurrency that passed every probe (estimate found) and the interval around it (interval_low, interval_high).", LabelEstimate)
	c.capacityConfirmed = fam("capacity_confirmed", "", levelSlice, "1 when the capacity found passed its hold, else 0.")
	c.probes = fam("capacity_probes", "", levelSlice, "Probes the capacity search ran.")
	c.seamTransfers = fam("seam_transfers", "", levelSlice, "Seam: activation transfers.")
	c.seamTokens = fam("seam_tokens_per_second", "", levelSlice, "Seam: decode tokens per second of seam latency.")
	c.seamPayload = fam("seam_payload_bytes", "bytes", levelSlice, "Seam: activation payload bytes.")
	c.seamWire = fam("seam_wire_bytes", "bytes", levelSlice, "Seam: bytes on the wire.")
	c.seamRatio = fam("seam_compression_ratio", "", levelSlice, "Seam: payload bytes ÷ wire bytes.")
	return c, errors.Join(errs...)
}

// families lists the catalog in a stable order: the declared families,
// then every statistic's three.
func (c *catalog) families() []*family {
	out := []*family{
		c.reportPassed, c.gatePassed, c.runOK, c.requests, c.succeeded, c.failed, c.speedup,
		c.offeredConcurrency, c.offeredRate, c.achievedRate, c.throughput, c.outputTokens, c.totalTokens,
		c.achievedConcurrency, c.peakInFlight, c.goodput, c.pointDuration,
		c.capacityRate, c.capacityConcurrency, c.capacityConfirmed, c.probes,
		c.seamTransfers, c.seamTokens, c.seamPayload, c.seamWire, c.seamRatio,
	}
	stats := []statistic{c.queue, c.dispatchLag, c.ttftFromSchedule, c.e2eFromSchedule, c.seamLatency, c.seamQueueWait}
	for _, m := range report.Metrics {
		stats = append(stats, c.serving[m.Key])
	}
	for _, s := range stats {
		out = append(out, s.quantiles, s.mean, s.count)
	}
	return out
}

// Catalog lists every family Build can write, each with the labels all
// its series carry. An error means a metric of report.Metrics has a unit
// this package has no base unit for (a test holds the table to it).
func Catalog() ([]Family, error) {
	c, err := newCatalog()
	if err != nil {
		return nil, err
	}
	var out []Family
	for _, f := range c.families() {
		out = append(out, f.public())
	}
	return out, nil
}

// ReservedLabels are the label names a user label may not take: every
// label tollgate sets, the metric name's, and Prometheus' reserved __
// prefix (checked apart: any name starting with it is refused).
func ReservedLabels() []string {
	return []string{model.MetricNameLabel, LabelScenario, LabelRun, LabelTarget, LabelPhase, LabelSlice,
		LabelQuantile, LabelGate, LabelStatus, LabelClass, LabelEstimate}
}

// ErrLabel is a user label refused.
var ErrLabel = errors.New("invalid label")

// Label is one name and value.
type Label struct{ Name, Value string }

// ParseLabel reads a user label NAME=VALUE: a Prometheus label name
// ([a-zA-Z_][a-zA-Z0-9_]*, so that any receiver takes it), none of
// ReservedLabels nor __-prefixed, and a non-empty UTF-8 value (an empty
// one would drop the label, as Prometheus reads it).
func ParseLabel(s string) (Label, error) {
	name, value, ok := strings.Cut(s, "=")
	switch {
	case !ok:
		return Label{}, fmt.Errorf("%w %q: want NAME=VALUE", ErrLabel, s)
	case !model.LegacyValidation.IsValidLabelName(name):
		return Label{}, fmt.Errorf("%w %q: %q is not a label name (letters, digits and _, not starting with a digit)", ErrLabel, s, name)
	case strings.HasPrefix(name, "__"):
		return Label{}, fmt.Errorf("%w %q: names starting with __ are reserved by Prometheus", ErrLabel, s)
	case slices.Contains(ReservedLabels(), name):
		return Label{}, fmt.Errorf("%w %q: tollgate sets %s itself (reserved: %s)", ErrLabel, s, name, strings.Join(ReservedLabels()[1:], ", "))
	case value == "":
		return Label{}, fmt.Errorf("%w %q: an empty value (Prometheus drops a label without one)", ErrLabel, s)
	case !utf8.ValidString(value):
		return Label{}, fmt.Errorf("%w %q: the value is not UTF-8", ErrLabel, s)
	}
	return Label{name, value}, nil
}

// ParseLabels reads every --label given, refusing one given twice.
func ParseLabels(args []string) ([]Label, error) {
	var out []Label
	seen := map[string]bool{}
	for _, a := range args {
		l, err := ParseLabel(a)
		if err != nil {
			return nil, err
		}
		if seen[l.Name] {
			return nil, fmt.Errorf("%w %q: %s is given twice", ErrLabel, a, l.Name)
		}
		seen[l.Name] = true
		out = append(out, l)
	}
	return out, nil
}

// place is where a series belongs: the labels of its level.
type place struct{ scenario, run, target, phase, slice string }

func (p place) values(lv level) []string {
	switch lv {
	case levelReport:
		return []string{p.scenario}
	case levelRun:
		return []string{p.scenario, p.run, p.target}
	}
	return []string{p.scenario, p.run, p.target, p.phase, p.slice}
}

// builder collects the series of one report.
type builder struct {
	ts     int64
	user   []Label
	series []prompb.TimeSeries
	used   map[*family]bool
	seen   map[string]bool
	err    error
}

// add writes one sample of f at p, with f's own label values in order.
// A value that is not finite is left out: a statistic without samples is
// absent, never 0 or NaN.
func (b *builder) add(f *family, p place, v float64, own ...string) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if len(own) != len(f.own) {
		panic(fmt.Sprintf("remotewrite: %s takes %d labels of its own, given %d", f.name, len(f.own), len(own)))
	}
	names := append(slices.Clone(levelLabels[f.level]), f.own...)
	values := append(p.values(f.level), own...)
	labels := []prompb.Label{{Name: model.MetricNameLabel, Value: f.name}}
	for i, n := range names {
		if values[i] == "" {
			continue // Prometheus reads an empty value as no label
		}
		labels = append(labels, prompb.Label{Name: n, Value: values[i]})
	}
	for _, l := range b.user {
		labels = append(labels, prompb.Label{Name: l.Name, Value: l.Value})
	}
	// The protocol wants label names sorted.
	slices.SortFunc(labels, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
	var key strings.Builder
	for _, l := range labels {
		key.WriteString(strconv.Quote(l.Name) + "=" + strconv.Quote(l.Value) + ",")
	}
	if b.seen[key.String()] {
		if b.err == nil {
			b.err = fmt.Errorf("remotewrite: two series with the labels {%s}", strings.TrimSuffix(key.String(), ","))
		}
		return
	}
	b.seen[key.String()] = true
	b.used[f] = true
	b.series = append(b.series, prompb.TimeSeries{Labels: labels, Samples: []prompb.Sample{{Value: v, Timestamp: b.ts}}})
}

func (b *builder) opt(f *family, p place, v *float64, own ...string) {
	if v != nil {
		b.add(f, p, *v, own...)
	}
}

func (b *builder) stat(s statistic, p place, st report.Stat) {
	if st.Count == 0 {
		return // absent: no samples
	}
	for _, q := range quantiles {
		if v := st.Field(q.field); v != nil {
			b.add(s.quantiles, p, *v/s.scale, q.q)
		}
	}
	if st.Mean != nil {
		b.add(s.mean, p, *st.Mean/s.scale)
	}
	b.add(s.count, p, float64(st.Count))
}

func bool01(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}

// Build turns a report into the WriteRequest that carries its figures,
// every sample at the report's end (ended_at), with the user's labels on
// every series. Families that have a series are described in its metadata.
func Build(rep *report.Report, user []Label) (*prompb.WriteRequest, error) {
	c, err := newCatalog()
	if err != nil {
		return nil, err
	}
	if rep.EndedAt.IsZero() {
		return nil, errors.New("remotewrite: the report has no ended_at to time its series by")
	}
	b := &builder{ts: rep.EndedAt.UnixMilli(), user: user, used: map[*family]bool{}, seen: map[string]bool{}}
	at := place{scenario: rep.Scenario.Name}
	if rep.Status != report.StatusNotGated && rep.Status != "" {
		b.add(c.reportPassed, at, bool01(rep.Status == report.StatusPass), rep.Status)
	}
	for _, g := range rep.Gates {
		b.add(c.gatePassed, at, bool01(g.Status == report.StatusPass), g.Name, g.Status)
	}
	for _, rn := range rep.RunNames() {
		run := rep.Runs[rn]
		p := place{scenario: rep.Scenario.Name, run: rn, target: run.Target.Name}
		b.add(c.runOK, p, bool01(run.Status == report.RunOK))
		for _, pn := range run.PhaseNames() {
			p.phase = pn
			c.phase(b, p, run.Phases[pn])
		}
	}
	if b.err != nil {
		return nil, b.err
	}
	req := &prompb.WriteRequest{Timeseries: b.series}
	for _, f := range c.families() {
		if b.used[f] {
			req.Metadata = append(req.Metadata, prompb.MetricMetadata{
				Type: prompb.MetricMetadata_GAUGE, MetricFamilyName: f.name, Help: f.help, Unit: f.unit})
		}
	}
	return req, nil
}

// phase writes one phase: its figures over all of it (slice all), then
// each breakdown's.
func (c *catalog) phase(b *builder, p place, ph *report.Phase) {
	all := p
	all.slice = SliceAll
	if ph.ServingMetrics != nil {
		c.serving1(b, all, ph.ServingMetrics)
	}
	for _, bd := range []struct {
		prefix string
		m      map[string]*report.Point
	}{{"", ph.ByPromptTokens}, {"", ph.Variants}, {"turn ", ph.ByTurn}, {"step ", ph.ByStep}} {
		for _, k := range report.PointKeys(bd.m) {
			pt := bd.m[k]
			at := p
			at.slice = bd.prefix + k
			if pt.ServingMetrics != nil {
				c.serving1(b, at, pt.ServingMetrics)
			}
			b.opt(c.speedup, at, pt.Speedup)
		}
	}
	for _, lp := range ph.Points {
		if lp == nil {
			continue
		}
		at := p
		at.slice = view.PointLabel(lp)
		c.point(b, at, lp)
	}
	if cp := ph.Capacity; cp != nil {
		c.capacity(b, all, cp)
	}
	if ph.SeamMetrics != nil {
		c.seam(b, all, ph.SeamMetrics)
	}
	for _, name := range slices.Sorted(maps.Keys(ph.SeamsByName)) {
		if sm := ph.SeamsByName[name]; sm != nil {
			at := p
			at.slice = name
			c.seam(b, at, sm)
		}
	}
}

func (c *catalog) serving1(b *builder, p place, m *report.ServingMetrics) {
	b.add(c.requests, p, float64(m.Requests))
	b.add(c.succeeded, p, float64(m.Succeeded))
	for _, class := range slices.Sorted(maps.Keys(m.Errors.ByClass)) {
		b.add(c.failed, p, float64(m.Errors.ByClass[class]), class)
	}
	for _, mt := range report.Metrics {
		b.stat(c.serving[mt.Key], p, *mt.Stat(m))
	}
}

func (c *catalog) point(b *builder, p place, lp *report.LoadPoint) {
	if lp.Rate > 0 {
		b.add(c.offeredRate, p, lp.Rate)
	} else {
		b.add(c.offeredConcurrency, p, float64(lp.Concurrency))
	}
	if lp.ServingMetrics != nil {
		c.serving1(b, p, lp.ServingMetrics)
	}
	b.stat(c.queue, p, lp.QueueMS)
	b.stat(c.dispatchLag, p, lp.DispatchLagMS)
	b.stat(c.ttftFromSchedule, p, lp.TTFTFromScheduleMS)
	b.stat(c.e2eFromSchedule, p, lp.E2EFromScheduleMS)
	b.opt(c.achievedRate, p, lp.AchievedRatePerS)
	b.opt(c.throughput, p, lp.RequestThroughputPerS)
	b.opt(c.outputTokens, p, lp.OutputTokensPerS)
	b.opt(c.totalTokens, p, lp.TotalTokensPerS)
	b.opt(c.achievedConcurrency, p, lp.AchievedConcurrency)
	b.add(c.peakInFlight, p, float64(lp.PeakInFlight))
	if g := lp.Goodput; g != nil && g.AttainedPct != nil {
		b.add(c.goodput, p, *g.AttainedPct/100)
	}
	if lp.DurationS > 0 {
		b.add(c.pointDuration, p, lp.DurationS)
	}
}

func (c *catalog) capacity(b *builder, p place, cp *report.Capacity) {
	f, found := c.capacityRate, cp.MaxRatePerS
	if cp.By == "concurrency" {
		f = c.capacityConcurrency
		if cp.MaxConcurrency != nil {
			v := float64(*cp.MaxConcurrency)
			found = &v
		}
	}
	b.opt(f, p, found, "found")
	b.opt(f, p, cp.Interval.Low, "interval_low")
	b.opt(f, p, cp.Interval.High, "interval_high")
	b.add(c.capacityConfirmed, p, bool01(cp.Confirmed))
	b.add(c.probes, p, float64(cp.ProbeCount))
}

func (c *catalog) seam(b *builder, p place, m *report.SeamMetrics) {
	b.add(c.seamTransfers, p, float64(m.Transfers))
	b.stat(c.seamLatency, p, m.SeamLatencyMS)
	b.stat(c.seamQueueWait, p, m.QueueWaitMS)
	b.opt(c.seamTokens, p, m.TokensPerS)
	b.add(c.seamPayload, p, float64(m.PayloadBytes))
	b.add(c.seamWire, p, float64(m.WireBytes))
	b.opt(c.seamRatio, p, m.CompressionRatio)
}
