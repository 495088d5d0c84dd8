#!/usr/bin/env bash
# cuda-ipc faults, end to end: a rank killed mid-collective and a rank that fails
# with a message each stop the run (exit 1, the rank named), and leave no rank
# process and no shared-memory segment behind. Exit 77 (CTest: skipped) without a GPU.
set -u
exe=$1 scenario=$2

run_fault() {  # ENV=VALUE, expected text
  local out status pid
  out=$(env "$1" "$exe" validate "$scenario" --backend cuda-ipc --iters 1 --warmup 0 2>&1 &
        pid=$!; wait $pid; echo "status=$?"; ls /dev/shm | grep "^collsim-$pid-" || true)
  case $out in
    *"no CUDA device"* | *"without a CUDA toolkit"*) echo "skipped: $out"; exit 77 ;;
  esac
  echo "$out"
  [[ $out == *"validation failed: $2"* ]] || { echo "FAIL: expected '$2'"; exit 1; }
  [[ $out == *"status=1"* ]] || { echo "FAIL: expected exit status 1"; exit 1; }
  [[ $out != *"collsim-"* ]] || { echo "FAIL: a shared-memory segment was left"; exit 1; }
  sleep 0.5
  if pgrep -f -- "$exe __rank" >/dev/null; then echo "FAIL: rank processes left"; exit 1; fi
}

run_fault COLLSIM_VALIDATE_KILL_RANK=1 "rank 1 was killed by signal 9"
run_fault COLLSIM_VALIDATE_FAIL_RANK=2 "rank 2 failed: injected failure"
echo "ok"
