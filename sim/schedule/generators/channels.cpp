#include "schedule/generators/channels.h"

#include <algorithm>
#include <map>

#include "topology/topology.h"

namespace collsim {

std::vector<Group> channel_groups(const Group& whole, const AlgorithmOptions& o, ChannelSplit split,
                                  int per_group) {
  const int C = std::max(1, o.channels);
  const Partition slices{whole.count, C};
  std::vector<Group> out;
  for (int c = 0; c < C; ++c) {
    Group g = split == ChannelSplit::Slices ? whole.slice(slices.begin(c), slices.size(c)) : whole;
    if (split == ChannelSplit::Lanes) {
      g.lane = c;
      g.lanes = C;
    }
    g.channel = whole.channel + c * per_group;
    if (!o.orders.empty()) {
      g.ranks = o.orders[c % o.orders.size()];
      if (split == ChannelSplit::Lanes) g.chunk_order = g.ranks;  // members of `whole` = chunks
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<std::vector<int>> rail_orders(const std::vector<int>& hosts,
                                          const std::vector<int>& rails, int channels) {
  // members[k][r]: the member on the k-th host (in order of appearance) at rail r.
  std::map<int, int> host_index;
  std::vector<std::map<int, int>> members;
  for (std::size_t m = 0; m < hosts.size(); ++m) {
    auto [it, fresh] = host_index.try_emplace(hosts[m], static_cast<int>(members.size()));
    if (fresh) members.emplace_back();
    members[it->second][rails[m]] = static_cast<int>(m);
  }
  const int n = static_cast<int>(members.size());
  const int g = static_cast<int>(members.front().size());
  if (n < 2) return {};
  for (const auto& host : members)
    if (static_cast<int>(host.size()) != g || host.rbegin()->first != g - 1) return {};
  // Channel c enters even hosts at rail c and leaves at rail c+1 (walking the rails
  // down), and odd hosts the other way round, so every hop between hosts stays on one
  // rail; with an odd number of hosts the hop back to the first crosses rails.
  std::vector<std::vector<int>> orders(channels);
  for (int c = 0; c < channels; ++c) {
    const int first = c % g;
    for (int k = 0; k < n; ++k)
      for (int step = 0; step < g; ++step) {
        const int rail = k % 2 == 0 ? (first - step + g) % g : (first + 1 + step) % g;
        orders[c].push_back(members[k].at(rail));
      }
  }
  return orders;
}

void channel_defaults(AlgorithmOptions& o, const OptionContext& ctx) {
  if (!ctx.topology) return;
  const Topology& t = *ctx.topology;
  // Each member's host, and its rail: its GPU's position among its host's GPUs.
  std::vector<int> hosts, rails;
  std::map<int, int> gpus_of_host;                 // how many GPUs each host has
  std::vector<int> rail_of(t.nodes().size(), -1);  // per GPU: its place among its host's
  for (NodeId id = 0; id < static_cast<NodeId>(t.nodes().size()); ++id)
    if (t.node(id).kind == NodeKind::Gpu) rail_of[id] = gpus_of_host[t.node(id).host]++;
  for (int r : ctx.placed) {
    const NodeId gpu = t.gpu_of_rank(r);
    hosts.push_back(t.node(gpu).host);
    rails.push_back(rail_of[gpu]);
  }
  const bool known = std::none_of(hosts.begin(), hosts.end(), [](int h) { return h < 0; });
  const bool multi_host =
      known && std::any_of(hosts.begin(), hosts.end(), [&](int h) { return h != hosts.front(); });
  if (o.auto_channels) {
    o.channels = multi_host ? gpus_of_host[hosts.front()] : 1;
    o.channels = std::clamp(o.channels, 1, kMaxChannels);
    o.auto_channels = false;
  }
  if (o.channels > 1 && o.orders.empty() && multi_host)
    o.orders = rail_orders(hosts, rails, o.channels);
}

}  // namespace collsim
