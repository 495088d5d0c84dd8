#include "schedule/generators/nvls.h"

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

// NVLS on `region` (ranks = every rank of the schedule, a switch group per host of
// `layout`): slice p of the region is reduced by the switch of each group, issued by
// the group's p-th rank (in place: the result lands in that rank's buffer), joined across
// groups over NCCL's two binary trees (nccl_double_tree; none with one group), and
// multicast back by each issuer to its group. Each issuer sends half its slice over each
// tree, as NCCL's channels of either tree share a head's NIC: a group that is an inner
// node of one tree is a leaf of the other, so every NIC carries about the same. Pipelined:
// segment s of every slice runs phase j in step s + j, so the reduce of one segment
// overlaps the multicast of the one before.
std::vector<PhasedPlan> nvls_plans(const Group& region, HostBlocks layout, bool network) {
  std::vector<PhasedPlan> plans;
  const int n = layout.per_host, groups = layout.hosts;
  auto plan_on = [&](const Group& part, int p, bool second_tree) {
    PhasedPlan plan{part, {}};
    plan.group.channel = region.channel;
    auto issuer = [&](int g) { return g * n + p; };
    Phase reduce, multicast;
    for (int g = 0; g < groups; ++g) {
      reduce.push_back({issuer(g), issuer(g), OpKind::SwitchReduce});
      multicast.push_back({issuer(g), issuer(g), OpKind::Multicast});
    }
    plan.phases.push_back(std::move(reduce));
    if (groups > 1 && network)
      plan.phases.push_back({{issuer(0), issuer(0), OpKind::SwitchAllReduce}});
    else if (groups > 1)
      for (Phase phase : tree_all_reduce_phases(nccl_double_tree(groups, second_tree))) {
        for (Edge& e : phase) e = {issuer(e.src), issuer(e.dst), e.kind};
        plan.phases.push_back(std::move(phase));
      }
    plan.phases.push_back(std::move(multicast));
    plans.push_back(std::move(plan));
  };
  for (int p = 0; p < n; ++p) {
    const Group slice = region.slice(region.chunk_begin(n, p), region.chunk_size(n, p));
    if (groups == 1 || network || slice.count < 2) {
      plan_on(slice, p, p % 2 == 1);
      continue;
    }
    plan_on(slice.slice(0, slice.count / 2), p, false);
    plan_on(slice.slice(slice.count / 2, slice.count - slice.count / 2), p, true);
  }
  return plans;
}

Schedule nvls_schedule(const CollectiveShape& shape, const AlgorithmOptions& o, const char* name,
                       HostBlocks layout, bool network) {
  const int C = std::max(1, o.channels);
  auto b = make_builder(shape, name, {}, C);
  b.set_switch_group(layout.hosts > 1 ? layout.per_host : 0);
  if (network && layout.hosts > 1) b.set_network_group(layout.hosts, layout.per_host);
  const auto plans = channel_plans(
      shape, C, [&](const Group& region) { return nvls_plans(region, layout, network); });
  run_pipelined(b, plans, std::max(1, o.segments), segment_elems(shape, o.segment_bytes));
  return b.finish();
}

// Across hosts, NVLS joins the hosts' switches in the network's (NCCL's NVLS with CollNet).
Schedule nvls_all_reduce(const CollectiveShape& shape, const AlgorithmOptions& o) {
  return nvls_schedule(shape, o, "nvls", host_blocks_or_throw(o.hosts, shape.ranks, "nvls"), true);
}

Schedule nvls_tree_all_reduce(const CollectiveShape& shape, const AlgorithmOptions& o) {
  return nvls_schedule(shape, o, "nvls_tree",
                       host_blocks_or_throw(o.hosts, shape.ranks, "nvls_tree"), false);
}

// NCCL's NVLS reduce-scatter and all-gather, every rank on one sharp NVSwitch: rank p's
// chunk is its slice. Reduce-scatter: the switch reduces chunk p from every rank into rank
// p (multimem.ld_reduce); all-gather: rank p stores chunk p once and the switch multicasts
// it to every rank (multimem.st). Channel c takes lane c of every chunk, so each chunk
// stays where the collective's layout puts it.
Schedule nvls_one_phase(const CollectiveShape& shape, const AlgorithmOptions& o, const char* name,
                        OpKind kind) {
  const int C = std::max(1, o.channels);
  const int K = shape.ranks;
  auto b = make_builder(shape, name, {}, C);
  std::vector<PhasedPlan> plans;
  for (const Group& lane : channel_groups(whole_group(shape), o, ChannelSplit::Lanes, 1))
    for (int p = 0; p < K; ++p) {  // member p issues its rank's chunk (in any rank order)
      const int chunk = lane.chunk_of(p);
      plans.push_back(
          {lane.slice(lane.chunk_begin(K, chunk), lane.chunk_size(K, chunk)), {{{p, p, kind}}}});
    }
  run_pipelined(b, plans, std::max(1, o.segments), segment_elems(shape, o.segment_bytes));
  return b.finish();
}

Schedule nvls_reduce_scatter(const CollectiveShape& shape, const AlgorithmOptions& o) {
  return nvls_one_phase(shape, o, "nvls", OpKind::SwitchReduce);
}

Schedule nvls_all_gather(const CollectiveShape& shape, const AlgorithmOptions& o) {
  return nvls_one_phase(shape, o, "nvls", OpKind::Multicast);
}

// Every block of `n` ranks on one NVSwitch with "sharp": true, or an InputError.
void require_sharp_switches(const OptionContext& ctx, int n, const char* algorithm) {
  if (!ctx.topology) return;
  for (int first = 0; first < static_cast<int>(ctx.placed.size()); first += n) {
    std::vector<NodeId> gpus;
    for (int m = first; m < first + n; ++m) gpus.push_back(ctx.topology->gpu_of_rank(ctx.placed[m]));
    if (!sharp_switch_of(*ctx.topology, gpus, SharpReach::NvLink))
      throw InputError(ctx.json_path,
                       n == static_cast<int>(ctx.placed.size())
                           ? fmt::format("{} needs all {} GPUs linked to one NVSwitch with "
                                         "\"sharp\": true (NVLink SHARP); this topology has none",
                                         algorithm, n)
                           : fmt::format("{} needs the GPUs of ranks {}..{} linked to one NVSwitch "
                                         "with \"sharp\": true (NVLink SHARP); this topology has "
                                         "none",
                                         algorithm, first, first + n - 1));
  }
}

// The planner asks for defaults with the topology: refusing here is how "auto" learns
// that NVLS does not apply. Every rank on one sharp NVSwitch: NVLS there. Across hosts, one
// per host and a network switch that reduces over each rail (NCCL's NVLS with CollNet).
void nvls_defaults(AlgorithmOptions& o, const OptionContext& ctx) {
  if (!ctx.topology) return;
  if (o.hosts.empty()) {
    std::vector<NodeId> gpus;
    for (int r : ctx.placed) gpus.push_back(ctx.topology->gpu_of_rank(r));
    if (sharp_switch_of(*ctx.topology, gpus, SharpReach::NvLink)) return;
  }
  const HostBlocks layout = host_blocks_from(o, ctx, "nvls");
  require_sharp_switches(ctx, layout.per_host, "nvls");
  if (layout.hosts > 1) require_rail_switches(ctx, layout, "nvls");
}

template <const char* kName>
void parse_nvls_hosts(const JsonView& object, AlgorithmOptions& o, const OptionContext& ctx) {
  parse_host_blocks(object, o, ctx, kName);
}
constexpr char kNvls[] = "nvls";
constexpr char kNvlsTree[] = "nvls_tree";

// Hosts from the topology (when not given), then one sharp switch per host.
void nvls_tree_defaults(AlgorithmOptions& o, const OptionContext& ctx) {
  if (!ctx.topology) return;
  require_sharp_switches(ctx, host_blocks_from(o, ctx, "nvls_tree").per_host, "nvls_tree");
}

// "channels": a count; "auto" (which other candidates of "algorithm": "auto" read as
// their rail rule) is one channel here.
void parse_nvls_channels(const JsonView& object, AlgorithmOptions& o, const OptionContext&) {
  auto v = object.find("channels");
  if (!v) return;
  o.auto_channels = v->is_string() && v->as_string() == "auto";
  o.channels = o.auto_channels ? 1 : static_cast<int>(v->as_int(1, kMaxChannels));
}

void settle_nvls_channels(AlgorithmOptions& o, const OptionContext&) {
  if (o.auto_channels) o.channels = 1;
  o.auto_channels = false;
  o.orders.clear();  // a switch has no rank order
}

// Reduce-scatter and all-gather, which take no hosts: every rank on one sharp NVSwitch
// (NCCL runs them over NVLS on one node, or across nodes only with CollNet, which collsim
// does not model). The planner asks for defaults with the topology: refusing here is how
// "auto" learns that NVLS does not apply.
void settle_one_switch(AlgorithmOptions& o, const OptionContext& ctx) {
  settle_nvls_channels(o, ctx);
  require_sharp_switches(ctx, static_cast<int>(ctx.placed.size()), "nvls");
}

}  // namespace

void register_nvls(std::vector<AlgorithmEntry>& c) {
  OptionDef segments = segments_option();
  // Channels here are independent pipelines on slices of the buffer; which GPU a
  // channel enters by does not matter to a switch, so there are no rank orders and no
  // "auto" rule.
  const OptionDef channels{"channels", parse_nvls_channels, settle_nvls_channels};
  c.push_back({.op = CollectiveOp::AllReduce,
               .algorithm = "nvls",
               .summary = "NVLink SHARP: on one NVSwitch of K GPUs (\"sharp\": true), every GPU "
                          "issues its slice of N/K; the switch reduces the slice from all K GPUs "
                          "into the issuer and the issuer multicasts it back, one segment's "
                          "reduce overlapping the previous one's multicast. Needs a network "
                          "model that shares links. Across hosts (`hosts`, by default the "
                          "topology's, where no one NVSwitch holds every GPU; the same number "
                          "of consecutive ranks on each): each host's sharp NVSwitch, and "
                          "between a slice's switch reduce and its multicast the slice's "
                          "issuers (one GPU per host, the same rail) all-reduce it in a network "
                          "switch with \"sharp\": true (NCCL's NVLS with CollNet).",
               .generate = nvls_all_reduce,
               .options = {segments, channels, {"hosts", parse_nvls_hosts<kNvls>, nvls_defaults}},
               .switch_ops = true,
               .lanes = true,
               .nccl_family = NcclAlgo::Nvls});
  const auto one_phase = [&](CollectiveOp op, const char* summary, auto generate) {
    c.push_back({.op = op,
                 .algorithm = "nvls",
                 .summary = summary,
                 .generate = generate,
                 .options = {segments, {"channels", parse_nvls_channels, settle_one_switch}},
                 .switch_ops = true,
                 .lanes = true,
                 .nccl_family = NcclAlgo::Nvls});
  };
  one_phase(CollectiveOp::ReduceScatter,
            "NVLink SHARP on one NVSwitch of K GPUs (\"sharp\": true): every GPU issues its "
            "own chunk, which the switch reduces from all K GPUs into it; one op per GPU and "
            "segment. Needs a network model that shares links.",
            nvls_reduce_scatter);
  one_phase(CollectiveOp::AllGather,
            "NVLink SHARP on one NVSwitch of K GPUs (\"sharp\": true): every GPU stores its "
            "own chunk once and the switch multicasts it to all K GPUs; one op per GPU and "
            "segment. Needs a network model that shares links.",
            nvls_all_gather);
  c.push_back(
      {.op = CollectiveOp::AllReduce,
       .algorithm = "nvls_tree",
       .summary = "NCCL's NVLSTree: `nvls` inside each host, and between a slice's "
                  "switch reduce and its multicast, the slice's issuers (one GPU per "
                  "host, the same rail) all-reduce it across hosts, half over each of "
                  "NCCL's two binary trees (as NCCL's even and odd channels), so every "
                  "NIC carries about the same. Each host has the same number of "
                  "consecutive ranks, on a sharp NVSwitch.",
       .generate = nvls_tree_all_reduce,
       .options = {segments, channels, {"hosts", parse_nvls_hosts<kNvlsTree>, nvls_tree_defaults}},
       .switch_ops = true,
       .lanes = true,
       .nccl_family = NcclAlgo::NvlsTree});
}

}  // namespace collsim
