package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/tollgate-dev/tollgate/engine/live"
	"github.com/tollgate-dev/tollgate/report"
)

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressLine redraws one status line per load point on a terminal.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
	last  string
}

func newProgressLine(w io.Writer) *progressLine {
	_, noColor := os.LookupEnv("NO_COLOR")
	return &progressLine{w: w, color: !noColor && os.Getenv("TERM") != "dumb"}
}

func (p *progressLine) update(pr live.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := pr.Run + "/" + pr.Phase + "/" + pr.Point
	if p.last != "" && p.last != key {
		fmt.Fprintln(p.w)
	}
	p.last = key
	total := "?"
	if pr.Total > 0 {
		total = fmt.Sprint(pr.Total)
	}
	rate := 0.0
	if s := pr.Elapsed.Seconds(); s > 0 {
		rate = float64(pr.Done) / s
	}
	errs := fmt.Sprintf("errors %d", pr.Errors)
	if pr.Errors > 0 && p.color {
		errs = "\x1b[31m" + errs + "\x1b[0m"
	}
	ttft := "-"
	if pr.TTFTP50MS != nil {
		ttft = fmt.Sprintf("%.1f ms", *pr.TTFTP50MS)
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s %s %s  %d/%s  %.1fs  %.1f req/s  in flight %d  %s  ttft p50 %s",
		pr.Run, pr.Phase, pr.Point, pr.Done, total, pr.Elapsed.Seconds(), rate, pr.InFlight, errs, ttft)
}

func (p *progressLine) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last != "" {
		fmt.Fprintln(p.w)
		p.last = ""
	}
}

// sampleWriter streams request samples as JSON lines, so a long run keeps
// none of them in memory. The first write error is kept and reported.
type sampleWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

func (s *sampleWriter) write(run string, smp report.RequestSample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	s.err = s.enc.Encode(struct {
		Run string `json:"run"`
		report.RequestSample
	}{run, smp})
}
