package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/internal/suggest"
)

// Fault kinds, for Fault.Kind.
const (
	// FaultHTTP429 answers 429 with Retry-After and an OpenAI error body.
	FaultHTTP429 = "http_429"
	// FaultHTTP503 answers 503 with Retry-After and an OpenAI error body.
	FaultHTTP503 = "http_503"
	// FaultHTTP500 answers 500 with an OpenAI error body.
	FaultHTTP500 = "http_500"
	// FaultResetBeforeHeaders resets the TCP connection before any response byte.
	FaultResetBeforeHeaders = "reset_before_headers"
	// FaultResetMidStream sends AfterTokens token events, then resets the
	// connection (a non-streamed answer is cut after half its body).
	FaultResetMidStream = "reset_mid_stream"
	// FaultStall sends nothing for Stall after AfterTokens token events,
	// then finishes normally.
	FaultStall = "stall"
	// FaultSlowTrickle writes the whole response a few bytes at a time with
	// TrickleInterval between writes.
	FaultSlowTrickle = "slow_trickle"
	// FaultMalformedJSON adds one data line that is not JSON after
	// AfterTokens token events (a non-streamed body is truncated instead).
	FaultMalformedJSON = "malformed_json"
	// FaultMissingDataPrefix sends token event AfterTokens without "data: ".
	FaultMissingDataPrefix = "missing_data_prefix"
	// FaultInvalidUTF8 puts invalid UTF-8 bytes into the content of token
	// event AfterTokens.
	FaultInvalidUTF8 = "invalid_utf8"
	// FaultHugeLine adds one 10 MB data line after AfterTokens token events.
	FaultHugeLine = "huge_line"
	// FaultMissingUsage omits the usage chunk that include_usage asked for.
	FaultMissingUsage = "missing_usage"
	// FaultMissingDone ends the stream without "data: [DONE]".
	FaultMissingDone = "missing_done"
	// FaultWrongContentType answers 200 with a text/plain body that is
	// neither SSE nor JSON.
	FaultWrongContentType = "wrong_content_type"
)

// Defaults for zero Fault fields that the kind uses.
const (
	DefaultFaultRetryAfter      = time.Second
	DefaultFaultStall           = 5 * time.Second
	DefaultFaultTrickleInterval = 10 * time.Millisecond
	DefaultFaultAfterTokens     = 1
)

const (
	// hugeLineBytes is the size of a huge_line data line: well over any
	// sane client line cap (tollgate's default is 4 MiB).
	hugeLineBytes = 10 << 20
	// trickleChunkBytes is what slow_trickle writes at a time.
	trickleChunkBytes = 16
	// faultSeedSalt keeps fault draws independent of the text generator,
	// which uses the same Config.Seed.
	faultSeedSalt = 0x6a09e667f3bcc909
)

// faultKind is a Fault.Kind as an index into faultKinds, for counters.
type faultKind int

const (
	fkHTTP429 faultKind = iota
	fkHTTP503
	fkHTTP500
	fkResetBeforeHeaders
	fkResetMidStream
	fkStall
	fkSlowTrickle
	fkMalformedJSON
	fkMissingDataPrefix
	fkInvalidUTF8
	fkHugeLine
	fkMissingUsage
	fkMissingDone
	fkWrongContentType
	numFaultKinds
)

// faultKinds names every faultKind, in order.
var faultKinds = [numFaultKinds]string{
	FaultHTTP429, FaultHTTP503, FaultHTTP500, FaultResetBeforeHeaders,
	FaultResetMidStream, FaultStall, FaultSlowTrickle, FaultMalformedJSON,
	FaultMissingDataPrefix, FaultInvalidUTF8, FaultHugeLine, FaultMissingUsage,
	FaultMissingDone, FaultWrongContentType,
}

func parseFaultKind(s string) (faultKind, bool) {
	for i, k := range faultKinds {
		if k == s {
			return faultKind(i), true
		}
	}
	return 0, false
}

// Fault makes some generation requests (/v1/chat/completions and
// /v1/completions) misbehave on purpose, so clients' error handling can be
// tested. Other endpoints are never affected.
//
// Generation requests that pass validation are numbered from 1 in arrival
// order (the count in Stats.Requests). Each gets at most one fault: the first
// listed Fault that selects it and applies to it. Kinds that only make sense
// in a stream (stall, missing_data_prefix, invalid_utf8, huge_line,
// missing_usage, missing_done) never apply to non-streamed requests.
type Fault struct {
	// Kind is one of the Fault* constants, e.g. "http_429".
	Kind string
	// Probability selects each request independently with this chance, in
	// (0, 1]. Draws come from a generator seeded with Config.Seed and the
	// request number, so the same request sequence gets the same faults.
	Probability float64
	// EveryNth selects requests N, 2N, 3N, ... Set exactly one of
	// Probability and EveryNth.
	EveryNth int
	// RetryAfter is the Retry-After header of http_429 and http_503, sent in
	// whole seconds rounded up (DefaultFaultRetryAfter when 0).
	RetryAfter time.Duration
	// Stall is how long stall sends nothing (DefaultFaultStall when 0).
	Stall time.Duration
	// TrickleInterval is slow_trickle's delay between tiny writes
	// (DefaultFaultTrickleInterval when 0).
	TrickleInterval time.Duration
	// AfterTokens is the number of token events sent before a mid-stream
	// fault (reset_mid_stream, stall, malformed_json, missing_data_prefix,
	// invalid_utf8, huge_line) strikes; DefaultFaultAfterTokens when 0. A
	// response with fewer tokens gets the fault at its last token.
	AfterTokens int
}

// uses reports which optional Fault fields kind k reads, for defaults and
// for rejecting fields that would silently do nothing.
func (k faultKind) uses() (retryAfter, stall, trickle, afterTokens bool) {
	switch k {
	case fkHTTP429, fkHTTP503:
		return true, false, false, false
	case fkStall:
		return false, true, false, true
	case fkSlowTrickle:
		return false, false, true, false
	case fkResetMidStream, fkMalformedJSON, fkMissingDataPrefix, fkInvalidUTF8, fkHugeLine:
		return false, false, false, true
	}
	return false, false, false, false
}

// streamOnly reports kinds that have no meaning for a non-streamed response.
func (k faultKind) streamOnly() bool {
	switch k {
	case fkStall, fkMissingDataPrefix, fkInvalidUTF8, fkHugeLine, fkMissingUsage, fkMissingDone:
		return true
	}
	return false
}

// withFaultDefaults returns a copy of faults (so the caller's slice is never
// aliased) with zero fields that the kind uses filled in.
func withFaultDefaults(faults []Fault) []Fault {
	if len(faults) == 0 {
		return nil
	}
	out := append([]Fault(nil), faults...)
	for i := range out {
		f := &out[i]
		k, ok := parseFaultKind(f.Kind)
		if !ok {
			continue // reported by validate
		}
		retryAfter, stall, trickle, afterTokens := k.uses()
		if retryAfter && f.RetryAfter == 0 {
			f.RetryAfter = DefaultFaultRetryAfter
		}
		if stall && f.Stall == 0 {
			f.Stall = DefaultFaultStall
		}
		if trickle && f.TrickleInterval == 0 {
			f.TrickleInterval = DefaultFaultTrickleInterval
		}
		if afterTokens && f.AfterTokens == 0 {
			f.AfterTokens = DefaultFaultAfterTokens
		}
	}
	return out
}

// validateFaults reports every problem of every fault.
func validateFaults(faults []Fault) []error {
	var errs []error
	for i, f := range faults {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("sim: Faults[%d] (%s): %s", i, f.Kind, fmt.Sprintf(format, args...)))
		}
		k, ok := parseFaultKind(f.Kind)
		if !ok {
			if s := suggestKind(f.Kind); s != "" {
				bad("unknown kind %q (did you mean %q?)", f.Kind, s)
			} else {
				bad("unknown kind %q (valid kinds: %s)", f.Kind, strings.Join(faultKinds[:], ", "))
			}
		}
		switch {
		case f.Probability != 0 && f.EveryNth != 0:
			bad("set exactly one of Probability and EveryNth, not both")
		case f.Probability == 0 && f.EveryNth == 0:
			bad("set exactly one of Probability and EveryNth")
		case f.EveryNth < 0:
			bad("EveryNth must be positive, got %d", f.EveryNth)
		case f.EveryNth == 0 && !(f.Probability > 0 && f.Probability <= 1): // NaN fails too
			bad("Probability must be in (0, 1], got %v", f.Probability)
		}
		if f.RetryAfter < 0 {
			bad("RetryAfter must not be negative, got %v", f.RetryAfter)
		}
		if f.Stall < 0 {
			bad("Stall must not be negative, got %v", f.Stall)
		}
		if f.TrickleInterval < 0 {
			bad("TrickleInterval must not be negative, got %v", f.TrickleInterval)
		}
		if f.AfterTokens < 0 {
			bad("AfterTokens must not be negative, got %d", f.AfterTokens)
		}
		if !ok {
			continue
		}
		retryAfter, stall, trickle, afterTokens := k.uses()
		if !retryAfter && f.RetryAfter != 0 {
			bad("RetryAfter applies only to %s and %s", FaultHTTP429, FaultHTTP503)
		}
		if !stall && f.Stall != 0 {
			bad("Stall applies only to %s", FaultStall)
		}
		if !trickle && f.TrickleInterval != 0 {
			bad("TrickleInterval applies only to %s", FaultSlowTrickle)
		}
		if !afterTokens && f.AfterTokens != 0 {
			bad("AfterTokens applies only to mid-stream kinds")
		}
	}
	return errs
}

// suggestKind returns the valid kind closest to s, or "" when none is close.
func suggestKind(s string) string {
	norm := strings.ToLower(strings.NewReplacer("-", "_", " ", "_").Replace(strings.TrimSpace(s)))
	best, bestD := "", math.MaxInt
	for _, k := range faultKinds {
		if d := suggest.Distance(norm, k); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= max(2, len(best)/3) {
		return best
	}
	return ""
}

// faultPlan decides and counts a Server's faults.
type faultPlan struct {
	faults   []Fault // defaults applied
	kinds    []faultKind
	seed     uint64
	injected [numFaultKinds]atomic.Int64
	// filler is a run of spaces written repeatedly for huge_line, so a 10 MB
	// line costs no 10 MB allocation. Shared read-only; nil unless needed.
	filler []byte
}

func newFaultPlan(cfg *Config) *faultPlan {
	p := &faultPlan{faults: cfg.Faults, seed: uint64(cfg.Seed) ^ faultSeedSalt}
	for _, f := range cfg.Faults {
		k, _ := parseFaultKind(f.Kind) // validated
		p.kinds = append(p.kinds, k)
		if k == fkHugeLine && p.filler == nil {
			p.filler = []byte(strings.Repeat("x", 64<<10))
		}
	}
	return p
}

// activeFault is the fault chosen for one request.
type activeFault struct {
	kind faultKind
	Fault
}

// pick returns the fault for request n (1-based), or nil. Every probability
// fault draws whether or not an earlier one matched, so adding an EveryNth
// fault in front does not reshuffle the draws of the others.
func (p *faultPlan) pick(n int64, streaming bool) *activeFault {
	if len(p.faults) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(p.seed, uint64(n)))
	var chosen *activeFault
	for i, f := range p.faults {
		var hit bool
		if f.EveryNth > 0 {
			hit = n%int64(f.EveryNth) == 0
		} else {
			hit = rng.Float64() < f.Probability
		}
		k := p.kinds[i]
		if hit && chosen == nil && (streaming || !k.streamOnly()) {
			chosen = &activeFault{kind: k, Fault: f}
		}
	}
	return chosen
}

// count records that a fault changed a response.
func (p *faultPlan) count(k faultKind) { p.injected[k].Add(1) }

// snapshot returns the injection counts of the configured kinds (zeros
// included, so dashboards see every configured series), or nil.
func (p *faultPlan) snapshot() map[string]int64 {
	if len(p.faults) == 0 {
		return nil
	}
	m := make(map[string]int64, len(p.kinds))
	for _, k := range p.kinds {
		m[faultKinds[k]] = p.injected[k].Load()
	}
	return m
}

// errFaultEnd ends a response that a fault cut short on purpose: it is
// neither a success nor a client abort.
var errFaultEnd = errors.New("sim: response ended by an injected fault")

// writeStatusFault answers an http_429/503/500 fault.
func writeStatusFault(w http.ResponseWriter, f *activeFault) {
	msg := "tollgate-sim injected fault " + faultKinds[f.kind] + ": "
	var e *httpError
	switch f.kind {
	case fkHTTP429:
		code := "rate_limit_exceeded"
		e = &httpError{status: http.StatusTooManyRequests, api: apiError{Message: msg + "rate limit reached, retry later", Type: "requests", Code: &code}}
	case fkHTTP503:
		e = &httpError{status: http.StatusServiceUnavailable, api: apiError{Message: msg + "the engine is currently overloaded, please try again later", Type: "server_error"}}
	default:
		e = &httpError{status: http.StatusInternalServerError, api: apiError{Message: msg + "the server had an error while processing your request", Type: "server_error"}}
	}
	if f.kind == fkHTTP429 || f.kind == fkHTTP503 {
		secs := (f.RetryAfter + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", fmt.Sprint(int64(secs)))
	}
	writeHTTPError(w, e)
}

// writeWrongContentType answers 200 with a body no OpenAI client can parse.
func writeWrongContentType(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("tollgate-sim injected fault wrong_content_type: this is neither an event stream nor JSON\n"))
}

// abortConn drops the connection without a proper end: on HTTP/1.x the
// socket is closed with SO_LINGER 0, so the peer gets a TCP RST; where the
// connection cannot be hijacked (HTTP/2, a wrapping ResponseWriter) net/http
// aborts the stream itself on http.ErrAbortHandler.
func abortConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
