#!/usr/bin/env bash
# The layers of sim/, lowest first: a folder may include its own headers and those of
# the layers below it, never above (docs/architecture.md). An include that points up
# (a cycle in the making) fails this check, which runs as a test. Each folder is also a
# library of its own (sim/CMakeLists.txt): its links must point down too, and reach
# (directly or through a lower layer) every layer its includes use.
#   check_layers.sh [REPOSITORY [GRAPH.dot]]
# With GRAPH.dot (cmake --graphviz=GRAPH.dot in a build folder) the links are read from
# what CMake built; without, from the USES lists in sim/CMakeLists.txt.
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

# The link graph: "a b" per edge, layer names without the collsim_ prefix.
declare -A links
if [[ $# -ge 2 ]]; then
  edges=$(sed -nE 's|.*// collsim_([a-z]+) -> collsim_([a-z]+)$|\1 \2|p' "$2")
else
  edges=$(tr '\n' ' ' <sim/CMakeLists.txt | grep -oE 'collsim_layer\([a-z]+[^)]*\)' |
    sed -nE 's/collsim_layer\(([a-z]+).*USES ([a-z ]+)\)/\1 \2/p' |
    while read -r from uses; do for to in $uses; do echo "$from $to"; done; done)
fi
while read -r from to; do
  [[ -z $from ]] && continue
  links[$from]+=" $to"
  [[ -z ${rank[$to]:-} || -z ${rank[$from]:-} ]] && continue
  if ((rank[$to] >= rank[$from])); then
    echo "collsim_$from links collsim_$to, a layer not below it" >&2
    status=1
  fi
done <<<"$edges"
reaches() {  # reaches FROM TO [DEPTH]: whether FROM's links lead to TO (a cycle, already
  local next depth=${3:-0}  # reported above, is cut off at the number of layers)
  ((depth > ${#layers[@]})) && return 1
  for next in ${links[$1]:-}; do
    [[ $next == "$2" ]] && return 0
    reaches "$next" "$2" $((depth + 1)) && return 0
  done
  return 1
}
for folder in sim/*/; do
  layer=$(basename "$folder")
  for target in $(grep -rhoE '^#include "[a-z_]+/' "$folder" --include='*.cpp' --include='*.h' |
                  sed -E 's/#include "([a-z_]+)\//\1/' | sort -u); do
    [[ $target == "$layer" || -z ${rank[$target]:-} ]] && continue
    if ! reaches "$layer" "$target"; then
      echo "sim/$layer includes $target but collsim_$layer does not link it (sim/CMakeLists.txt USES)" >&2
      status=1
    fi
  done
done
[[ $status == 0 ]] && echo "sim/: ${#layers[@]} layers, every include and every link points down"
exit $status
