#pragma once
// Channels: C independent copies of an algorithm, each on its own part of the data
// and in its own rank order, as NCCL runs them. On a multi-node fabric each channel's
// ring enters and leaves every node through the GPU of one rail, so the C channels
// spread over the nodes' NICs instead of all crossing one.
#include <vector>

#include "schedule/algorithms.h"

namespace collsim {

// Op::channel is a byte, and an algorithm may use two per group (double binary tree).
inline constexpr int kMaxChannels = 64;

// The groups of `whole` one per channel: its data split by `split`, channel c on
// builder channels [c * per_group, (c + 1) * per_group), members in o.orders[c].
std::vector<Group> channel_groups(const Group& whole, const AlgorithmOptions& o, ChannelSplit split,
                                  int per_group);

// Defaults from the topology: "auto" channels (one per rail of a multi-node fabric,
// else one), and rail-aware member orders when the members span several hosts.
void channel_defaults(AlgorithmOptions& o, const OptionContext& ctx);

// Rail-aware orders for `channels` channels over members placed on `hosts[m]` with
// rail (local GPU index) `rails[m]`; empty when the hosts are not all the same size.
std::vector<std::vector<int>> rail_orders(const std::vector<int>& hosts,
                                          const std::vector<int>& rails, int channels);

}  // namespace collsim
