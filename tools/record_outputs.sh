#!/usr/bin/env bash
# Records what every bundled scenario gives (run --format json, run --out, plan, trace,
# sweep) and every bundled topology (topo) into one folder, so a refactoring can be checked byte for byte:
#   tools/record_outputs.sh COLLSIM OUTDIR     (before and after), then diff -r A B
# A command that refuses a scenario (trace of a workload, say) records its message and
# exit status: the refusal must not change either.
set -uo pipefail
collsim=$(realpath "$1")
out=$2
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
cd "$repo"
record() {  # record NAME COMMAND...: stdout, stderr and the exit status, under OUTDIR/NAME
  local name=$1
  shift
  timeout 120 "$@" >"$out/$name.out" 2>"$out/$name.err"
  echo $? >"$out/$name.rc"
}
for scenario in scenarios/*.json; do
  base=$(basename "$scenario" .json)
  record "$base.run-json" "$collsim" run "$scenario" --format json
  rm -rf "$out/$base.out-dir"
  record "$base.run-out" "$collsim" run "$scenario" --out "$out/$base.out-dir"
  record "$base.plan" "$collsim" plan "$scenario"
  record "$base.trace" "$collsim" trace "$scenario"
  rm -rf "$out/$base.sweep-dir"
  record "$base.sweep" "$collsim" sweep "$scenario" --out "$out/$base.sweep-dir"
done
for topology in topologies/*.json; do
  record "topo.$(basename "$topology" .json)" "$collsim" topo "$topology"
done
# Paths printed in messages name OUTDIR: make them the same wherever it is.
grep -rlF "$out" "$out" | xargs -r sed -i "s|$out|OUTDIR|g"
echo "recorded $(ls "$out" | wc -l) entries in $out"
