#!/usr/bin/env bash
# The layers of sim/, lowest first: a folder may include its own headers and those of
# the layers below it, never above (docs/architecture.md). An include that points up
# (a cycle in the making) fails this check, which runs as a test.
#   check_layers.sh [REPOSITORY]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
layers=(
  core        # errors, units, JSON paths, input files, the stop flag
  engine      # the event queue
  topology    # the cluster graph and its routes
  schedule    # the schedule IR and the generators
  replay      # schedules run on real buffers
  network     # how transfers share links: ideal, flow, packet, cost models
  nccl        # NCCL's tuning model and protocols
  request     # one collective as asked for
  workload    # training steps and Chakra traces, as step graphs
  scenario    # a scenario file, loaded and checked
  plan        # every choice settled (algorithm, protocol, channels)
  simulate    # plans and step graphs timed on the network
  sweep       # many plans over sizes, algorithms, splits
  report      # tables, CSV, JSON, HTML, traces
)
declare -A rank  # a layer's position in the list, looked up once per include
for i in "${!layers[@]}"; do rank[${layers[$i]}]=$i; done
status=0
for folder in sim/*/; do
  layer=$(basename "$folder")
  own=${rank[$layer]:--1}
  if [[ $own == -1 ]]; then
    echo "sim/$layer: not in the list of layers (tools/check_layers.sh); place it there" >&2
    status=1
    continue
  fi
  while IFS=: read -r file line text; do
    target=${text#\#include \"}
    target=${target%%/*}
    dep=${rank[$target]:--1}
    [[ $dep == -1 ]] && continue  # not a sim/ folder (a generated header, a tool's)
    if ((dep > own)); then
      echo "$file:$line: $layer includes $target, a layer above it: $text" >&2
      status=1
    fi
  done < <(grep -rnE '^#include "[a-z_]+/' "$folder" --include='*.h' --include='*.cpp' || true)
done
[[ $status == 0 ]] && echo "sim/: ${#layers[@]} layers, every include points down"
exit $status
