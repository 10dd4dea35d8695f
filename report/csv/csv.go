// Package csv writes every sample of a tollgate report as one CSV table.
// It reads only the report, so it writes the same bytes for a report built
// in-process and one decoded from JSON; golden files under testdata pin the
// format, which once shipped only grows, so scripts that parse it keep
// working.
package csv

import (
	stdcsv "encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// Header returns the fixed header Write writes. One table holds both kinds
// of sample, and the first column, kind, says which columns a row fills:
//
//   - kind "request", a request to a live target (report.RequestSample):
//     kind … error_message (columns 1–23);
//   - kind "seam", an activation transfer over a seam (report.SeamSample):
//     kind, run, phase, index (the token index; empty for prefill), then
//     seam … connection_attempted (columns 24–45);
//   - kind "request" again for connect_ms, request_write_ms and
//     target_prompt_tokens (columns 46–48), added later at the end.
//
// A request row names its slice of the phase in point: the prompt size of
// a prefill phase ("512", the by_prompt_tokens key), the variant of a
// prefix_cache phase (fresh, identical, small_suffix), the load point of a
// load phase ("concurrency 8", "rate 4/s"; sweep points in order), empty
// for decode and requests phases. index counts requests within that slice
// (within the phase when there is none). start_ms is from the start of the
// phase (of the load point for load phases).
//
// Columns that do not apply to a row's kind, and values a sample does not
// have (the TTFT of a request that failed before its first token), are
// empty, never 0. Numbers are plain decimals without exponents; units are
// in the names (_ms milliseconds, _per_s per second, _tokens and _bytes
// counts). Once shipped the header only grows, at the end.
func Header() []string {
	h := append([]string{}, shippedHeader...)
	// Every per-request metric of report.Metrics is a column; those the
	// shipped header lacks follow it, in table order.
	for _, m := range report.Metrics {
		if m.Value != nil && !slices.Contains(h, m.Key) {
			h = append(h, m.Key)
		}
	}
	return h
}

// shippedHeader is the header as first shipped, which only grows.
var shippedHeader = []string{
	"kind", "run", "phase", "point", "index", "ok", "error_class", "http_status",
	"ttfb_ms", "ttft_ms", "e2e_ms", "tpot_ms", "decode_tokens_per_s", "prefill_tokens_per_s",
	"prompt_tokens", "completion_tokens", "cached_tokens", "sse_token_events", "start_ms",
	"bytes_received", "token_count_source", "finish_reason", "error_message",
	"seam", "session_id", "activation_id", "mode", "cache_mode", "virtual_start_ms",
	"model_ms", "encode_ms", "framing_ms", "metadata_ms", "copy_allocation_ms", "copy_allocation_bytes",
	"compression_ms", "decompression_ms", "connection_setup_ms", "queue_wait_ms", "transport_ms",
	"seam_latency_ms", "payload_bytes", "wire_bytes", "compression_ratio", "connection_attempted",
	"connect_ms", "request_write_ms", "target_prompt_tokens",
}

// metricColumns are the columns of the table's per-request metrics.
var metricColumns = func() map[int]report.Metric {
	out := map[int]report.Metric{}
	for i, k := range Header() {
		if m, ok := report.MetricByKey(k); ok && m.Value != nil {
			out[i] = m
		}
	}
	return out
}()

// csvSeamStart is the index of the first seam column ("seam"), csvWidth the
// number of columns; a test holds them to Header.
const (
	csvSeamStart  = 23
	csvLaterStart = 45 // request columns added after the seam ones
	csvShipped    = 48 // the shipped header; the table's further metrics follow
)

var csvWidth = len(Header())

// Write writes every sample of the report, run by run in run order and phase by
// phase in phase order, under Header: one row per request of every measured
// live phase (prefill, decode, prefix_cache, requests, load) and one per
// transfer of a seam phase. Warmup phases are counted, never measured, and
// give no rows.
//
// A phase that measured requests or transfers but kept no samples (the
// scenario had report.samples: false, or the report predates load phases
// keeping theirs) is refused with that reason, naming the phase, rather
// than written as a table that silently lacks it.
func Write(w io.Writer, r *report.Report) error {
	r = view.Sanitized(r) // the writer quotes, but a control byte would still reach whoever cats the file
	if err := checkKept(r); err != nil {
		return err
	}
	cw := stdcsv.NewWriter(w)
	if err := cw.Write(Header()); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	for _, rn := range r.RunNames() {
		run := r.Runs[rn]
		if run == nil {
			continue
		}
		for _, pn := range run.PhaseNames() {
			reqs, seams, err := report.PhaseSamples(run.Phases[pn], run.Target.Kind)
			if err != nil {
				return fmt.Errorf("CSV: run %s, phase %s: %w", rn, pn, err)
			}
			for _, s := range reqs {
				if err := cw.Write(requestRow(rn, pn, s)); err != nil {
					return fmt.Errorf("writing CSV: %w", err)
				}
			}
			for _, s := range seams {
				if err := cw.Write(seamRow(rn, pn, s)); err != nil {
					return fmt.Errorf("writing CSV: %w", err)
				}
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	return nil
}

// ErrNoSamples is what Write's refusal of a phase without samples wraps.
var ErrNoSamples = errors.New("the report keeps no samples for it")

// checkKept refuses a report with a measured phase whose samples are not
// in it.
func checkKept(r *report.Report) error {
	for _, rn := range r.RunNames() {
		run := r.Runs[rn]
		if run == nil {
			continue
		}
		for _, pn := range run.PhaseNames() {
			p := run.Phases[pn]
			if p == nil || p.Samples != nil || p.Kind == report.KindWarmup {
				continue
			}
			what, n := "requests", 0
			switch {
			case p.ServingMetrics != nil:
				n = p.Requests
			case p.SeamMetrics != nil:
				what, n = "transfers", p.Transfers
			}
			if n == 0 {
				continue
			}
			return fmt.Errorf("CSV: run %s, phase %s (%s) measured %d %s but %w: the scenario had report.samples: false, "+
				"or the report was written before %s phases kept samples; run it again with report.samples on "+
				"(the default), or stream the samples with tollgate run --samples-out", rn, pn, p.Kind, n, what, ErrNoSamples, p.Kind)
		}
	}
	return nil
}

func requestRow(run, phase string, s report.RequestSample) []string {
	row := make([]string, csvWidth)
	phaseName := s.Phase
	if phaseName == "" {
		phaseName = phase
	}
	var class, msg string
	if s.Error != nil {
		class, msg = s.Error.Class, s.Error.Message
	}
	copy(row, []string{"request", run, phaseName, s.Point, strconv.Itoa(s.Index), strconv.FormatBool(s.OK), class, intOrEmpty(s.HTTPStatus)})
	row[18], row[19], row[20], row[21], row[22] = fmtF(s.StartMS), strconv.FormatInt(s.BytesReceived, 10), s.TokenCountSource, s.FinishReason, msg
	row[csvShipped-1] = intOrEmpty(s.TargetPromptTokens)
	for i, m := range metricColumns {
		if v, ok := m.Value(&s); ok {
			row[i] = fmtF(v)
		}
	}
	return row
}

func seamRow(run, phase string, s report.SeamSample) []string {
	row := make([]string, csvWidth)
	phaseName := s.Phase
	if phaseName == "" {
		phaseName = phase
	}
	copy(row, []string{"seam", run, phaseName, "", optI(s.TokenIndex)})
	copy(row[csvSeamStart:], []string{
		s.Seam, s.SessionID, s.ActivationID, s.Mode, s.CacheMode, fmtF(s.VirtualStartMS),
		fmtF(s.ModelMS), fmtF(s.EncodeMS), fmtF(s.FramingMS), fmtF(s.MetadataMS), fmtF(s.CopyAllocationMS),
		strconv.FormatInt(s.CopyAllocationBytes, 10), fmtF(s.CompressionMS), fmtF(s.DecompressionMS),
		fmtF(s.ConnectionSetupMS), fmtF(s.QueueWaitMS), fmtF(s.TransportMS), fmtF(s.SeamLatencyMS),
		strconv.FormatInt(s.PayloadBytes, 10), strconv.FormatInt(s.WireBytes, 10), fmtF(s.CompressionRatio),
		strconv.FormatBool(s.ConnectionAttempted),
	})
	return row
}

func fmtF(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func optI(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

func intOrEmpty(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
