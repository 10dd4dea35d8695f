// Command agree pairs each request's client-side figures with what the
// server said about the same request (llama.cpp's timings) and prints how
// far apart they are, request by request: the check that tollgate measures
// a real server truthfully.
//
//	go run ./bench/peers/agree REPORT.json|SAMPLES.jsonl ...
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/stats"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agree:", err)
		os.Exit(1)
	}
}

func run(files []string, w io.Writer) error {
	if len(files) == 0 {
		return errors.New("give reports (with samples) or --samples-out files")
	}
	var samples []report.RequestSample
	for _, f := range files {
		s, err := read(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		samples = append(samples, s...)
	}
	var prefill, decode, tpot []float64
	paired, tokensEqual, tokensCompared := 0, 0, 0
	for _, s := range samples {
		sv := s.Server
		if !s.OK || sv == nil {
			continue
		}
		paired++
		if s.TTFTMS != nil && s.TTFBMS != nil && sv.PromptMs != nil {
			// Headers leave before prefill ends; the first token after it.
			prefill = append(prefill, *s.TTFTMS-*s.TTFBMS-*sv.PromptMs)
		}
		if s.DecodeTokensPerS != nil && sv.PredictedPerSecond != nil && *sv.PredictedPerSecond > 0 {
			decode = append(decode, 100*(*s.DecodeTokensPerS / *sv.PredictedPerSecond - 1))
		}
		if s.TPOTMS != nil && sv.PredictedPerTokenMs != nil && *sv.PredictedPerTokenMs > 0 {
			tpot = append(tpot, 100*(*s.TPOTMS / *sv.PredictedPerTokenMs - 1))
		}
		if s.CompletionTokens != nil && sv.PredictedN != nil && s.PromptTokens != nil && sv.PromptN != nil && sv.CacheN != nil {
			tokensCompared++
			if *s.CompletionTokens == *sv.PredictedN && *s.PromptTokens == *sv.PromptN+*sv.CacheN {
				tokensEqual++
			}
		}
	}
	fmt.Fprintf(w, "%d requests with server timings (of %d samples)\n", paired, len(samples))
	line(w, "ttft − ttfb − server prompt_ms (ms)", prefill)
	line(w, "|ttft − ttfb − server prompt_ms| (ms)", abs(prefill))
	line(w, "decode tok/s vs server predicted_per_second (%)", decode)
	line(w, "tpot vs server predicted_per_token_ms (%)", tpot)
	fmt.Fprintf(w, "token counts equal to the server's: %d of %d\n", tokensEqual, tokensCompared)
	if paired == 0 {
		return errors.New("no request carried server timings")
	}
	return nil
}

func abs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Abs(x)
	}
	return out
}

func line(w io.Writer, name string, xs []float64) {
	if len(xs) == 0 {
		fmt.Fprintf(w, "%-50s n=0\n", name)
		return
	}
	sort.Float64s(xs)
	fmt.Fprintf(w, "%-50s n=%-4d p50 %+.3f  p90 %+.3f  p99 %+.3f  max %+.3f\n", name, len(xs),
		stats.NearestRank(xs, 50), stats.NearestRank(xs, 90), stats.NearestRank(xs, 99), xs[len(xs)-1])
}

// read takes a JSON report (its kept samples) or JSON lines of samples.
func read(path string) ([]report.RequestSample, error) {
	if strings.HasSuffix(path, ".jsonl") {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		var out []report.RequestSample
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			// A --samples-out line is a sample with its run's name beside.
			var smp report.RequestSample
			if err := json.Unmarshal(sc.Bytes(), &smp); err != nil {
				return nil, err
			}
			out = append(out, smp)
		}
		return out, sc.Err()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r struct {
		Runs map[string]struct {
			Phases map[string]struct {
				Samples []report.RequestSample `json:"samples"`
			} `json:"phases"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	var out []report.RequestSample
	for _, run := range r.Runs {
		for _, ph := range run.Phases {
			out = append(out, ph.Samples...)
		}
	}
	return out, nil
}
