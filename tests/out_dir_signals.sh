#!/usr/bin/env bash
# Ctrl-C (SIGINT) and SIGTERM during `collsim run --out`: the run exits 128 + the
# signal and leaves the folder as it was (no new file, no staging folder); a staging
# folder left by a killed run is removed by the next run into that folder.
#   out_dir_signals.sh COLLSIM
set -euo pipefail
collsim=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/collsim-signals.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
# About 2 s of planning and simulating on this machine: the signal lands mid-run.
cat > big.json <<'JSON'
{"topology": {"preset": "switch", "gpus": 1024, "bandwidth": "450GB/s"}, "network": {"model": "ideal"},
 "collectives": [{"name": "a", "op": "all_reduce", "bytes": "1GiB", "algorithm": "ring"}]}
JSON
mkdir out && echo "kept" > out/earlier.txt
for signal in INT TERM; do
  "$collsim" run big.json --out out > /dev/null 2> err.txt & pid=$!
  sleep 0.5
  kill -s "$signal" "$pid"
  status=0
  wait "$pid" || status=$?
  expected=$([[ $signal == INT ]] && echo 130 || echo 143)
  [[ $status == "$expected" ]] || { cat err.txt; echo "SIG$signal: exit $status, expected $expected" >&2; exit 1; }
  grep -q "interrupted; nothing written" err.txt || { cat err.txt; echo "SIG$signal: no message" >&2; exit 1; }
  [[ $(ls -A out) == earlier.txt ]] || { ls -A out; echo "SIG$signal: the folder changed" >&2; exit 1; }
done
# A run killed outright (SIGKILL) cannot clean up: its staging stays until the next run.
dead=$(bash -c 'echo $$')  # a process that has exited: its pid is free
mkdir "out/.collsim-tmp.$dead.0" && echo partial > "out/.collsim-tmp.$dead.0/result.json"
cat > small.json <<'JSON'
{"topology": {"preset": "switch", "gpus": 4, "bandwidth": "100GB/s"},
 "collectives": [{"name": "a", "op": "all_reduce", "bytes": "1MiB"}]}
JSON
"$collsim" run small.json --out out > /dev/null
[[ ! -e "out/.collsim-tmp.$dead.0" ]] || { echo "stale staging folder was not removed" >&2; exit 1; }
[[ -f out/result.json && -f out/earlier.txt ]] || { ls -A out; echo "the next run did not write" >&2; exit 1; }
echo "SIGINT and SIGTERM left nothing; stale staging removed by the next run"
