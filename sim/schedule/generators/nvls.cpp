#include "schedule/generators/nvls.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "schedule/layout.h"
#include "topology/topology.h"

namespace collsim {
namespace {

// Step t reduces piece t and multicasts piece t - 1: the up and down directions of
// every link work at once, one piece each, so a piece at a time owns each link.
// Piece p is issued by rank p mod K (its staging range lives in that rank's scratch
// buffer at the piece's offset), spreading the issuing work as NCCL's heads do.
Schedule nvls_all_reduce(const CollectiveShape& shape, const AlgorithmOptions& o) {
  const int K = shape.ranks;
  const int pieces = K * std::max(1, o.segments);
  const Partition part{shape.count, pieces};
  auto b = make_builder(shape, "nvls", {shape.count});
  const int staging = data_buffer_count(shape.op);
  for (int t = 0; t <= pieces; ++t) {
    if (t < pieces)
      b.switch_reduce(0, part.begin(t), {t % K, staging, part.begin(t)}, part.size(t));
    if (t > 0) {
      const int p = t - 1;
      b.multicast({p % K, staging, part.begin(p)}, 0, part.begin(p), part.size(p));
    }
    b.next_step();
  }
  return b.finish();
}

// The planner asks for defaults with the topology: refusing here is how "auto"
// learns that NVLS does not apply.
void require_sharp_switch(AlgorithmOptions&, const OptionContext& ctx) {
  if (!ctx.topology) return;
  std::vector<NodeId> gpus;
  for (int r : ctx.placed) gpus.push_back(ctx.topology->gpu_of_rank(r));
  if (!sharp_switch_of(*ctx.topology, gpus))
    throw InputError(ctx.json_path,
                     "nvls needs its GPUs on one NVSwitch fabric with \"sharp\": true");
}

}  // namespace

void register_nvls(std::vector<AlgorithmEntry>& c) {
  OptionDef segments = segments_option();
  segments.defaults = require_sharp_switch;
  c.push_back({.op = CollectiveOp::AllReduce,
               .algorithm = "nvls",
               .generate = nvls_all_reduce,
               .options = {segments}});
}

}  // namespace collsim
