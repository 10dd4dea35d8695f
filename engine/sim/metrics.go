package sim

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
)

// ttftBucketsS returns vLLM's time_to_first_token_seconds histogram buckets.
func ttftBucketsS() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
}

// histogram is a lock-free Prometheus-style histogram: observe is a few
// atomic adds, cheap enough for every request.
type histogram struct {
	bounds  []float64
	counts  []atomic.Int64 // per bucket, non-cumulative; last is +Inf
	sumBits atomic.Uint64  // float64 sum, updated by CAS
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]atomic.Int64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// handleMetrics writes Prometheus text exposition with vLLM's metric names,
// so dashboards and scrapers built for vLLM work against the simulator.
func (s *Server) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	st := s.Stats()
	label := `model_name=` + strconv.Quote(s.cfg.Model)
	var b bytes.Buffer
	metric := func(name, typ, help string, value any, extraLabels ...string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		labels := label
		for _, l := range extraLabels {
			labels += "," + l
		}
		fmt.Fprintf(&b, "%s{%s} %v\n", name, labels, value)
	}
	metric("vllm:num_requests_running", "gauge", "Number of requests holding a running slot (prefill or decode).", st.Running)
	metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting for a running slot.", st.Waiting)
	usage := 0.0
	if st.CacheCapacityTokens > 0 {
		usage = float64(st.CacheUsedTokens) / float64(st.CacheCapacityTokens)
	}
	metric("vllm:kv_cache_usage_perc", "gauge", "Fraction of prefix cache capacity in use (1 means 100 percent).", strconv.FormatFloat(usage, 'g', -1, 64))
	metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", st.PromptTokens)
	metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", st.GenerationTokens)
	metric("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", st.CacheQueryTokens)
	metric("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", st.CacheHitTokens)

	fmt.Fprintf(&b, "# HELP vllm:request_success_total Count of successfully processed requests.\n# TYPE vllm:request_success_total counter\n")
	fmt.Fprintf(&b, "vllm:request_success_total{finished_reason=\"length\",%s} %d\n", label, s.succeededLength.Load())
	fmt.Fprintf(&b, "vllm:request_success_total{finished_reason=\"stop\",%s} %d\n", label, s.succeededStop.Load())

	const ttft = "vllm:time_to_first_token_seconds"
	fmt.Fprintf(&b, "# HELP %s Histogram of time to first token in seconds (server side, from request arrival).\n# TYPE %s histogram\n", ttft, ttft)
	cum := int64(0)
	for i, le := range s.ttft.bounds {
		cum += s.ttft.counts[i].Load()
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"%s\"} %d\n", ttft, label, strconv.FormatFloat(le, 'g', -1, 64), cum)
	}
	cum += s.ttft.counts[len(s.ttft.bounds)].Load()
	fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n", ttft, label, cum)
	fmt.Fprintf(&b, "%s_sum{%s} %s\n", ttft, label, strconv.FormatFloat(math.Float64frombits(s.ttft.sumBits.Load()), 'g', -1, 64))
	// count from the buckets read above keeps _count equal to the +Inf bucket.
	fmt.Fprintf(&b, "%s_count{%s} %d\n", ttft, label, cum)

	if st.FaultsInjected != nil {
		const faults = "tollgate_sim_faults_injected_total"
		fmt.Fprintf(&b, "# HELP %s Responses changed by an injected fault, per fault kind.\n# TYPE %s counter\n", faults, faults)
		// Kinds in their fixed order, so scrapes diff cleanly.
		for _, k := range faultKinds {
			if n, ok := st.FaultsInjected[k]; ok {
				fmt.Fprintf(&b, "%s{kind=%q} %d\n", faults, k, n)
			}
		}
	}

	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}
