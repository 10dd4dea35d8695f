#!/usr/bin/env python3
"""Writes the GuideLLM fixtures of this folder (python3 make_guidellm.py).

The layout is GuideLLM v0.2.x's benchmarks.json (GenerativeBenchmarksReport
saved by `guidellm benchmark --output-path benchmarks.json`): a list of
generative_benchmark objects with args (profile, strategy), run_stats,
worker, request_loader, start_time/end_time, metrics (a
StatusDistributionSummary per metric: successful / errored / incomplete /
total DistributionSummary objects) and requests (per-request stats with
GuideLLM's computed fields). Request timings are made up (seeded); the
per-request fields and summaries follow GuideLLM v0.2's definitions:
  time_to_first_token_ms   = 1000 * (first_token_time - start_time)
  inter_token_latency_ms   = 1000 * (last_token_time - first_token_time) / (output_tokens - 1)
  time_per_output_token_ms = 1000 * (last_token_time - start_time) / output_tokens
  request_latency          = end_time - start_time (seconds)
with inter_token_latency_ms weighted by output_tokens - 1 and
time_per_output_token_ms by output_tokens in the summaries, and each
percentile the first value whose cumulative weight reaches it.
"""
import json
import random
import uuid


def dist(values, weights=None):
    if weights is None:
        weights = [1.0] * len(values)
    pairs = sorted(zip(values, weights))
    total_w = sum(w for _, w in pairs)
    if not pairs or total_w == 0:
        z = {"mean": 0.0, "median": 0.0, "mode": 0.0, "variance": 0.0, "std_dev": 0.0, "min": 0.0, "max": 0.0,
             "count": 0, "total_sum": 0.0,
             "percentiles": {k: 0.0 for k in ("p001", "p01", "p05", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p999")},
             "cumulative_distribution_function": None}
        return z
    mean = sum(v * w for v, w in pairs) / total_w
    var = sum(w * (v - mean) ** 2 for v, w in pairs) / total_w

    def at(p):
        acc = 0.0
        for v, w in pairs:
            acc += w
            if acc / total_w >= p - 1e-12:
                return v
        return pairs[-1][0]
    ps = {"p001": 0.001, "p01": 0.01, "p05": 0.05, "p10": 0.1, "p25": 0.25, "p50": 0.5,
          "p75": 0.75, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}
    return {"mean": mean, "median": at(0.5), "mode": pairs[0][0], "variance": var, "std_dev": var ** 0.5,
            "min": pairs[0][0], "max": pairs[-1][0], "count": len(pairs), "total_sum": sum(v for v, _ in pairs),
            "percentiles": {k: at(p) for k, p in ps.items()}, "cumulative_distribution_function": None}


def status(ok, err=(), inc=(), weights=None):
    return {"successful": dist(ok, weights), "errored": dist(list(err)), "incomplete": dist(list(inc)),
            "total": dist(list(ok) + list(err) + list(inc), (weights or [1.0] * len(ok)) + [1.0] * (len(err) + len(inc)))}


def benchmark(rnd, t0, strategy, profile, n, streams, in_len, out_len, keep_requests=True, rate=None):
    reqs = []
    clock = [t0] * streams
    for i in range(n):
        s = min(range(streams), key=lambda k: clock[k])
        start = clock[s] + rnd.uniform(0.0002, 0.0006)
        if rate:  # constant: evenly spaced sends
            start = t0 + i / rate + rnd.uniform(0.0002, 0.0006)
        ttft = rnd.uniform(0.020, 0.045)
        gaps = [rnd.uniform(0.0095, 0.0125) for _ in range(out_len - 1)]
        first = start + ttft
        last = first + sum(gaps)
        end = last + 0.0003
        clock[s] = end
        p_tokens = in_len + rnd.randint(-3, 3)
        reqs.append({
            "type_": "generative_text_response",
            "request_id": str(uuid.UUID(int=rnd.getrandbits(128))),
            "request_type": "chat_completions",
            "scheduler_info": {"requested": True, "completed": True, "errored": False, "canceled": False,
                               "targeted_start_time": start - 0.0002, "queued_time": start - 0.0003,
                               "dequeued_time": start - 0.0002, "scheduled_time": start - 0.0002,
                               "worker_start": start - 0.0001, "request_start": start, "request_end": end,
                               "worker_end": end + 0.0001, "process_id": s},
            "prompt": "Summarise the tollgate report in one line.",
            "output": " amber" * out_len,
            "prompt_tokens": p_tokens,
            "output_tokens": out_len,
            "start_time": start, "end_time": end, "first_token_time": first, "last_token_time": last,
            "request_latency": end - start,
            "time_to_first_token_ms": 1000 * (first - start),
            "time_per_output_token_ms": 1000 * (last - start) / out_len,
            "inter_token_latency_ms": 1000 * (last - first) / (out_len - 1),
            "output_tokens_per_second": out_len / (end - start),
            "tokens_per_second": (p_tokens + out_len) / (end - start),
        })
    t_end = max(r["end_time"] for r in reqs)
    dur = t_end - t0
    metrics = {
        "requests_per_second": status([n / dur]),
        "request_concurrency": status([sum(r["request_latency"] for r in reqs) / dur]),
        "request_latency": status([r["request_latency"] for r in reqs]),
        "prompt_token_count": status([r["prompt_tokens"] for r in reqs]),
        "output_token_count": status([r["output_tokens"] for r in reqs]),
        "time_to_first_token_ms": status([r["time_to_first_token_ms"] for r in reqs]),
        "time_per_output_token_ms": status([r["time_per_output_token_ms"] for r in reqs],
                                           weights=[float(r["output_tokens"]) for r in reqs]),
        "inter_token_latency_ms": status([r["inter_token_latency_ms"] for r in reqs],
                                         weights=[float(r["output_tokens"] - 1) for r in reqs]),
        "output_tokens_per_second": status([sum(r["output_tokens"] for r in reqs) / dur]),
        "tokens_per_second": status([sum(r["output_tokens"] + r["prompt_tokens"] for r in reqs) / dur]),
    }
    totals = {"successful": n, "errored": 0, "incomplete": 0, "total": n}
    kept = reqs if keep_requests else reqs[:3]  # --output-sampling 3
    return {
        "type_": "generative_benchmark",
        "id_": str(uuid.UUID(int=rnd.getrandbits(128))),
        "run_id": "5a0b3f5e-2c31-4c43-9a4a-0d54c0b7f1aa",
        "args": {"profile": profile, "strategy_index": 0, "strategy": strategy,
                 "max_number": n, "max_duration": None, "warmup_number": None, "warmup_duration": None,
                 "cooldown_number": None, "cooldown_duration": None},
        "run_stats": {"start_time": t0, "end_time": t_end, "requests_made": totals,
                      "queued_time_avg": 0.0003, "scheduled_time_delay_avg": 0.0001,
                      "scheduled_time_sleep_avg": 0.0, "worker_start_delay_avg": 0.0001,
                      "worker_time_avg": 0.19, "worker_start_time_targeted_delay_avg": 0.0002,
                      "request_start_time_delay_avg": 0.0002, "request_start_time_targeted_delay_avg": 0.0003,
                      "request_time_delay_avg": 0.0001, "request_time_avg": 0.19},
        "worker": {"type_": "generative_requests_worker", "backend_type": "openai_http",
                   "backend_target": "http://localhost:8000", "backend_model": "Qwen/Qwen2.5-0.5B-Instruct",
                   "backend_info": {"max_output_tokens": 16, "timeout": 300, "http2": True,
                                    "authorization": False, "organization": None, "project": None,
                                    "text_completions_path": "/v1/completions",
                                    "chat_completions_path": "/v1/chat/completions"}},
        "request_loader": {"type_": "generative_request_loader",
                           "data": "prompt_tokens=64,output_tokens=16", "data_args": None,
                           "processor": "Qwen/Qwen2.5-0.5B-Instruct", "processor_args": None},
        "extras": {},
        "start_time": t0,
        "end_time": t_end,
        "metrics": metrics,
        "request_totals": totals,
        "requests": {"successful": kept, "errored": [], "incomplete": [], "total": None},
    }


rnd = random.Random(2025)
# 1. guidellm benchmark --target http://localhost:8000 --rate-type concurrent --rate 4
#    --max-requests 12 --data prompt_tokens=64,output_tokens=16 (v0.2.1)
b = benchmark(rnd, 1749636900.0, {"type_": "concurrent", "streams": 4},
              {"type_": "concurrent", "completed_strategies": 1, "measured_rates": [], "measured_concurrencies": [],
               "streams": [4]}, 12, 4, 64, 16)
with open("guidellm-concurrent.json", "w") as f:
    json.dump({"benchmarks": [b]}, f)

# 2. guidellm benchmark --rate-type constant --rate 2 then 4, --max-requests 8,
#    --output-sampling 3 (v0.2.1): three requests of each kept, so summaries only
profile = {"type_": "async", "completed_strategies": 2, "measured_rates": [], "measured_concurrencies": [],
           "strategy_type": "constant", "rate": [2.0, 4.0], "initial_burst": True, "max_concurrency": None}
bs = []
for i, rate in enumerate((2.0, 4.0)):
    b = benchmark(rnd, 1749637000.0 + 10 * i, {"type_": "constant", "rate": rate, "initial_burst": True, "max_concurrency": None},
                  profile, 8, 8, 64, 16, keep_requests=False, rate=rate)
    b["args"]["strategy_index"] = i
    bs.append(b)
with open("guidellm-constant-sampled.json", "w") as f:
    json.dump({"benchmarks": bs}, f)
