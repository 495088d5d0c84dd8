#include "nccl/protocol.h"

#include "core/nccl_published.h"
#include "schedule/algorithms.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace collsim {
namespace {

constexpr std::size_t idx(auto e) {
  return static_cast<std::size_t>(e);
}

}  // namespace

std::string_view name_of(Protocol p) {
  constexpr std::array<std::string_view, 3> names{"LL", "LL128", "Simple"};
  return names[idx(p)];
}

std::optional<Protocol> protocol_from_name(std::string_view name) {
  for (Protocol p : kProtocols)
    if (name_of(p) == name) return p;
  return std::nullopt;
}

std::string_view name_of(NcclAlgo a) {
  constexpr std::array<std::string_view, 7> names{
      "tree", "ring", "nvls", "nvls_tree", "pat", "collnet_direct", "collnet_chain"};
  return names[idx(a)];
}

NcclAlgo nccl_family(CollectiveOp op, std::string_view algorithm) {
  const AlgorithmEntry* e = find_algorithm(op, algorithm);
  return e ? e->nccl_family : NcclAlgo::Ring;
}

double nccl_base_latency_us(NcclAlgo a, Protocol p) {
  return nccl_published::kBaseLatencyUs[idx(a)][idx(p)];
}

double nccl_hop_latency_us(HopClass hw, NcclAlgo a, Protocol p) {
  return nccl_published::kHopLatencyUs[idx(hw)][idx(a)][idx(p)];
}

HopClass hop_class(LinkKind k) {
  switch (k) {
    case LinkKind::NvLink:
    case LinkKind::NvSwitch:
      return HopClass::NvLink;
    case LinkKind::Pcie:
      return HopClass::Pci;
    default:
      return HopClass::Net;
  }
}

double protocol_efficiency(Protocol p) {
  return nccl_published::kProtocolDataShare[idx(p)];
}

nccl_published::Arch gpu_arch(const Topology& t, NodeId gpu) {
  return t.gpu ? t.gpu->arch : nccl_published::arch_of_nvlink(gpu_nvlink_bandwidth(t, gpu));
}

double nvlink_usable_fraction(nccl_published::Arch arch) {
  return nccl_published::kNvlinkUsable[nccl_published::index(arch)];
}

double net_usable_fraction(const Topology& t, NodeId gpu) {
  // The rate of the fastest NIC on the GPU's host, into the network.
  double nic = 0;
  const int host = t.node(gpu).host;
  for (const Link& l : t.links()) {
    const Node& src = t.node(l.src);
    if (src.kind == NodeKind::Nic && src.host == host && hop_class(l.kind) == HopClass::Net)
      nic = std::max(nic, l.bandwidth);
  }
  // Channels of the fastest listed speed the NIC holds (a NIC faster than the list's top
  // carries several), over the NIC's rate.
  const auto arch = gpu_arch(t, gpu);
  for (double speed : nccl_published::kInterSpeeds[nccl_published::index(arch)])
    if (nic > 0 && speed * 1e9 <= nic) return std::floor(nic / (speed * 1e9)) * speed * 1e9 / nic;
  return 1;
}

double gpu_nvlink_bandwidth(const Topology& t, NodeId gpu) {
  double sum = 0;
  for (const Link& l : t.links())
    if (l.src == gpu && hop_class(l.kind) == HopClass::NvLink) sum += l.bandwidth;
  return sum;
}

namespace {

// A stated machine term stands for NCCL's ring/Simple entry of the same quantity; NCCL's
// other algorithms and protocols keep their published ratios to that entry. A factor
// of 1 where nothing was stated: NCCL's table as published.
double launch_scale(const CostModel& m) {
  if (!m.stated.launch) return 1;
  return to_seconds(m.launch) * 1e6 / nccl_base_latency_us(NcclAlgo::Ring, Protocol::Simple);
}

double hop_scale(const CostModel& m, std::size_t kind) {
  if (!m.stated.latency[kind]) return 1;
  const HopClass hw = hop_class(static_cast<LinkKind>(kind));
  return to_seconds(m.links[kind].latency) * 1e6 /
         nccl_hop_latency_us(hw, NcclAlgo::Ring, Protocol::Simple);
}

}  // namespace

std::shared_ptr<CostModel> protocol_cost(const std::shared_ptr<const CostModel>& base, Protocol p,
                                         NcclAlgo a, const Topology& t, bool across_hosts,
                                         bool chain) {
  CostModel m = base ? *base : CostModel{};
  m.latency_replaces_alpha = true;
  // NVLS's NVLink latency is the whole collective's (NCCL: lat = intraLat), not a hop's;
  // so is CollNet's network latency, and NVLS's across hosts (NCCL: + interLat, once: the
  // network's switches stream every chunk of the pipeline through, NCCL_STEPS in flight).
  // A ring's chain likewise (NCCL: baseLat + one hop's latency, the network's across hosts):
  // charged per hop, a chain of 8 GPUs on Simple paid 7 x 3.4 us where NCCL's model of its
  // pick says 3.4, and doubling NVLink's rate made a 1 MiB broadcast twice as slow.
  const bool chain_once = chain && a == NcclAlgo::Ring;
  // CollNetDirect's NVLink latency too: NCCL counts it twice (up to the GPU that talks to
  // the network, and back) for the whole collective. Per hop and per segment, each segment
  // waited for the one before, latency included: 64 segments of 256 KiB took 278 us.
  const bool direct = a == NcclAlgo::CollNetDirect;
  const bool once = a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree || chain_once || direct;
  const bool net_once = a == NcclAlgo::CollNetDirect || a == NcclAlgo::CollNetChain ||
                        (a == NcclAlgo::Nvls && across_hosts) || chain_once;
  const auto nvlink_kind = static_cast<std::size_t>(LinkKind::NvLink);
  // A stated network latency scales it as it scales that kind's hops.
  std::size_t net_kind = static_cast<std::size_t>(LinkKind::Ib);
  for (std::size_t k = 0; k < kLinkKindCount; ++k)
    if (hop_class(static_cast<LinkKind>(k)) == HopClass::Net && m.stated.latency[k]) {
      net_kind = k;
      break;
    }
  const double nvlink_once = once && !(chain_once && across_hosts)
                                 ? (direct ? 2 : 1) * nccl_hop_latency_us(HopClass::NvLink, a, p) *
                                       hop_scale(m, nvlink_kind)
                                 : 0;
  const double net_latency_once =
      net_once && !(chain_once && !across_hosts)
          ? nccl_hop_latency_us(HopClass::Net, a, p) * hop_scale(m, net_kind)
          : 0;
  // A stated launch is this machine's ring/Simple base latency: it replaces the table's.
  const Time own_launch = m.stated.launch ? Time{0} : m.launch;
  m.launch = add_time(own_launch, from_seconds((nccl_base_latency_us(a, p) * launch_scale(m) +
                                                nvlink_once + net_latency_once) *
                                               1e-6));
  const double nvlink =
      t.num_ranks() > 0 ? nvlink_usable_fraction(gpu_arch(t, t.gpu_of_rank(0))) : 1;
  const double net = t.num_ranks() > 0 ? net_usable_fraction(t, t.gpu_of_rank(0)) : 1;
  for (std::size_t k = 0; k < kLinkKindCount; ++k) {
    const HopClass hw = hop_class(static_cast<LinkKind>(k));
    LinkKindCost& c = m.links[k];
    // The PCIe hop to the NIC is part of the network's leg, whose latency NCCL counts (once
    // with CollNet: a switch op's legs paid 3.7 us on it per segment, and each segment waited
    // for the last to arrive).
    const bool paid_once = (once && hw == HopClass::NvLink) ||
                           (net_once && (hw == HopClass::Net || hw == HopClass::Pci));
    const double hop = paid_once ? 0 : nccl_hop_latency_us(hw, a, p) * hop_scale(m, k);
    const Time own_latency = m.stated.latency[k] ? Time{0} : c.latency;
    c.latency = add_time(own_latency, from_seconds(hop * 1e-6));
    // A stated efficiency (or measured rate) is the usable share: NCCL's NVLink share is its
    // default for the same thing. The protocol's framing applies on top of either.
    const double usable = m.stated.efficiency[k] ? 1.0
                          : hw == HopClass::NvLink ? nvlink
                          : hw == HopClass::Net    ? net
                                                   : 1.0;
    c.efficiency *= protocol_efficiency(p) * usable;
  }
  return std::make_shared<CostModel>(std::move(m));
}

}  // namespace collsim
