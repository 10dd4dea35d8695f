#!/bin/sh
# Runs tollgate against a real llama-server with default settings (no
# Connection: close, nothing tuned): examples/serving.yaml on 1 slot, a
# 64-request load phase at concurrency 4 on 4 slots, and prints how each
# request's client figures agree with the server's own timings.
#   usage: bench/peers/run.sh [DIR]   (after bench/peers/build.sh [DIR])
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$HOME/.cache/tollgate-peers}
port=${PORT:-18080}
out=$(mktemp -d)
cd "$repo"
go build -o "$out/tollgate" ./cmd/tollgate
go build -o "$out/agree" ./bench/peers/agree

serve() { # slots
	LD_LIBRARY_PATH="$dir/bin" "$dir/bin/llama-server" -m "$dir/tiny.gguf" --host 127.0.0.1 --port "$port" \
		-c $((8192 * $1)) -np "$1" -t 2 --metrics --alias tiny-llama >"$out/llama-$1.log" 2>&1 &
	pid=$!
	i=0
	until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
		i=$((i + 1)); [ $i -lt 120 ] || { echo "llama-server did not start"; cat "$out/llama-$1.log"; exit 1; }
		sleep 0.5
	done
}
trap 'kill $pid 2>/dev/null || true' EXIT

serve 1
cat >"$out/serving.yaml" <<YAML
include: [$repo/examples/serving.yaml]
report: {samples: true}
YAML
echo "== examples/serving.yaml, 1 slot"
"$out/tollgate" run "$out/serving.yaml" --allow-outside "$repo/examples" --set vars.base_url=http://127.0.0.1:$port --json-out "$out/serving.json" || true
kill $pid; wait $pid 2>/dev/null || true

serve 4
echo "== load: concurrency 4, 64 requests, 4 slots"
"$out/tollgate" run bench/peers/load.yaml --set targets.server.base_url=http://127.0.0.1:$port \
	--json-out "$out/load.json" --samples-out "$out/load.jsonl" || true

echo "== per-request agreement with llama-server's own timings"
"$out/agree" "$out/serving.json" "$out/load.jsonl"
echo "(files in $out)"
