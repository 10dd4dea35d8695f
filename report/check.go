package report

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/schema"
	"github.com/tollgate-dev/tollgate/stats"
)

// ErrInvalidReport marks a saved report that fails the report schema or
// its own invariants (a p50 above its max, counts that do not add up): a
// file no reader can trust. A CheckError wraps it, and ErrNotReport too,
// so every command refuses it as bad input (exit 2).
var ErrInvalidReport = errors.New("the report fails its checks")

// Violation is one thing wrong in a saved report: where (a JSON pointer,
// /runs/server/phases/load/points/0/ttft_ms) and what.
type Violation struct {
	Path    string
	Message string
}

func (v Violation) String() string { return v.Path + ": " + v.Message }

// CheckError is a saved report that fails Check.
type CheckError struct {
	Violations []Violation
}

// maxViolationsShown bounds the violations an error lists.
const maxViolationsShown = 10

func (e *CheckError) Error() string {
	if len(e.Violations) == 1 {
		return e.Violations[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", ErrInvalidReport)
	for i, v := range e.Violations {
		if i == maxViolationsShown {
			fmt.Fprintf(&b, "\n  … and %d more", len(e.Violations)-maxViolationsShown)
			break
		}
		b.WriteString("\n  " + v.String())
	}
	return b.String()
}

func (e *CheckError) Unwrap() []error { return []error{ErrInvalidReport, ErrNotReport} }

// Check checks a report, decoded as generic JSON (map[string]any …),
// against the report schema and its own invariants, and returns what is
// wrong (nil: nothing). A field the schema does not know, where it closes
// an object (additionalProperties false), is a violation at its own
// pointer: a report of this schema_version has exactly these keys, and a
// newer format has a newer schema_version. The invariants, which the
// schema cannot say:
//
//   - every statistic (an object with count and quantiles): min ≤ p50 ≤
//     p90 ≤ p95 ≤ p99 ≤ max and min ≤ mean ≤ max (within 0.05 % past 1,024
//     samples, where the quantiles come from a histogram), only count over
//     zero samples, and its histogram's count equal to count;
//   - every request tally (requests, succeeded, errors): succeeded +
//     errors.count = requests, errors.count = Σ errors.by_class, 0 ≤
//     errors.rate ≤ 1, and ttfb_ms, ttft_ms, e2e_ms over at most requests
//     samples;
//   - every rate (a number whose key ends in _per_s) ≥ 0;
//   - every load point's window in order: first_send ≤ last_send ≤
//     last_end; started_at ≤ ended_at; a shard's index below its count.
//
// Vars, target config and metadata, scenario identity and the server's
// own metrics are the user's or the server's and are not checked.
func Check(v any) []Violation {
	probs, err := schema.ReportProblems(v)
	if err != nil {
		return []Violation{{Path: "/", Message: "internal: " + err.Error()}}
	}
	var out []Violation
	for _, p := range probs {
		if p.Keyword == "additionalProperties" && len(p.Properties) > 0 {
			// Each unknown field by its own pointer: a misspelt or foreign
			// key is refused, not read past (a reader would trust a
			// report whose fields it silently ignored).
			for _, k := range p.Properties {
				out = append(out, Violation{Path: pointer(append(slices.Clip(p.Path), k)),
					Message: fmt.Sprintf("unknown field %q: the report schema (schema_version %d) has no such key", k, SchemaVersion)})
			}
			continue
		}
		out = append(out, Violation{Path: pointer(p.Path), Message: p.Message})
	}
	if len(out) == 0 {
		// Where the schema leaves an object open, the report's own types
		// close it: a key neither knows is a field no reader would read.
		unknownFields(reflect.TypeFor[Report](), v, nil, &out)
	}
	if len(out) > 0 {
		return out // the invariants read what the schema guarantees
	}
	c := checker{}
	c.walk(nil, v)
	if m, ok := v.(map[string]any); ok {
		c.top(m)
	}
	return c.out
}

// Pointer is the JSON pointer (RFC 6901) of a report's path, one token
// each (runs, sim, phases, load, points, 0).
func Pointer(tokens ...string) string { return pointer(tokens) }

// pointer is a JSON pointer (RFC 6901) of path.
func pointer(path []string) string {
	if len(path) == 0 {
		return "/"
	}
	esc := make([]string, len(path))
	for i, p := range path {
		esc[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1")
	}
	return "/" + strings.Join(esc, "/")
}

type checker struct{ out []Violation }

func (c *checker) add(path []string, format string, a ...any) {
	c.out = append(c.out, Violation{Path: pointer(path), Message: fmt.Sprintf(format, a...)})
}

// unchecked are keys whose values are the user's or the server's.
var unchecked = map[string]bool{
	"vars": true, "config": true, "metadata": true, "identity": true, "params": true,
	"server_metrics": true, "server_metrics_delta": true, "histogram": true,
	"repetitions": true, // statistics across repetitions, of another form
}

func (c *checker) walk(path []string, v any) {
	switch x := v.(type) {
	case map[string]any:
		if isStat(x) {
			c.stat(path, x)
		}
		if isTally(x) {
			c.tally(path, x)
		}
		if isWindow(x) {
			c.window(path, x)
		}
		if path != nil && path[len(path)-1] == "dataset" {
			c.dataset(path, x)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if unchecked[k] {
				continue
			}
			p := append(slices.Clip(path), k)
			if n, ok := x[k].(float64); ok && strings.HasSuffix(k, "_per_s") && n < 0 {
				c.add(p, "a rate below 0 (%v)", n)
			}
			c.walk(p, x[k])
		}
	case []any:
		for i, e := range x {
			c.walk(append(slices.Clip(path), strconv.Itoa(i)), e)
		}
	}
}

// statOrder is a statistic's fields that never decrease, in order.
var statOrder = []string{"min", "p50", "p90", "p95", "p99", "max"}

func isStat(m map[string]any) bool {
	if _, ok := m["count"].(float64); !ok {
		return false
	}
	for _, k := range statOrder {
		if _, ok := m[k].(float64); ok {
			return true
		}
	}
	_, ok := m["histogram"]
	return ok
}

func (c *checker) stat(path []string, m map[string]any) {
	count := m["count"].(float64)
	if count == 0 {
		for _, k := range append([]string{"mean"}, statOrder...) {
			if _, ok := m[k]; ok {
				c.add(path, "count is 0 but %s is present (a statistic over no samples is absent)", k)
				return
			}
		}
	}
	tol := 1e-9
	if count > stats.ExactLimit {
		tol = stats.RelativeError
	}
	above := func(a, b float64) bool { return a > b+tol*math.Max(math.Abs(a), math.Abs(b)) }
	prevKey, prev := "", 0.0
	for _, k := range statOrder {
		x, ok := m[k].(float64)
		if !ok {
			continue
		}
		if prevKey != "" && above(prev, x) {
			c.add(path, "%s (%v) is above %s (%v)", prevKey, prev, k, x)
		}
		prevKey, prev = k, x
	}
	if mean, ok := m["mean"].(float64); ok {
		if lo, ok := m["min"].(float64); ok && above(lo, mean) {
			c.add(path, "mean (%v) is below min (%v)", mean, lo)
		}
		if hi, ok := m["max"].(float64); ok && above(mean, hi) {
			c.add(path, "mean (%v) is above max (%v)", mean, hi)
		}
	}
	if h, ok := m["histogram"].(map[string]any); ok {
		if hc, ok := h["count"].(float64); ok && hc != count {
			c.add(append(slices.Clip(path), "histogram", "count"), "%v, but the statistic's count is %v", hc, count)
		}
	}
}

func isTally(m map[string]any) bool {
	_, r := m["requests"].(float64)
	_, s := m["succeeded"].(float64)
	e, _ := m["errors"].(map[string]any)
	_, ec := e["count"].(float64)
	return r && s && ec
}

func (c *checker) tally(path []string, m map[string]any) {
	req, ok := m["requests"].(float64), m["succeeded"].(float64)
	errs := m["errors"].(map[string]any)
	n := errs["count"].(float64)
	if ok+n != req {
		c.add(path, "succeeded (%v) + errors.count (%v) is not requests (%v)", ok, n, req)
	}
	if by, isMap := errs["by_class"].(map[string]any); isMap {
		sum := 0.0
		for _, v := range by {
			if x, isNum := v.(float64); isNum {
				sum += x
			}
		}
		if sum != n {
			c.add(append(slices.Clip(path), "errors"), "count (%v) is not the sum of by_class (%v)", n, sum)
		}
	}
	if r, isNum := errs["rate"].(float64); isNum && (r < 0 || r > 1) {
		c.add(append(slices.Clip(path), "errors", "rate"), "%v is not a fraction of the requests (0 to 1)", r)
	}
	for _, k := range []string{"ttfb_ms", "ttft_ms", "e2e_ms"} {
		s, _ := m[k].(map[string]any)
		if cnt, isNum := s["count"].(float64); isNum && cnt > req {
			c.add(append(slices.Clip(path), k, "count"), "%v samples, more than the %v requests", cnt, req)
		}
	}
}

// dataset checks a phase's dataset counts: every item read is skipped,
// filtered or eligible. A report of a tollgate before "filtered" has
// none, and counted in read only the items not skipped.
func (c *checker) dataset(path []string, m map[string]any) {
	f, ok := m["filtered"].(float64)
	if !ok {
		return
	}
	read, _ := m["read"].(float64)
	skipped, _ := m["skipped"].(float64)
	eligible, _ := m["eligible"].(float64)
	if skipped+f+eligible != read {
		c.add(path, "skipped (%v) + filtered (%v) + eligible (%v) is not read (%v)", skipped, f, eligible, read)
	}
}

func isWindow(m map[string]any) bool {
	for _, k := range []string{"first_send", "last_send", "last_end"} {
		if _, ok := m[k].(string); !ok {
			return false
		}
	}
	return true
}

func (c *checker) window(path []string, m map[string]any) {
	var ts [3]time.Time
	for i, k := range []string{"first_send", "last_send", "last_end"} {
		t, err := time.Parse(time.RFC3339Nano, m[k].(string))
		if err != nil {
			c.add(append(slices.Clip(path), k), "not an RFC 3339 time: %v", err)
			return
		}
		ts[i] = t
	}
	if ts[1].Before(ts[0]) {
		c.add(path, "last_send (%s) is before first_send (%s)", m["last_send"], m["first_send"])
	}
	if ts[2].Before(ts[1]) {
		c.add(path, "last_end (%s) is before last_send (%s)", m["last_end"], m["last_send"])
	}
}

// top checks the report's own fields.
func (c *checker) top(m map[string]any) {
	s, e := m["started_at"].(string), m["ended_at"].(string)
	if ts, err1 := time.Parse(time.RFC3339Nano, s); err1 == nil {
		if te, err2 := time.Parse(time.RFC3339Nano, e); err2 == nil && te.Before(ts) {
			c.add([]string{"ended_at"}, "%s is before started_at (%s)", e, s)
		}
	}
	shard := func(path []string, v any) {
		in, _ := v.(map[string]any)
		i, ok1 := in["index"].(float64)
		n, ok2 := in["count"].(float64)
		if ok1 && ok2 && i >= n {
			c.add(append(path, "index"), "shard %v of %v: the index must be below the count", i, n)
		}
	}
	if v, ok := m["shard"]; ok {
		shard([]string{"shard"}, v)
	}
	list, _ := m["shards"].([]any)
	for i, v := range list {
		shard([]string{"shards", strconv.Itoa(i)}, v)
	}
}
