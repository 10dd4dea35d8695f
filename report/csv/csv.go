// Package csv writes every sample of a tollgate report as one CSV table.
// It reads only the report, so it writes the same bytes for a report built
// in-process and one decoded from JSON; golden files under testdata pin the
// format, which once shipped only grows, so scripts that parse it keep
// working.
package csv

import (
	stdcsv "encoding/csv"
	"fmt"
	"io"
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
//     seam … connection_attempted (columns 24–45).
//
// Columns that do not apply to a row's kind, and values a sample does not
// have (the TTFT of a request that failed before its first token), are
// empty, never 0. Numbers are plain decimals without exponents; durations
// are milliseconds. Once shipped the header only grows, at the end.
func Header() []string {
	return []string{
		"kind", "run", "phase", "point", "index", "ok", "error_class", "http_status",
		"ttfb_ms", "ttft_ms", "e2e_ms", "tpot_ms", "decode_tokens_per_s", "prefill_tokens_per_s",
		"prompt_tokens", "completion_tokens", "cached_tokens", "sse_token_events", "start_ms",
		"bytes_received", "token_count_source", "finish_reason", "error_message",
		"seam", "session_id", "activation_id", "mode", "cache_mode", "virtual_start_ms",
		"model_ms", "encode_ms", "framing_ms", "metadata_ms", "copy_allocation_ms", "copy_allocation_bytes",
		"compression_ms", "decompression_ms", "connection_setup_ms", "queue_wait_ms", "transport_ms",
		"seam_latency_ms", "payload_bytes", "wire_bytes", "compression_ratio", "connection_attempted",
	}
}

// csvSeamStart is the index of the first seam column ("seam"), csvWidth the
// number of columns; a test holds them to Header.
const (
	csvSeamStart = 23
	csvWidth     = 45
)

// Write writes every sample of the report, run by run in run order and phase by
// phase in phase order, under Header. A report kept without samples
// (report.samples: false) gives the header alone.
func Write(w io.Writer, r *report.Report) error {
	r = view.Sanitized(r) // the writer quotes, but a control byte would still reach whoever cats the file
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
	copy(row, []string{
		"request", run, phaseName, s.Point, strconv.Itoa(s.Index), strconv.FormatBool(s.OK), class, intOrEmpty(s.HTTPStatus),
		optF(s.TTFBMS), optF(s.TTFTMS), fmtF(s.E2EMS), optF(s.TPOTMS), optF(s.DecodeTokensPerS), optF(s.PrefillTokensPerS),
		optI(s.PromptTokens), optI(s.CompletionTokens), optI(s.CachedTokens), strconv.Itoa(s.SSETokenEvents), fmtF(s.StartMS),
		strconv.FormatInt(s.BytesReceived, 10), s.TokenCountSource, s.FinishReason, msg,
	})
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

func optF(p *float64) string {
	if p == nil {
		return ""
	}
	return fmtF(*p)
}

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
