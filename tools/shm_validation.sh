#!/usr/bin/env bash
# The shm targets in one go: three calibrations in a row, one real run of
# scenarios/validate-shm-2.json (2 ranks pinned: ring all-reduce, all-gather and
# broadcast, 1 KiB..64 MiB), a comparison per calibration, then the MAPE per size band
# and collective and how far the three calibrations' predictions lie apart.
#   tools/shm_validation.sh [BUILD_DIR] [OUT_DIR] [ITERS] [ROUNDS] [QUANTILE]
# (QUANTILE: which iteration stands for each collective and sweep point, 0.5 = median.)
set -euo pipefail
cd "$(dirname "$0")/.."
collsim=${1:-build}/tools/collsim
out=${2:-out/validation-shm-2}
iters=${3:-20}
rounds=${4:-4}
quantile=${5:-0.5}
measure=(--iters "$iters" --rounds "$rounds" --quantile "$quantile")
scenario=scenarios/validate-shm-2.json
mkdir -p "$out"

echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in 1 2 3; do
  "$collsim" calibrate --reduce float32.sum "${measure[@]}" --out "$out/cal$i.json" > "$out/cal$i.txt"
done
"$collsim" validate "$scenario" "${measure[@]}" --out "$out/measured" > "$out/measured.txt"
for i in 1 2 3; do
  "$collsim" compare "$scenario" --measured "$out/measured/measured.json" \
    --calibration "$out/cal$i.json" --out "$out/compare$i" > "$out/compare$i.txt"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Collective rows of compare.csv have step -1; names are OP-SIZE (ar-1KiB).
awk -F, '
  FNR == 1 { run++; next }
  $2 == -1 && $3 == -1 {
    split($1, p, "-"); op = p[1]; n = $6
    band = n < 65536 ? "<64KiB" : (n > 4194304 ? ">4MiB" : "64KiB-4MiB")
    err = $9 < 0 ? -$9 : $9
    sum[run, op, band] += err; cnt[run, op, band]++
    sim[run, $1] = $8; names[$1] = 1
  }
  END {
    printf "# MAPE per size band (targets: <64KiB and >4MiB <= 10%%, 64KiB-4MiB <= 20%%)\n"
    printf "# %-4s %-12s %10s %10s %10s\n", "op", "band", "cal1", "cal2", "cal3"
    nops = split("ar ag bc", ops, " "); nb = split("<64KiB 64KiB-4MiB >4MiB", bands, " ")
    for (o = 1; o <= nops; o++) for (b = 1; b <= nb; b++) {
      printf "  %-4s %-12s", ops[o], bands[b]
      for (r = 1; r <= run; r++) printf " %9.1f%%", sum[r, ops[o], bands[b]] / cnt[r, ops[o], bands[b]]
      printf "\n"
    }
    worst = 0; n = 0; within = 0
    for (c in names) {
      lo = sim[1, c]; hi = lo
      for (r = 2; r <= run; r++) { if (sim[r, c] < lo) lo = sim[r, c]; if (sim[r, c] > hi) hi = sim[r, c] }
      d = (hi - lo) / lo * 100
      spread[++n] = d; within += d <= 5
      if (d > worst) { worst = d; at = c }
    }
    # insertion sort for the median spread (awk has no sort)
    for (i = 2; i <= n; i++) { v = spread[i]; for (j = i - 1; j >= 1 && spread[j] > v; j--) spread[j + 1] = spread[j]; spread[j + 1] = v }
    printf "# three calibrations: predictions within %.1f%% of each other (largest spread at %s; target 5%%)\n", worst, at
    printf "# spread per collective: median %.1f%%; %d of %d collectives within 5%%\n", spread[int((n + 1) / 2)], within, n
  }' "$out"/compare1/compare.csv "$out"/compare2/compare.csv "$out"/compare3/compare.csv
