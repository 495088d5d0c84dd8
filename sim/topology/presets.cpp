#include "topology/presets.h"

#include <fmt/format.h>

namespace collsim {
namespace {

std::vector<NodeId> add_gpus(Topology& t, int gpus) {
  std::vector<NodeId> ids;
  for (int r = 0; r < gpus; ++r) ids.push_back(t.add_node({fmt::format("gpu{}", r), NodeKind::Gpu, r, 0}));
  return ids;
}

}  // namespace

Topology make_switch_topology(int gpus, double bandwidth, Time latency, LinkKind kind) {
  Topology t;
  t.name = fmt::format("switch-{}", gpus);
  const auto ids = add_gpus(t, gpus);
  const NodeId sw = t.add_node({"switch", kind == LinkKind::NvLink ? NodeKind::NvSwitch : NodeKind::Switch});
  for (NodeId g : ids) t.add_duplex(g, sw, bandwidth, latency, kind);
  t.assign_ranks();
  return t;
}

Topology make_ring_topology(int gpus, double bandwidth, Time latency, bool bidirectional, LinkKind kind) {
  Topology t;
  t.name = fmt::format("ring-{}", gpus);
  const auto ids = add_gpus(t, gpus);
  if (gpus > 1) {
    for (int r = 0; r < gpus; ++r) {
      const NodeId a = ids[r], b = ids[(r + 1) % gpus];
      if (gpus == 2 && r == 1) break;  // two GPUs share one cable, not two
      if (bidirectional)
        t.add_duplex(a, b, bandwidth, latency, kind);
      else
        t.add_link({a, b, bandwidth, latency, kind});
    }
    if (gpus == 2 && !bidirectional) t.add_link({ids[1], ids[0], bandwidth, latency, kind});
  }
  t.assign_ranks();
  return t;
}

}  // namespace collsim
