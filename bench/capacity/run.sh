#!/bin/sh
# Capacity found by the search against the sustained truth, on simulator
# configurations of different shape (batch.yaml, prefill.yaml, slots.yaml;
# each file says how its server is bound). Each scenario runs the capacity
# search and then a dense rate sweep of the same traffic in the same run;
# the sustained truth is the highest swept rate below the first that fails:
# a point fails when it breaks one of the search's objectives over its whole
# window (15–20 s, longer than any hold) or serves under 95 % of what it
# was offered (request_throughput_per_s ÷ achieved_rate_per_s; the drain at
# the end of a point costs it a few per cent, so the rule errs low).
#   usage: bench/capacity/run.sh [CONFIG ...]   REPEAT=1 by default
# Prints one line per run: found, its interval, whether it was held, the
# truth and the found value's error against it. Reports stay in $OUT.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
repeat=${REPEAT:-1}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
cd "$repo"
go build -o "$out/tollgate" ./cmd/tollgate
configs=${*:-batch prefill slots}
printf '%-8s %-3s %-9s %-19s %-6s %-24s %-9s %-7s %s\n' config run found interval held "bound by" truth error sweep
for c in $configs; do
	i=1
	while [ "$i" -le "$repeat" ]; do
		json=$out/$c-$i.json
		"$out/tollgate" run "bench/capacity/$c.yaml" -q --json-out "$json" >"$out/$c-$i.log" 2>&1 ||
			{ echo "$c run $i failed:"; cat "$out/$c-$i.log"; exit 3; }
		jq -r --arg c "$c" --arg i "$i" '
			.runs.server.phases as $ph | $ph.capacity.capacity as $cap |
			($cap.objectives | map(capture("^(?<m>[a-z_0-9]+)(\\.(?<s>[a-z0-9]+))? (?<op><=|>=) (?<l>[0-9.eE+-]+)$"))) as $obj |
			def val($p; $o): if $o.m == "error_rate" then ($p.errors.count / $p.requests) else $p[$o.m][$o.s] end;
			def meets($p; $o): val($p; $o) as $v | $v != null and (if $o.op == "<=" then $v <= ($o.l|tonumber) else $v >= ($o.l|tonumber) end);
			def ok($p): ([$obj[] | meets($p; .)] | all) and ($p.request_throughput_per_s / $p.achieved_rate_per_s >= 0.95);
			($ph.sweep.points | sort_by(.rate)) as $pts |
			([$pts | to_entries[] | select(ok(.value) | not) | .key] | first // ($pts|length)) as $firstfail |
			(if $firstfail > 0 then $pts[$firstfail-1].rate else null end) as $truth |
			($pts | map("\(.rate):\(if ok(.) then "ok" else "x" end)/p99 \(.ttft_ms.p99|floor)/\(.request_throughput_per_s / .achieved_rate_per_s * 100 | floor)%") | join(" ")) as $sweep |
			def f: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
			[$c, $i, ($cap.max_rate_per_s|f), "[\($cap.interval.low|f), \($cap.interval.high|f)]", ($cap.hold_s|f) + (if $cap.confirmed then "" else "!" end),
			 $cap.bound_by, ($truth|f),
			 (if $truth != null and $cap.max_rate_per_s != null then (($cap.max_rate_per_s / $truth - 1) * 100 | round | tostring) + "%" else "-" end), $sweep] |
			"\(.[0]|.+"        "|.[0:8]) \(.[1]|.+"   "|.[0:3]) \(.[2]|.+"         "|.[0:9]) \(.[3]|.+"                   "|.[0:19]) \(.[4]|.+"      "|.[0:6]) \(.[5]|.+"                        "|.[0:24]) \(.[6]|.+"         "|.[0:9]) \(.[7]|.+"       "|.[0:7]) \(.[8])"
		' "$json"
		i=$((i + 1))
	done
done
