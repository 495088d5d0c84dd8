#!/usr/bin/env bash
# Two runs at once into one --out folder, PAIRS times: every time, the folder must
# hold exactly one run's complete set of files (no mix of the two, no staging left).
#   out_dir_concurrency.sh COLLSIM [PAIRS]
set -euo pipefail
collsim=$1 pairs=${2:-100}
work=$(mktemp -d "${TMPDIR:-/tmp}/collsim-outlock.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
for who in a b; do
  bytes=$([[ $who == a ]] && echo 1MiB || echo 3MiB)
  cat > "$who.json" <<JSON
{"name": "pair-$who", "topology": {"preset": "switch", "gpus": 4, "bandwidth": "100GB/s"},
 "collectives": [{"name": "x-$who", "op": "all_reduce", "bytes": "$bytes"}]}
JSON
  "$collsim" run "$who.json" --out "ref-$who" > /dev/null
done
digest() { (cd "$1" && find . -mindepth 1 | sort && find . -type f | sort | xargs cat) | md5sum; }
ref_a=$(digest ref-a) ref_b=$(digest ref-b)
for ((i = 0; i < pairs; ++i)); do
  "$collsim" run a.json --out shared > /dev/null 2>&1 & first=$!
  "$collsim" run b.json --out shared > /dev/null 2>&1 & second=$!
  wait $first && wait $second || { echo "pair $i: a run failed" >&2; exit 1; }
  got=$(digest shared)
  if [[ $got != "$ref_a" && $got != "$ref_b" ]]; then
    echo "pair $i: the folder holds neither run's set:" >&2
    ls -A shared >&2
    exit 1
  fi
done
echo "$pairs pairs: every folder held one run's complete set"
