#!/usr/bin/env bash
# The validation figures for one backend on this machine, in one go: calibrate the cost
# model (collsim calibrate), run the ring all-reduce sweep of scenarios/validate-ring.json for real
# (2 and 4 ranks, 1 KiB..64 MiB), and compare it with the simulator using that calibration.
#   tools/validation_report.sh [shm|cuda-ipc] [BUILD_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
backend=${1:-shm}
collsim=${2:-build}/tools/collsim
out=${3:-out/validation-$backend}
mkdir -p "$out"

"$collsim" calibrate --backend "$backend" --out "$out/calibration.json"
"$collsim" validate scenarios/validate-ring.json --backend "$backend" --out "$out/measured"
"$collsim" compare scenarios/validate-ring.json --measured "$out/measured/measured.json" \
  --calibration "$out/calibration.json" --out "$out/compare"
