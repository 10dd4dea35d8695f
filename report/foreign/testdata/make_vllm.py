#!/usr/bin/env python3
"""Writes the vLLM fixtures of this folder (python3 make_vllm.py).

The per-request timings are made up (seeded); every summary key is then
computed from them as vLLM's benchmark_serving.py (v0.8.x, the same code in
vllm/benchmarks/serve.py through v0.11) computes it in calculate_metrics():
np.mean, np.median, np.std (population) and np.percentile (linear
interpolation) over the completed requests; TPOT per request is
(latency - ttft) / (output_len - 1), for output_len > 1; ITL is every
chunk gap of every completed request; throughput is per benchmark duration.
Written with json.dump as vLLM writes them (the key order of main()).
"""
import json
import random


def pct(xs, p):
    # numpy.percentile, method="linear"
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def std(xs):
    m = mean(xs)
    return (sum((x - m) ** 2 for x in xs) / len(xs)) ** 0.5 if xs else float("nan")


def bench(seed, n, out_len, in_len, chat, fail=()):
    rnd = random.Random(seed)
    res = {"input_lens": [], "output_lens": [], "ttfts": [], "itls": [], "latencies": [],
           "generated_texts": [], "errors": []}
    for i in range(n):
        res["input_lens"].append(in_len + rnd.randint(-3, 3))
        if i in fail:
            res["output_lens"].append(0)
            res["ttfts"].append(0.0)
            res["itls"].append([])
            res["latencies"].append(0.0)
            res["generated_texts"].append("")
            res["errors"].append("Internal Server Error")
            continue
        ttft = round(rnd.uniform(0.018, 0.045), 6)
        # chat: the role chunk is the first, then one chunk per token;
        # completions: the first token's chunk is the first.
        gaps = [round(rnd.uniform(0.0095, 0.0125), 6) for _ in range(out_len if chat else out_len - 1)]
        usage_gap = 0.00021 if chat else 0.0  # chat: the usage-only chunk moves latency on
        res["output_lens"].append(out_len)
        res["ttfts"].append(ttft)
        res["itls"].append(gaps)
        res["latencies"].append(ttft + sum(gaps) + usage_gap)
        res["generated_texts"].append(" amber" * out_len)
        res["errors"].append("")
    return res


def summary(res, duration, percentiles):
    ok = [i for i, e in enumerate(res["errors"]) if e == "" and res["ttfts"][i] > 0]
    ttfts = [res["ttfts"][i] * 1000 for i in ok]
    tpots = [(res["latencies"][i] - res["ttfts"][i]) / (res["output_lens"][i] - 1) * 1000
             for i in ok if res["output_lens"][i] > 1]
    itls = [g * 1000 for i in ok for g in res["itls"][i]]
    e2els = [res["latencies"][i] * 1000 for i in ok]
    total_in = sum(res["input_lens"][i] for i in ok)
    total_out = sum(res["output_lens"][i] for i in ok)
    out = {
        "duration": duration,
        "completed": len(ok),
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": len(ok) / duration,
        "request_goodput:": None,
        "output_throughput": total_out / duration,
        "total_token_throughput": (total_in + total_out) / duration,
    }
    stats = {}
    for name, xs in (("ttft", ttfts), ("tpot", tpots), ("itl", itls), ("e2el", e2els)):
        stats["mean_%s_ms" % name] = mean(xs)
        stats["median_%s_ms" % name] = pct(xs, 50)
        stats["std_%s_ms" % name] = std(xs)
        for p in percentiles:
            stats["p%s_%s_ms" % (p, name)] = pct(xs, p)
    return out, stats


def head(date, backend, rate, max_conc, n):
    return {"date": date, "backend": backend, "model_id": "Qwen/Qwen2.5-0.5B-Instruct",
            "tokenizer_id": "Qwen/Qwen2.5-0.5B-Instruct", "num_prompts": n,
            "request_rate": rate, "burstiness": 1.0, "max_concurrency": max_conc}


def detailed(res, out, stats):
    d = dict(out)
    for k in ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"):
        d[k] = res[k]
    d.update(stats)
    return d


# 1. benchmark_serving.py v0.8.x --backend openai-chat --max-concurrency 4
#    --num-prompts 12 --random-input-len 64 --random-output-len 16 --ignore-eos
#    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99
#    --save-result --save-detailed
res = bench(25, 12, 16, 64, chat=True)
out, stats = summary(res, 0.6021, (50, 90, 99))
doc = head("20250611-101500", "openai-chat", "inf", 4, 12)
doc.update(detailed(res, out, stats))
with open("vllm-chat-detailed.json", "w") as f:
    json.dump(doc, f, indent=4)

# 2. vllm bench serve v0.10.x --endpoint-type openai-chat --max-concurrency 4
#    --num-prompts 12 --save-result (no --save-detailed: summaries only,
#    default --metric-percentiles 99), --metadata gpu=H100
res = bench(26, 12, 16, 64, chat=True)
out, stats = summary(res, 0.5874, (99,))
doc = {"date": "20250902-093000", "endpoint_type": "openai-chat", "label": None,
       "model_id": "Qwen/Qwen2.5-0.5B-Instruct", "tokenizer_id": "Qwen/Qwen2.5-0.5B-Instruct",
       "num_prompts": 12, "gpu": "H100", "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4}
out["request_goodput"] = out.pop("request_goodput:")
doc.update(out)
doc["max_output_tokens_per_s"] = 352.0
doc["max_concurrent_requests"] = 4
doc.update(stats)
with open("vllm-serve-summary.json", "w") as f:
    json.dump(doc, f, indent=4)

# 3. benchmark_serving.py v0.8.x --backend openai (completions) --request-rate 2
#    then 4, --num-prompts 8, --append-result --save-detailed: one result a
#    line; one request of the second failed with HTTP 500.
with open("vllm-completions-sweep.jsonl", "w") as f:
    for i, (rate, fail) in enumerate(((2.0, ()), (4.0, (5,)))):
        res = bench(27 + i, 8, 12, 32, chat=False, fail=fail)
        out, stats = summary(res, 4.1 - i * 1.9, (99,))
        doc = head("2025061%d-12%02d00" % (2 + i, i), "openai", rate, None, 8)
        doc.update(detailed(res, out, stats))
        if i:
            f.write("\n")
        json.dump(doc, f)
