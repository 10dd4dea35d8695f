#!/bin/sh
# Measures tollgate compare's documented CI recipe against the embedded
# simulator: the false-regression rate over PAIRS back-to-back runs of the
# unchanged simulator, and the detection rate for a simulator 1.5× slower
# (ttft_base, decode_step and decode_step_per_seq × 1.5, prefill_tokens_per_s
# ÷ 1.5). Each pair i is old_i then new_i (unchanged) and old_i then slow_i
# (slower), run back to back; every compare is exactly the recipe of
# docs/ci.md (the slower pairs add --baseline-any: the scaled sim: block
# changes the scenario's hash, as a slower server build would not).
#   usage: bench/compare-noise/run.sh            PAIRS=20 REPEAT=10 by default
# Prints one line per pair and a summary; keeps the reports in $OUT (a temp
# directory unless set). JUDGE=path/to/tollgate compares with another build
# (e.g. an older one, on the same reports).
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
pairs=${PAIRS:-20}
repeat=${REPEAT:-10}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
cd "$repo"
go build -o "$out/tollgate" ./cmd/tollgate
tg=$out/tollgate
judge_tg=${JUDGE:-$tg}
scenario=bench/compare-noise/scenario.yaml
recipe="--fail-on ttft_ms.p50:+10% --fail-on decode_tokens_per_s.p50:-5%"
slower="--set targets.embedded.sim.ttft_base=7.5ms --set targets.embedded.sim.prefill_tokens_per_s=33333.333
 --set targets.embedded.sim.decode_step=15ms --set targets.embedded.sim.decode_step_per_seq=75us"

run() { # NAME [--set ...]
	name=$1
	shift
	"$tg" run "$scenario" -q --no-gate --var repetitions="$repeat" --json-out "$out/$name.json" "$@" >"$out/$name.log" 2>&1 ||
		{ echo "run $name failed:"; cat "$out/$name.log"; exit 3; }
}

judge() { # OLD NEW [--baseline-any]: prints the exit code of the recipe
	old=$1 new=$2
	shift 2
	# shellcheck disable=SC2086 # the recipe is words
	if "$judge_tg" compare "$out/$old.json" "$out/$new.json" $recipe "$@" >"$out/$old-$new.txt" 2>&1; then echo 0; else echo $?; fi
}

false_reg=0 detected=0 other=0
i=1
while [ "$i" -le "$pairs" ]; do
	run "old$i"
	run "new$i"
	# shellcheck disable=SC2086
	run "slow$i" $slower
	same=$(judge "old$i" "new$i")
	slow=$(judge "old$i" "slow$i" --baseline-any)
	[ "$same" = 1 ] && false_reg=$((false_reg + 1))
	[ "$slow" = 1 ] && detected=$((detected + 1))
	case "$same$slow" in 01 | 11 | 00 | 10) ;; *) other=$((other + 1)) ;; esac
	tests=$(grep -o '^--fail-on: [0-9]* tested' "$out/old$i-new$i.txt" | grep -o '[0-9]*' || echo 0)
	untold=$(grep -o '[0-9]* cannot be told' "$out/old$i-new$i.txt" | grep -o '^[0-9]*' || echo 0)
	flagged=$(grep -o '^regressions ([0-9]*)' "$out/old$i-slow$i.txt" | grep -o '[0-9]*' || echo 0)
	flagged_all=$((${flagged_all:-0} + flagged))
	echo "pair $i: unchanged exit $same, 1.5x slower exit $slow ($tests tests, $untold cannot tell; $flagged slices flagged in the slower pair)"
	i=$((i + 1))
done
echo "repeat $repeat, $pairs pairs: false regressions $false_reg/$pairs, detected $detected/$pairs, slices flagged in the slower pairs ${flagged_all:-0}, other exits $other (reports in $out)"
