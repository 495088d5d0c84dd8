#!/usr/bin/env bash
# Fuzzes every input surface for SECONDS each: run_all.sh BUILD_DIR SECONDS
# One line per target below: its name (fuzz_NAME), its dictionary, and the folders
# that seed its corpus. Any finding (crash, sanitizer report, hang, memory past the
# limit) makes libFuzzer exit non-zero, and this script with it; the input is left as
# BUILD_DIR/fuzz-NAME-crash-<sha1> (or leak-, timeout-, oom-).
set -euo pipefail
build=$1 seconds=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
targets=(
  # name       dictionary                 seed folders (relative to the repository)
  "scenario    tools/fuzz/json.dict       scenarios topologies"
  "nccl_log    tools/fuzz/nccl_log.dict   data/nccl-tests"
  "calibration tools/fuzz/calibration.dict tools/fuzz/seeds/calibration"
  "workload    tools/fuzz/workload.dict   tools/fuzz/seeds/workload"
  "chakra      tools/fuzz/chakra.dict     tools/fuzz/seeds/chakra"
)
for line in "${targets[@]}"; do
  read -r name dict seeds <<<"$line"
  corpus=$build/fuzz-corpus/$name
  mkdir -p "$corpus"
  echo "fuzz: $name for $seconds s"
  log=$build/fuzz-$name.log
  # shellcheck disable=SC2086  # the seed folders are separate arguments
  if ! "$build/tools/fuzz/fuzz_$name" "$corpus" $seeds -dict="$dict" \
      -artifact_prefix="$build/fuzz-$name-" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    tail -60 "$log" >&2
    echo "fuzz: $name found a problem (above; the whole output in $log)" >&2
    exit 1
  fi
  grep -E '^#[0-9]+ +DONE|stat::number_of_executed_units' "$log" || true
done
