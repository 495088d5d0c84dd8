#!/usr/bin/env bash
# Wall time of one sweep three ways, back to back, REPEATS times: one process (-j 1),
# two threads (-j 2), two MPI ranks (mpirun -n 2); and whether their outputs are the
# same bytes. Usage: tools/bench_sweep.sh [COLLSIM] [REPEATS] -- [sweep arguments]
set -euo pipefail
collsim=${1:-build/tools/collsim}
repeats=${2:-2}
shift $(( $# >= 2 ? 2 : $# ))
[[ ${1:-} == -- ]] && shift
args=("$@")
if ((${#args[@]} == 0)); then
  # 760 points: 10 algorithms x 76 sizes on 64 GPUs of a rail-optimized cluster (flow).
  args=(scenarios/hierarchical-vs-flat.json --sizes 1KiB..1GiB --step x1.2)
fi
mpirun=(mpirun -n 2)
# Root and fewer cores than ranks, as on CI; one core per rank is Open MPI's default.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# seconds FILE COMMAND...: runs COMMAND with its stdout in FILE; prints "wall cpu" seconds
# (cpu: user + system of it and its children, so of every MPI rank too).
seconds() {
  local file=$1
  shift
  /usr/bin/time -f "%e %U %S" -o "$out/time" "$@" > "$file"
  awk '{ printf "%.2f %.2f", $1, $2 + $3 }' "$out/time"
}
echo "# sweep ${args[*]}: $("$collsim" sweep "${args[@]}" --format csv | tail -n +2 | wc -l) points; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# wall seconds (cpu seconds, all threads and ranks)"
printf "# %-4s %14s %14s %14s   %s\n" run "-j 1" "-j 2" "mpirun -n 2" "speed-up -j 2, mpirun -n 2"
for ((r = 1; r <= repeats; ++r)); do
  a=$(seconds "$out/j1.txt" "$collsim" sweep "${args[@]}" --out "$out/j1")
  b=$(seconds "$out/j2.txt" "$collsim" sweep "${args[@]}" -j 2 --out "$out/j2")
  c="0 0"
  if command -v mpirun > /dev/null; then
    c=$(seconds "$out/mpi.txt" "${mpirun[@]}" "$collsim" sweep "${args[@]}" --out "$out/mpi")
  fi
  echo "$r $a $b $c" | awk '{ printf "  %-4s %6.2f (%5.2f) %6.2f (%5.2f) %6.2f (%5.2f)   %.2fx, %.2fx\n",
                                    $1, $2, $3, $4, $5, $6, $7, $2 / $4, $6 ? $2 / $6 : 0 }'
  for k in j2 mpi; do
    [[ -d $out/$k ]] || continue
    cmp -s "$out/j1.txt" "$out/$k.txt" && diff -rq "$out/j1" "$out/$k" > /dev/null ||
      { echo "DIFFERENT: $k's output is not -j 1's" >&2; exit 1; }
  done
done
echo "# outputs (stdout, sweep.csv, sweep.json, sweep.html) identical across the three"
