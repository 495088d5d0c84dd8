#!/usr/bin/env bash
# Fuzzes every input surface for SECONDS each: run_all.sh BUILD_DIR SECONDS [JOBS]
# One line per target below: its name (fuzz_NAME), its dictionary, and the folders
# that seed its corpus. Any finding (crash, sanitizer report, hang, memory past the
# limit) makes libFuzzer exit non-zero, and this script with it; the input is left as
# BUILD_DIR/fuzz-NAME-crash-<sha1> (or leak-, timeout-, oom-). JOBS targets run at once
# (default 1; each libFuzzer process uses one core), each for its full SECONDS.
set -euo pipefail
build=$1 seconds=$2 jobs=${3:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run_all.sh: JOBS must be a positive count" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
targets=(
  # name       dictionary                 seed folders (relative to the repository)
  "scenario    tools/fuzz/json.dict       scenarios topologies tools/fuzz/seeds/scenario"
  "nccl_log    tools/fuzz/nccl_log.dict   data/nccl-tests tools/fuzz/seeds/nccl_log"
  "calibration tools/fuzz/calibration.dict tools/fuzz/seeds/calibration"
  "workload    tools/fuzz/workload.dict   tools/fuzz/seeds/workload"
  "chakra      tools/fuzz/chakra.dict     tools/fuzz/seeds/chakra"
)
# One target, its output in BUILD_DIR/fuzz-NAME.log; its status is libFuzzer's.
fuzz_one() {
  local name=$1 dict=$2 seeds=$3
  local corpus=$build/fuzz-corpus/$name
  mkdir -p "$corpus"
  # shellcheck disable=SC2086  # the seed folders are separate arguments
  "$build/tools/fuzz/fuzz_$name" "$corpus" $seeds -dict="$dict" \
    -artifact_prefix="$build/fuzz-$name-" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 >"$build/fuzz-$name.log" 2>&1
}

# Its summary, or its finding (the log's tail) and a failure.
report() {
  local name=$1 status=$2 log=$build/fuzz-$1.log
  echo "fuzz: $name for $seconds s"
  if ((status != 0)); then
    tail -60 "$log" >&2
    echo "fuzz: $name found a problem (above; the whole output in $log)" >&2
    return 1
  fi
  grep -E '^#[0-9]+ +DONE|stat::number_of_executed_units' "$log" || true
}

# Targets in batches of JOBS, reported in the order listed; every target of a batch
# finishes before the first failure stops the script.
failed=0
for ((first = 0; first < ${#targets[@]}; first += jobs)); do
  names=() pids=()
  for ((i = first; i < first + jobs && i < ${#targets[@]}; ++i)); do
    read -r name dict seeds <<<"${targets[i]}"
    fuzz_one "$name" "$dict" "$seeds" &
    names+=("$name") pids+=($!)
  done
  for k in "${!pids[@]}"; do
    status=0
    wait "${pids[k]}" || status=$?
    report "${names[k]}" "$status" || failed=1
  done
  ((failed == 0)) || exit 1
done
