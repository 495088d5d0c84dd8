#include "schedule/generators/collnet.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <variant>

#include "core/error.h"
#include "core/json_view.h"
#include "schedule/generators/channels.h"
#include "schedule/generators/host_blocks.h"
#include "schedule/generators/pipeline.h"
#include "topology/topology.h"

namespace collsim {
namespace {

// Edges between local ranks (0..per_host-1), repeated on every host.
Phase on_every_host(const std::vector<Edge>& local, HostBlocks layout) {
  Phase phase;
  for (int h = 0; h < layout.hosts; ++h)
    for (const Edge& e : local)
      phase.push_back({h * layout.per_host + e.src, h * layout.per_host + e.dst, e.kind});
  return phase;
}

// The rail's heads all-reduce in the switch: one op, issued by host 0's head (its switch
// group, one rank per host, holds the rest). None on one host.
void add_switch_phase(std::vector<Phase>& phases, int head, HostBlocks layout) {
  if (layout.hosts > 1) phases.push_back({{head, head, OpKind::SwitchAllReduce}});
}

// CollNetDirect on `region`: slice h of it headed by local rank h. The host's other GPUs
// reduce their part of the slice into the head, one after another (each reduction waits
// only for the one before to have left: they arrive together, schedule.h), the heads
// all-reduce it across hosts in the switch, and each head copies the result to the others.
std::vector<PhasedPlan> direct_plans(const Group& region, HostBlocks layout) {
  const int P = layout.per_host;
  std::vector<PhasedPlan> plans;
  for (int h = 0; h < P; ++h) {
    PhasedPlan plan{region.slice(region.chunk_begin(P, h), region.chunk_size(P, h)), {}};
    plan.group.channel = region.channel;
    for (int k = 1; k < P; ++k)
      plan.phases.push_back(on_every_host({{(h + k) % P, h, OpKind::Reduce}}, layout));
    add_switch_phase(plan.phases, h, layout);
    std::vector<Edge> out;
    for (int k = 1; k < P; ++k) out.push_back({h, (h + k) % P, OpKind::Copy});
    if (!out.empty()) plan.phases.push_back(on_every_host(out, layout));
    plans.push_back(std::move(plan));
  }
  return plans;
}

// CollNetChain on `region`, headed by local rank `head`: reduced up a chain through the
// host's GPUs to the head, all-reduced across hosts in the switch, broadcast back down.
std::vector<PhasedPlan> chain_plans(const Group& region, HostBlocks layout, int head) {
  PhasedPlan plan{region, {}};
  const int P = layout.per_host;
  for (const Phase& p : chain_phases(P, head, Direction::Reduce))
    plan.phases.push_back(on_every_host(p, layout));
  add_switch_phase(plan.phases, head, layout);
  for (const Phase& p : chain_phases(P, head, Direction::Broadcast))
    plan.phases.push_back(on_every_host(p, layout));
  return {std::move(plan)};
}

// NCCL's CollNetDirect gathers a host's GPUs into each head directly, at most
// NCCL_MAX_DIRECT_ARITY (7) peers and the head: 8 GPUs a host. "" where it fits. (The
// generator itself takes any: the replayer proves it for any block size.)
constexpr int kMostDirectPerHost = 8;
std::string direct_arity_problem(HostBlocks layout) {
  if (layout.per_host <= kMostDirectPerHost) return "";
  return fmt::format(
      "collnet_direct gathers at most {} GPUs of a host (NCCL's direct arity "
      "7 and the head); these ranks have {} on each; collnet_chain takes any",
      kMostDirectPerHost, layout.per_host);
}

template <bool kChain>
Schedule collnet_all_reduce(const CollectiveShape& shape, const AlgorithmOptions& o) {
  const char* name = kChain ? "collnet_chain" : "collnet_direct";
  const HostBlocks layout = host_blocks_or_throw(o.hosts, shape.ranks, name);
  const int C = std::max(1, o.channels);
  auto b = make_builder(shape, name, {}, C);
  if (layout.hosts > 1) b.set_network_group(layout.hosts, layout.per_host);
  const auto plans = channel_plans(shape, C, [&](const Group& region) {
    return kChain ? chain_plans(region, layout, region.channel % layout.per_host)
                  : direct_plans(region, layout);
  });
  run_pipelined(b, plans, std::max(1, o.segments), segment_elems(shape, o.segment_bytes));
  return b.finish();
}

// "hosts": the host of each rank (consecutive blocks of one size).
template <bool kChain>
void parse_collnet_hosts(const JsonView& object, AlgorithmOptions& o, const OptionContext& ctx) {
  parse_host_blocks(object, o, ctx, kChain ? "collnet_chain" : "collnet_direct");
}

// Hosts from the topology (when not given), then a network switch with "sharp": true
// over every rail (the GPUs at one place of every host).
template <bool kChain>
void collnet_defaults(AlgorithmOptions& o, const OptionContext& ctx) {
  const char* name = kChain ? "collnet_chain" : "collnet_direct";
  if (!ctx.topology) return;
  const HostBlocks layout = host_blocks_from(o, ctx, name);
  if (layout.hosts < 2)
    throw InputError(ctx.json_path,
                     fmt::format("{} reduces across hosts in the network; these {} ranks are on "
                                 "one host",
                                 name, ctx.ranks));
  if (const std::string why = kChain ? "" : direct_arity_problem(layout); !why.empty())
    throw InputError(ctx.json_path, why);
  require_rail_switches(ctx, layout, name);
}

// "channels": a count; "auto" (other candidates' rail rule) is one channel per GPU of a
// host, so that every head's NIC carries a channel (collnet_chain), or one (collnet_direct,
// whose every GPU heads a slice already).
template <bool kChain>
void parse_collnet_channels(const JsonView& object, AlgorithmOptions& o, const OptionContext&) {
  auto v = object.find("channels");
  if (!v) return;
  o.auto_channels = v->is_string() && v->as_string() == "auto";
  o.channels = o.auto_channels ? 1 : static_cast<int>(v->as_int(1, kMaxChannels));
}

template <bool kChain>
void settle_collnet_channels(AlgorithmOptions& o, const OptionContext& ctx) {
  if (o.auto_channels) {
    const auto blocks = host_blocks_of(o.hosts, ctx.ranks, "collnet");
    const int per_host =
        std::holds_alternative<HostBlocks>(blocks) ? std::get<HostBlocks>(blocks).per_host : 1;
    o.channels = kChain ? std::clamp(per_host, 1, kMaxChannels) : 1;
  }
  o.auto_channels = false;
  o.orders.clear();  // the heads are fixed by rail, not by a rank order
}

template <bool kChain>
AlgorithmEntry collnet_entry(std::string_view summary) {
  return {
      .op = CollectiveOp::AllReduce,
      .algorithm = kChain ? "collnet_chain" : "collnet_direct",
      .summary = summary,
      .generate = collnet_all_reduce<kChain>,
      .options = {segments_option(),
                  {"hosts", parse_collnet_hosts<kChain>, collnet_defaults<kChain>},
                  {"channels", parse_collnet_channels<kChain>, settle_collnet_channels<kChain>}},
      .switch_ops = true,
      .lanes = true,
      .nccl_family = kChain ? NcclAlgo::CollNetChain : NcclAlgo::CollNetDirect};
}

}  // namespace

void register_collnet(std::vector<AlgorithmEntry>& c) {
  c.push_back(collnet_entry<false>(
      "NCCL's CollNetDirect (InfiniBand SHARP): every GPU heads a slice of the buffer; its "
      "host's other GPUs reduce their part of it into the head, the heads of one rail (one "
      "GPU per host) all-reduce it in a network switch with \"sharp\": true, and each head "
      "copies the result back to its host's GPUs; pipelined with `segments`, `channels` "
      "independent copies on slices. Each host has the same number of consecutive ranks "
      "(`hosts` defaults to the topology's), on at least two hosts, at most 8 a host (NCCL's "
      "direct arity)."));
  c.push_back(collnet_entry<true>(
      "NCCL's CollNetChain (InfiniBand SHARP): per channel, a chain through each host's GPUs "
      "reduces to the channel's head (rail c for channel c), the heads (one GPU per host) "
      "all-reduce in a network switch with \"sharp\": true, and the result goes back down "
      "the chain; pipelined with `segments`, `channels` chains on slices of the buffer "
      "(\"auto\": one per GPU of a host, every NIC a head). Each host has the same number of "
      "consecutive ranks (`hosts` defaults to the topology's), on at least two hosts."));
}

}  // namespace collsim
