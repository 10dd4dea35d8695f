#!/bin/sh
# Measures tollgate compare's documented CI recipe (docs/ci.md) against the
# embedded simulator: the false-regression rate over PAIRS back-to-back runs
# of the unchanged simulator, and the detection rate for a simulator SLOW×
# slower (ttft_base, decode_step and decode_step_per_seq × SLOW,
# prefill_tokens_per_s ÷ SLOW; SLOW=1.1 by default, a 10% slowdown).
#
# The runs are a chain: u0, then for each pair i a run u_i of the unchanged
# simulator and a run s_i of the slower one. Unchanged pair i compares
# u_{i-1} with u_i, slower pair i u_{i-1} with s_i; every compare is exactly
# the recipe of docs/ci.md (the slower pairs add --baseline-any: the scaled
# sim: block changes the scenario's hash, as a slower server build would not).
#   usage: bench/compare-noise/run.sh     PAIRS=20 SLOW=1.1 by default
# SCENARIO=ci (the default) runs examples/serving.yaml --profile ci, the
# documented recipe; SCENARIO=quick runs bench/compare-noise/scenario.yaml
# (the quick start) with REPEAT repetitions per slice (10 unless set).
# Prints one line per pair, the run time of each report, and a summary;
# keeps the reports in $OUT (a temp directory unless set). JUDGE=path/to/
# tollgate compares with another build (e.g. an older one, on the same
# reports). GATE=1 judges each pair with the same two thresholds written as
# gates (no_regression, docs/gates.md) through tollgate judge --baseline
# instead of tollgate compare.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
pairs=${PAIRS:-20}
slow=${SLOW:-1.1}
repeat=${REPEAT:-10}
mode=${SCENARIO:-ci}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
cd "$repo"
go build -o "$out/tollgate" ./cmd/tollgate
tg=$out/tollgate
judge_tg=${JUDGE:-$tg}
recipe="--fail-on ttft_ms.p50:+10% --fail-on decode_tokens_per_s.p50:-5%"
case $mode in
ci)
	scenario=examples/serving.yaml target=server
	set -- --profile ci
	;;
quick)
	scenario=bench/compare-noise/scenario.yaml target=embedded
	set -- --var repetitions="$repeat"
	;;
*)
	echo "SCENARIO=$mode: want ci or quick" >&2
	exit 2
	;;
esac
args="$*"
# The simulator's defaults (5ms, 50000 tokens/s, 10ms, 50us), scaled.
slower=$(awk -v k="$slow" -v t="$target" 'BEGIN {
	printf "--set targets.%s.sim.ttft_base=%gus --set targets.%s.sim.prefill_tokens_per_s=%g", t, 5000 * k, t, 50000 / k
	printf " --set targets.%s.sim.decode_step=%gus --set targets.%s.sim.decode_step_per_seq=%gns", t, 10000 * k, t, 50000 * k }')

run() { # NAME [--set ...]
	name=$1
	shift
	start=$(date +%s)
	# The scenario includes examples/quickstart.yaml, outside its directory.
	# shellcheck disable=SC2086 # the profile or var is words
	"$tg" run "$scenario" -q --no-gate --allow-outside examples $args --json-out "$out/$name.json" "$@" >"$out/$name.log" 2>&1 ||
		{ echo "run $name failed:"; cat "$out/$name.log"; exit 3; }
	secs=$(($(date +%s) - start))
	total_secs=$((${total_secs:-0} + secs))
	runs=$((${runs:-0} + 1))
	max_secs=$((secs > ${max_secs:-0} ? secs : ${max_secs:-0}))
}

gates='gates=[{name: ttft, expr: "no_regression(\"ttft_ms.p50:+10%\")"}, {name: decode, expr: "no_regression(\"decode_tokens_per_s.p50:-5%\")"}]'
judge() { # OLD NEW [--baseline-any [--set ...]]: prints the exit code of the recipe
	old=$1 new=$2
	shift 2
	if [ "${GATE:-}" = 1 ]; then
		# shellcheck disable=SC2086 # the profile or var is words
		if "$judge_tg" judge "$scenario" "$out/$new.json" $args --set "$gates" --baseline "$out/$old.json" --baseline-any "$@" >"$out/$old-$new.txt" 2>&1; then echo 0; else echo $?; fi
		return
	fi
	[ $# -gt 0 ] && set -- "$1" # compare takes no --set
	# shellcheck disable=SC2086 # the recipe is words
	if "$judge_tg" compare "$out/$old.json" "$out/$new.json" $recipe "$@" >"$out/$old-$new.txt" 2>&1; then echo 0; else echo $?; fi
}

count() { # FILE VERDICT: how many slices of a comparison got the verdict
	grep -c "^  $2 " "$1" || true
}

false_reg=0 false_inc=0 detected=0 slow_inc=0 other=0
run u0
i=1
while [ "$i" -le "$pairs" ]; do
	prev=u$((i - 1))
	run "u$i"
	# shellcheck disable=SC2086
	run "s$i" $slower
	same=$(judge "$prev" "u$i")
	# shellcheck disable=SC2086
	sl=$(judge "$prev" "s$i" --baseline-any $slower)
	[ "$same" = 1 ] && false_reg=$((false_reg + 1))
	[ "$same" = 4 ] && false_inc=$((false_inc + 1))
	[ "$sl" = 1 ] && detected=$((detected + 1))
	[ "$sl" = 4 ] && slow_inc=$((slow_inc + 1))
	case "$same$sl" in 01 | 11 | 41 | 00 | 10 | 40 | 04 | 14 | 44) ;; *) other=$((other + 1)) ;; esac
	echo "pair $i: unchanged exit $same ($(count "$out/$prev-u$i.txt" inconclusive) inconclusive slices), ${slow}x slower exit $sl ($(count "$out/$prev-s$i.txt" regression) regression, $(count "$out/$prev-s$i.txt" inconclusive) inconclusive slices)"
	i=$((i + 1))
done
echo "$mode ($args), slower ${slow}x, $pairs pairs: false regressions $false_reg/$pairs, unchanged inconclusive $false_inc/$pairs, detected $detected/$pairs, slower inconclusive $slow_inc/$pairs, other exits $other; run time per report mean $((total_secs / runs)) s, max $max_secs s over $runs runs (reports in $out)"
