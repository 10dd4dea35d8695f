#!/usr/bin/env python3
"""Writes the llm-d benchmark report fixtures of this folder (python3 make_llmd.py).

Two layouts, written from llm-d-benchmark's pydantic schemas as they are
dumped to JSON (model_dump(mode="json", exclude_none=True)):

  llmd-v0_1-vllm.json         schema_v0_1.py (BenchmarkReportV01): version "0.1",
                              scenario.model/load (name vllm-benchmark, args as
                              native_to_br0_1.py's vLLM import writes them),
                              metrics.time (seconds), metrics.requests (total =
                              completed), metrics.latency in ms and ms/token,
                              metrics.throughput as plain numbers.
  llmd-v0_2_1-inference-perf.json
                              schema_v0_2.py (0.2.1, as br_v0_2_1_example.yaml):
                              run (uid, eid, time with an ISO 8601 duration, as
                              pydantic writes a timedelta), scenario.stack (an
                              inference_engine), scenario.load.standardized
                              (inference-perf, concurrency 4),
                              results.request_performance.aggregate with latencies
                              in s and s/token and throughputs as Statistics.

Timings are made up (seeded); the workload is small-load.yaml's (12 requests,
4 in flight, 64-token prompts, 16-token answers). Statistics are numpy's
linear-interpolation percentiles, as the converters compute them.
"""
import json
import random


def pct(values, p):
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def stats(values, units, scale=1.0):
    v = [x * scale for x in values]
    mean = sum(v) / len(v)
    out = {"units": units, "mean": round(mean, 9),
           "stddev": round((sum((x - mean) ** 2 for x in v) / len(v)) ** 0.5, 9), "min": round(min(v), 9)}
    for name, p in (("p0p1", 0.1), ("p1", 1), ("p5", 5), ("p10", 10), ("p25", 25), ("p50", 50), ("p75", 75),
                    ("p90", 90), ("p95", 95), ("p99", 99), ("p99p9", 99.9)):
        out[name] = round(pct(v, p), 9)
    out["max"] = round(max(v), 9)
    return out


def requests(seed):
    rnd = random.Random(seed)
    out = []
    for _ in range(12):
        ttft = rnd.uniform(0.020, 0.046)
        tpot = rnd.uniform(0.0105, 0.0120)
        out.append({"ttft": ttft, "tpot": tpot, "e2e": ttft + 15 * tpot, "itl": tpot * rnd.uniform(0.97, 1.03)})
    return out


def v01():
    reqs = requests(251)
    duration = 0.6021
    e2e_ms = [r["e2e"] * 1000 for r in reqs]
    return {
        "version": "0.1",
        "scenario": {
            "model": {"name": "Qwen/Qwen2.5-0.5B-Instruct"},
            "load": {"name": "vllm-benchmark",
                     "args": {"num_prompts": 12, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4}},
        },
        "metrics": {
            "time": {"duration": duration, "start": 1757930400.0},
            "requests": {"total": 12, "input_length": {"units": "count", "mean": 64.0},
                         "output_length": {"units": "count", "mean": 16.0}},
            "latency": {
                "time_to_first_token": stats([r["ttft"] for r in reqs], "ms", 1000),
                "time_per_output_token": stats([r["tpot"] for r in reqs], "ms/token", 1000),
                "inter_token_latency": stats([r["itl"] for r in reqs], "ms/token", 1000),
                "request_latency": stats(e2e_ms, "ms"),
            },
            "throughput": {"output_tokens_per_sec": round(12 * 16 / duration, 4),
                           "total_tokens_per_sec": round(12 * 80 / duration, 4),
                           "requests_per_sec": round(12 / duration, 4)},
        },
    }


def v021():
    reqs = requests(252)
    duration = 0.6113
    e2e = [r["e2e"] for r in reqs]
    return {
        "version": "0.2.1",
        "run": {"uid": "3f2b6c1e9d0a4b7c8e5f6a7b8c9d0e1f", "eid": "a1b2c3d4e5f60718293a4b5c6d7e8f90",
                "time": {"start": "2025-11-05T18:00:42Z", "end": "2025-11-05T18:00:42.6113Z", "duration": "PT0.6113S"},
                "user": "tollgate-fixture", "description": "small-load on one vLLM replica"},
        "scenario": {
            "stack": [{
                "metadata": {"schema_version": "0.0.1", "label": "vllm-0", "cfg_id": "cc73fc6b51a1d3b8128f312d70476d7c"},
                "standardized": {"kind": "inference_engine", "tool": "vllm", "tool_version": "0.10.1", "role": "aggregate",
                                 "replicas": 1, "model": {"name": "Qwen/Qwen2.5-0.5B-Instruct"},
                                 "accelerator": {"model": "NVIDIA-H100-80GB-HBM3", "count": 1,
                                                 "parallelism": {"dp": 1, "tp": 1, "pp": 1, "ep": 1}}},
                "native": {"args": {"--max-model-len": 4096}},
            }],
            "load": {
                "metadata": {"schema_version": "0.0.1", "cfg_id": "a4e18f265cc33786a42b8a3f7ac2edcb"},
                "standardized": {"tool": "inference-perf", "tool_version": "0.3.0", "source": "random", "stage": 0,
                                 "input_seq_len": {"distribution": "fixed", "value": 64},
                                 "output_seq_len": {"distribution": "fixed", "value": 16}, "concurrency": 4},
                "native": {"config": {"load": {"type": "concurrent", "num_workers": 4}}},
            },
        },
        "results": {
            "request_performance": {
                "aggregate": {
                    "requests": {"total": 12, "failures": 0, "incomplete": 0,
                                 "input_length": stats([64.0] * 12, "count"),
                                 "output_length": stats([16.0] * 12, "count")},
                    "latency": {
                        "time_to_first_token": stats([r["ttft"] for r in reqs], "s"),
                        "time_per_output_token": stats([r["tpot"] for r in reqs], "s/token"),
                        "inter_token_latency": stats([r["itl"] for r in reqs], "s/token"),
                        "normalized_time_per_output_token": stats([x / 16 for x in e2e], "s/token"),
                        "request_latency": stats(e2e, "s"),
                    },
                    "throughput": {
                        "output_token_rate": {"units": "tokens/s", "mean": round(12 * 16 / duration, 4)},
                        "input_token_rate": {"units": "tokens/s", "mean": round(12 * 64 / duration, 4)},
                        "total_token_rate": {"units": "tokens/s", "mean": round(12 * 80 / duration, 4)},
                        "request_rate": {"units": "queries/s", "mean": round(12 / duration, 4)},
                    },
                },
            },
        },
    }


def dump(v, pad=""):
    """JSON with two-space indents, but a Statistics object (it has units)
    or a list or object of scalars on one line, so a test edits it by one
    replacement."""
    flat = not isinstance(v, (dict, list)) or "units" in v or all(
        not isinstance(x, (dict, list)) for x in (v.values() if isinstance(v, dict) else v))
    if flat:
        return json.dumps(v, separators=(", ", ": "))
    inner = pad + "  "
    if isinstance(v, list):
        return "[\n" + ",\n".join(inner + dump(x, inner) for x in v) + "\n" + pad + "]"
    return "{\n" + ",\n".join(inner + json.dumps(k) + ": " + dump(x, inner) for k, x in v.items()) + "\n" + pad + "}"


for name, doc in (("llmd-v0_1-vllm.json", v01()), ("llmd-v0_2_1-inference-perf.json", v021())):
    with open(name, "w") as f:
        f.write(dump(doc) + "\n")
