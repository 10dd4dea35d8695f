package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchStreams runs b.N rounds of `streams` concurrent streamed chat
// requests of `tokens` tokens each and reports the token events per second
// the clients received. Clients only count event boundaries, so the
// measurement is dominated by the simulator and the HTTP stack.
func benchStreams(b *testing.B, cfg Config, streams, tokens int) {
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	url, err := s.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}
	client := &http.Client{Transport: tr}
	defer func() {
		tr.CloseIdleConnections()
		if err := s.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
	}()
	bodies := make([][]byte, streams)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"messages":[{"role":"user","content":"stream %d"}],"stream":true,"max_tokens":%d,"ignore_eos":true}`, i, tokens)
	}
	wantEvents := int64(tokens + 3) // role, tokens, finish, [DONE]

	var events, failures atomic.Int64
	round := func() {
		var wg sync.WaitGroup
		for i := range streams {
			wg.Go(func() {
				n, err := countEvents(client, url+"/v1/chat/completions", bodies[i])
				if err != nil || n != wantEvents {
					failures.Add(1)
					return
				}
				events.Add(n - 3)
			})
		}
		wg.Wait()
	}
	round() // open the connections outside the measurement
	events.Store(0)
	start := time.Now()
	for b.Loop() {
		round()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failures.Load(); f > 0 {
		b.Fatalf("%d streams failed or were short", f)
	}
	b.ReportMetric(float64(events.Load())/elapsed.Seconds(), "events/s")
	// Ideal time per round from the latency model alone; 1.0 means the
	// simulator and HTTP stack added nothing measurable.
	ideal := s.cfg.TTFTBase + time.Duration(tokens-1)*s.sched.stepDuration(min(streams, s.cfg.MaxRunningSeqs))
	b.ReportMetric(ideal.Seconds()*float64(b.N)/elapsed.Seconds(), "model-fidelity")
}

// countEvents streams one request and counts its SSE events ("\n\n" ends one).
func countEvents(client *http.Client, url string, body []byte) (int64, error) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	var n int64
	var prev byte
	buf := make([]byte, 32<<10)
	for {
		k, err := resp.Body.Read(buf)
		chunk := buf[:k]
		if k > 0 && prev == '\n' && chunk[0] == '\n' {
			n++
		}
		n += int64(bytes.Count(chunk, []byte("\n\n")))
		if k > 0 {
			prev = chunk[k-1]
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// BenchmarkStreams2000 drives 2,000 concurrent streams.
//
// max-rate: 1 ms decode steps and no per-sequence cost ask for 2M events/s,
// far beyond what the host can push; events/s is the simulator's ceiling.
// default-timing: the default latency model with every stream running
// (2000-wide batch: 10 ms + 1999 × 50 µs steps); model-fidelity near 1 means
// the simulator is not the bottleneck at realistic load.
func BenchmarkStreams2000(b *testing.B) {
	b.Run("max-rate", func(b *testing.B) {
		benchStreams(b, Config{TTFTBase: time.Microsecond, PrefillTokensPerS: 1e9, DecodeStep: time.Millisecond,
			DecodeStepPerSeq: time.Nanosecond, MaxRunningSeqs: 2000}, 2000, 100)
	})
	b.Run("default-timing", func(b *testing.B) {
		benchStreams(b, Config{MaxRunningSeqs: 2000}, 2000, 20)
	})
}

// BenchmarkEmitChunks measures the per-token cost of building SSE chunk bytes.
func BenchmarkEmitChunks(b *testing.B) {
	table := newOutTable()
	gen := newTextGen(table, 1, 42)
	head := []byte(`data: {"id":"chatcmpl-sim1","object":"chat.completion.chunk","created":1700000000,"model":"tollgate-sim","choices":[`)
	const open, close = `{"index":0,"delta":{"content":"`, `"},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	buf := make([]byte, 0, 4096)
	for b.Loop() {
		t := gen.next()
		buf = append(buf[:0], head...)
		buf = append(buf, open...)
		buf = append(buf, t.text...)
		buf = append(buf, close...)
	}
}

// BenchmarkDecodeFidelity measures how closely streams see the configured
// timing, all streams sent at once, by an in-process client that stamps
// reads as they return:
//
//   - itl-ratio: mean over streams of (t_last_token − t_first_token) /
//     (tokens − 1), over the configured step; below 1 means first tokens
//     came late (the start-up burst), above 1 that steps stretched;
//   - e2e-ratio: mean over streams of (t_last_token − t_send) over the
//     model's (TTFTBase + (tokens − 1) × step): lateness at the end.
//
// The envelope is where both stay within 5 % of 1. Client and server share
// the host's cores, so this is a pessimistic reading of the server alone.
//
//	go test ./engine/sim -run '^$' -bench DecodeFidelity -benchtime 3x
func BenchmarkDecodeFidelity(b *testing.B) {
	for _, step := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond} {
		for _, streams := range []int{32, 128, 256, 512, 1024} {
			b.Run(fmt.Sprintf("step=%v/streams=%d", step, streams), func(b *testing.B) {
				benchFidelity(b, step, streams, 300)
			})
		}
	}
}

func benchFidelity(b *testing.B, step time.Duration, streams, tokens int) {
	s, err := New(Config{TTFTBase: time.Microsecond, PrefillTokensPerS: 1e12, DecodeStep: step,
		DecodeStepPerSeq: time.Nanosecond, MaxRunningSeqs: streams})
	if err != nil {
		b.Fatal(err)
	}
	url, err := s.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}
	client := &http.Client{Transport: tr}
	defer func() {
		tr.CloseIdleConnections()
		if err := s.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
	}()
	want := s.sched.stepDuration(streams)
	ideal := s.cfg.TTFTBase + time.Duration(tokens-1)*want
	var sumRatio, sumE2E, worst float64
	var rounds int
	for b.Loop() {
		ratios := make([]float64, streams)
		e2e := make([]float64, streams)
		var failed atomic.Int64
		var wg sync.WaitGroup
		for i := range streams {
			wg.Go(func() {
				body := fmt.Appendf(nil, `{"messages":[{"role":"user","content":"fidelity %d"}],"stream":true,"max_tokens":%d,"ignore_eos":true}`, i, tokens)
				sent := time.Now()
				first, last, err := tokenSpan(client, url+"/v1/chat/completions", body)
				if err != nil {
					failed.Add(1)
					return
				}
				ratios[i] = float64(last.Sub(first)) / float64(tokens-1) / float64(want)
				e2e[i] = float64(last.Sub(sent)) / float64(ideal)
			})
		}
		wg.Wait()
		if f := failed.Load(); f > 0 {
			b.Fatalf("%d streams failed", f)
		}
		for i, r := range ratios {
			sumRatio += r
			sumE2E += e2e[i]
			worst = max(worst, r)
		}
		rounds++
	}
	b.ReportMetric(sumRatio/float64(rounds*streams), "itl-ratio")
	b.ReportMetric(worst, "worst-stream-ratio")
	b.ReportMetric(sumE2E/float64(rounds*streams), "e2e-ratio")
}

// tokenSpan streams one chat request and returns when the reads holding
// its first and last content tokens returned.
func tokenSpan(client *http.Client, url string, body []byte) (first, last time.Time, err error) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return first, last, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return first, last, fmt.Errorf("status %d", resp.StatusCode)
	}
	buf := make([]byte, 32<<10)
	marker := []byte(`"delta":{"content":"`)
	for {
		k, err := resp.Body.Read(buf)
		now := time.Now()
		// The role chunk carries `"content":""` after "role", not this marker.
		if k > 0 && bytes.Contains(buf[:k], marker) {
			if first.IsZero() {
				first = now
			}
			last = now
		}
		if err == io.EOF {
			return first, last, nil
		}
		if err != nil {
			return first, last, err
		}
	}
}
