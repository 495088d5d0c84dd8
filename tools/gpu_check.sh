#!/usr/bin/env bash
# Everything the cuda-ipc transport has to show, in one run on a GPU machine (made for
# a short, metered session): the CUDA CTest tests, every kind of op of the transport
# checked bitwise, then calibration and the measured-vs-simulated ring sweep.
#   tools/gpu_check.sh [BUILD_DIR] [OUT_DIR]      (BUILD_DIR: a build with CUDA parts ON)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-out/gpu-check}
collsim=$build/tools/collsim
mkdir -p "$out"
status=0

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
echo "== CTest: cuda-ipc"
ctest --test-dir "$build" -R cuda-ipc --output-on-failure || status=1
echo "== every kind of op, bitwise against the replayer"
"$collsim" validate scenarios/validate-cuda-ipc.json --backend cuda-ipc --iters 5 \
  --out "$out/all-ops" || status=1
echo "== calibration, ring all-reduce 2 and 4 ranks, comparison"
tools/validation_report.sh cuda-ipc "$build" "$out/report" || status=1
exit $status
