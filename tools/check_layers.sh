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
rank_of() {
  for i in "${!layers[@]}"; do [[ ${layers[$i]} == "$1" ]] && { echo "$i"; return; }; done
  echo -1
}
status=0
for folder in sim/*/; do
  layer=$(basename "$folder")
  own=$(rank_of "$layer")
  if [[ $own == -1 ]]; then
    echo "sim/$layer: not in the list of layers (tools/check_layers.sh); place it there" >&2
    status=1
    continue
  fi
  while IFS=: read -r file line text; do
    target=$(sed -E 's|#include "([a-z_]+)/.*|\1|' <<<"$text")
    dep=$(rank_of "$target")
    [[ $dep == -1 ]] && continue  # not a sim/ folder (a generated header, a tool's)
    if ((dep > own)); then
      echo "$file:$line: $layer includes $target, a layer above it: $text" >&2
      status=1
    fi
  done < <(grep -rnE '^#include "[a-z_]+/' "$folder" --include='*.h' --include='*.cpp' || true)
done
[[ $status == 0 ]] && echo "sim/: ${#layers[@]} layers, every include points down"
exit $status
