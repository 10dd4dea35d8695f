package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// statNames are the statistics a threshold may name. "value" is the statistic
// of a single-valued metric (speedup, a seam phase's tokens_per_s, errors.rate).
func statNames() []string {
	return []string{"p50", "p90", "p95", "p99", "mean", "min", "max", "value"}
}

func isStat(s string) bool {
	for _, n := range statNames() {
		if s == n {
			return true
		}
	}
	return false
}

// Threshold is one --fail-on rule, written METRIC.STAT:±N%:
//
//	ttft_ms.p50:+10%                 fail when any ttft_ms p50 rises more than 10%
//	decode_tokens_per_s.p50:-5%      fail when any decode_tokens_per_s p50 drops more than 5%
//	prefill.256.ttft_ms.p95:+20%     only the 256-token prompt size of phase prefill
//	direct/cached.decode.seam_latency_ms.p50:+0.1% any rise beyond 0.1%
//	speedup.value:-10%               single-valued metrics use the statistic "value"
//
// The sign says which way is bad, whatever the metric's usual direction.
// METRIC selects metrics by path: its segments (separated by dots, or written
// ["quoted"] when they hold dots) must appear in order in the metric's path,
// the last one as the metric's own name. So ttft_ms selects every ttft_ms in
// the report, decode.ttft_ms those under phase decode, and the full gate path
// runs["a/b"].phases.decode.ttft_ms exactly one.
type Threshold struct {
	Raw      string   // as written
	Selector []string // path segments, the metric name last
	Stat     string   // p50, p90, p95, p99, mean, min, max or value
	Percent  float64  // N, > 0
	Increase bool     // + (fail on a rise) or - (fail on a drop)
}

// ParseThreshold parses METRIC.STAT:±N%.
func ParseThreshold(s string) (Threshold, error) {
	t := Threshold{Raw: s}
	bad := func(format string, a ...any) (Threshold, error) {
		return Threshold{}, fmt.Errorf("--fail-on %q: %s (want METRIC.STAT:±N%%, e.g. ttft_ms.p50:+10%% or decode_tokens_per_s.p50:-5%%)", s, fmt.Sprintf(format, a...))
	}
	colon := strings.LastIndex(s, ":")
	if colon < 0 {
		return bad("no ':' before the percentage")
	}
	left, right := strings.TrimSpace(s[:colon]), strings.TrimSpace(s[colon+1:])
	if !strings.HasSuffix(right, "%") {
		return bad("the limit %q must end in %%", right)
	}
	num := strings.TrimSuffix(right, "%")
	switch {
	case strings.HasPrefix(num, "+"):
		t.Increase = true
	case strings.HasPrefix(num, "-"):
	default:
		return bad("the limit %q needs a sign: + fails on a rise, - on a drop", right)
	}
	p, err := strconv.ParseFloat(num[1:], 64)
	if err != nil || !plainDecimal(num[1:]) {
		return bad("%q is not a number", num[1:])
	}
	if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
		return bad("%q is not a finite percentage", num[1:])
	}
	if p == 0 {
		// Any noise at all breaches a 0% limit, so half of all unchanged
		// runs would be over it: no test can ever clear it.
		return bad("a limit of 0%% is breached by any noise; give the smallest change that matters, e.g. %s1%% (%s0.1%% for exact seam metrics)", num[:1], num[:1])
	}
	t.Percent = p
	segs, err := splitPath(left)
	if err != nil {
		return bad("%v", err)
	}
	if len(segs) < 2 {
		return bad("%q names no statistic: end the metric with .p50, .p95, .mean, … (.value for single-valued metrics)", left)
	}
	stat := segs[len(segs)-1]
	if !isStat(stat) {
		return bad("%q is not a statistic (one of %s)", stat, strings.Join(statNames(), ", "))
	}
	t.Stat, t.Selector = stat, segs[:len(segs)-1]
	if isStat(t.Selector[len(t.Selector)-1]) {
		return bad("two statistics in %q", left)
	}
	return t, nil
}

// splitPath splits a.b["c.d"].e into a, b, c.d, e. A leading runs. or
// runs[...] is kept: it is a segment like any other.
func splitPath(s string) ([]string, error) {
	var segs []string
	i := 0
	if s == "" {
		return nil, fmt.Errorf("empty metric")
	}
	for i < len(s) {
		switch {
		case s[i] == '[':
			end := strings.Index(s[i:], "]")
			if end < 0 {
				return nil, fmt.Errorf("unclosed [ in %q", s)
			}
			seg, err := strconv.Unquote(s[i+1 : i+end])
			if isIndex(s[i+1 : i+end]) {
				// points[1], as the table prints a load point's path.
				seg, err = s[i+1:i+end], nil
			}
			if err != nil {
				return nil, fmt.Errorf("bad quoted segment %s in %q", s[i:i+end+1], s)
			}
			segs = append(segs, seg)
			i += end + 1
			if i < len(s) && s[i] == '.' {
				i++
				if i == len(s) {
					return nil, fmt.Errorf("%q ends with '.'", s)
				}
			}
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("empty segment in %q", s)
			}
			segs = append(segs, s[i:j])
			i = j
			if i < len(s) && s[i] == '.' {
				i++
				if i == len(s) {
					return nil, fmt.Errorf("%q ends with '.'", s)
				}
			}
		}
	}
	return segs, nil
}

// matches reports whether the selector's segments appear in order in path,
// the last one as path's last segment.
func (t Threshold) matches(path []string) bool {
	sel := t.Selector
	if len(sel) == 0 || len(path) == 0 || sel[len(sel)-1] != path[len(path)-1] {
		return false
	}
	j := 0
	for _, p := range path[:len(path)-1] {
		if j < len(sel)-1 && p == sel[j] {
			j++
		}
	}
	return j == len(sel)-1
}

// exceeds reports whether a change of pct percent is beyond the threshold in
// its bad direction. A change from 0 is ±Inf.
func (t Threshold) exceeds(pct float64) bool {
	if t.Increase {
		return pct > t.Percent
	}
	return pct < -t.Percent
}

func (t Threshold) String() string { return t.Raw }

// plainDecimal reports whether s is digits with at most one decimal point
// (no exponent, sign, hex, inf or NaN).
func plainDecimal(s string) bool {
	digits, dots := 0, 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}
