#include "nccl/nccl_model.h"

#include <fmt/format.h>
#include <algorithm>
#include <bit>
#include <cmath>
#include <set>
#include <stdexcept>

#include "core/nccl_published.h"

namespace collsim {
namespace {

using nccl_published::Arch;

int node_bucket(int nodes) {
  return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2;
}

// LL's cap (docs/nccl.md §1.6): on one host by the GPUs' generation, across hosts by the
// hosts' CPU vendor.
double ll_max_bw(Arch a, int nodes, HostCpu hosts) {
  if (nodes <= 1) return nccl_published::kLlMaxBw[index(a)][0];
  const auto& row =
      hosts == HostCpu::Amd ? nccl_published::kLlMaxBwAmdHosts : nccl_published::kLlMaxBwIntelHosts;
  return row[node_bucket(nodes) - 1];
}
double per_ch_ring_ll128(Arch a) {
  return nccl_published::kPerChannelRingLl128[index(a)];
}
double per_ch_tree(Arch a, int nodes) {
  return nccl_published::kPerChannelTree[index(a)][node_bucket(nodes)];
}
double per_ch_tree_ll128(Arch a, int nodes) {
  return nccl_published::kPerChannelTreeLl128[index(a)][node_bucket(nodes)];
}
double per_ch_nvls_tree(Arch a, int nodes) {
  return nccl_published::kPerChannelNvlsTree[index(a)][node_bucket(nodes)];
}
double nvls_efficiency(Arch a) {
  return nccl_published::kNvlsEfficiency[index(a)];
}

// Tree all-reduce's bandwidth correction by size, 64 B x 2^i (NCCL's treeCorrectionFactor),
// 1 from kTreeCorrectionTop on.
constexpr std::int64_t kTreeCorrectionTop = std::int64_t{64} << 23;
double tree_correction(Protocol p, std::int64_t bytes) {
  const std::int64_t units = bytes >> 6;
  if (units < 1) return 1;
  const int i = static_cast<int>(std::floor(std::log2(static_cast<double>(units))));
  return i >= 0 && i < 23 ? nccl_published::kTreeCorrection[static_cast<int>(p)][i] : 1;
}

// The communicator's channels: the graph's, doubled at run time (NCCL's comm->nChannels).
int comm_channels(const NcclTopo& t) {
  return std::clamp(2 * t.channels, 1, nccl_published::kMaxChannels);
}

// NCCL's log2i: the floor of log2, for the levels of its trees across hosts.
double log2i(int nodes) {
  return static_cast<double>(std::bit_width(static_cast<unsigned>(std::max(nodes, 1))) - 1);
}

int steps_of(CollectiveOp op, int n) {
  switch (op) {
    case CollectiveOp::AllReduce:
      return 2 * (n - 1);
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
      return n - 1;
    default:
      return n;
  }
}

// The most speed-times-channels the search finds on `total` GB/s, fastest first on ties.
std::pair<int, double> best_channels(Arch a, double total, int most) {
  int channels = 0;
  double speed = 0;
  for (double s : nccl_published::kIntraSpeeds[index(a)]) {
    const int c = std::min(most, static_cast<int>(std::floor(total / s)));
    if (c * s > channels * speed) channels = c, speed = s;
  }
  return {std::max(channels, 1), speed > 0 ? speed : total};
}

bool enabled(const NcclFilter& f, NcclAlgo a, Protocol p) {
  const auto in = [](const auto& list, auto x) {
    return list.empty() || std::find(list.begin(), list.end(), x) != list.end();
  };
  return in(f.algorithms, a) && in(f.protocols, p);
}

class Model {
 public:
  // `channels`: the graph channels whose bandwidth counts (NCCL's search: all of them).
  Model(const NcclTopo& t, CollectiveOp op, double channels)
      : t_(t), op_(op), arch_(t.arch), channels_(channels) {}
  Model(const NcclTopo& t, CollectiveOp op) : Model(t, op, t.channels) {}

  // NCCL's latency (µs) and algorithm bandwidth (GB/s) for one pair; bw 0: disabled.
  NcclOption option(NcclAlgo a, Protocol p) const {
    NcclOption o{a, p, 0, 0, 0};
    switch (a) {
      case NcclAlgo::Ring:
        o.algbw_GBps = ring_bw(p);
        o.latency_us = ring_lat(p);
        break;
      case NcclAlgo::Tree:
        if (op_ != CollectiveOp::AllReduce || t_.ranks < 2) return o;
        o.algbw_GBps = tree_bw(p);
        o.latency_us = nccl_base_latency_us(a, p) + 2 * ((t_.per_node - 1) * intra_lat(a, p) +
                                                         log2i(t_.nodes) * inter_lat(a, p));
        break;
      case NcclAlgo::Nvls:
      case NcclAlgo::NvlsTree:
        if (p != Protocol::Simple) return o;
        o.algbw_GBps = nvls_bw(a);
        o.latency_us = nccl_hop_latency_us(HopClass::NvLink, a, p) +
                       (a == NcclAlgo::NvlsTree ? 2 * log2i(t_.nodes) * inter_lat(a, p)
                        : t_.nodes > 1          ? inter_lat(a, p)
                                                : 0);
        break;
      case NcclAlgo::CollNetDirect:
      case NcclAlgo::CollNetChain:
        if (p != Protocol::Simple || op_ != CollectiveOp::AllReduce || !t_.collnet || t_.nodes < 2)
          return o;
        // CollNetDirect gathers at most NCCL_MAX_DIRECT_ARITY + 1 = 8 GPUs of a host, over
        // NVLink (NCCL: none without an NVSwitch).
        if (a == NcclAlgo::CollNetDirect && (t_.per_node > 8 || !t_.nvlink)) return o;
        o.algbw_GBps = collnet_bw(a);
        o.latency_us = collnet_lat(a, p);
        break;
      case NcclAlgo::Pat:
        if (p != Protocol::Simple || t_.per_node != 1 || t_.nodes < 2 ||
            (op_ != CollectiveOp::AllGather && op_ != CollectiveOp::ReduceScatter))
          return o;
        o.algbw_GBps =
            std::min(t_.bw_inter, t_.bw_intra > 0 ? t_.bw_intra : t_.bw_inter) * channels_ * 0.75;
        o.latency_us = 8 + log2i(t_.nodes) * inter_lat(a, p) / 3.5 + 2.8 * t_.ranks;
        break;
    }
    return o;
  }

  // The channels NCCL runs at this size: fewer while each thread would get too little.
  int run_channels(NcclAlgo a, Protocol p, std::int64_t bytes) const {
    // NCCL's NVLS_NCHANNELS: sm90 16; sm100 24 on one host, 32 across hosts (nvls.cc).
    if (a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree)
      return arch_ == Arch::Blackwell ? (t_.nodes > 1 ? 32 : 24) : 16;
    return static_cast<int>(std::floor(launched(a, p, bytes)));
  }

  // The same as a real number, which grows with size where the whole channels step: the
  // time NCCL's model gives them (the data of one channel at one channel's rate) then never
  // falls as the size grows past a step. At most twice the graph's channels (64 at most).
  double launched(NcclAlgo a, Protocol p, std::int64_t bytes) const {
    const int most = comm_channels(t_);
    const bool collnet = a == NcclAlgo::CollNetDirect || a == NcclAlgo::CollNetChain;
    // NCCL's maxThreads in its size loop: 640 for LL128 (NCCL_LL128_MAX_NTHREADS), 512 for LL
    // and Simple, the tree's too (its 640 is set after the loop).
    const int threads = (a == NcclAlgo::Pat || p == Protocol::LL128 || collnet) ? 640 : 512;
    double threshold = collnet ? 512 : p == Protocol::Simple ? 64 : 8;
    if (a == NcclAlgo::Ring && p == Protocol::LL) threshold *= t_.ranks;
    return std::clamp(static_cast<double>(bytes) / (threads * threshold), 1.0,
                      static_cast<double>(most));
  }

  // The data a tree channel moves per pipeline step (NCCL's chunk, enqueue.cc): a buffer
  // step's payload; LL128 halves it while the pipeline would have too few steps for the
  // tree's depth. 0 where NCCL's rule is not modelled.
  std::int64_t tree_chunk(Protocol p, std::int64_t bytes, int nc) const {
    if (p == Protocol::LL) return kLlStepBytes / 2;  // half of each LL line is flags
    if (p != Protocol::LL128) return 0;
    const double ppn = static_cast<double>(t_.ranks) / t_.nodes;
    const double steps = 1 + std::floor(std::log2(t_.nodes)) + 0.1 * ppn;
    std::int64_t chunk = kLl128StepBytes / 128 * 120;  // 8 bytes of flag per 128-byte line
    const auto few = [&](double per_depth) {
      return static_cast<double>(bytes / (nc * chunk)) < steps * per_depth / ppn;
    };
    while (few(64) && chunk > 128 * 1024) chunk /= 2;
    while (few(16) && chunk > 32 * 1024) chunk /= 2;
    return chunk;
  }

 private:
  // A buffer step (NCCL_STEPS = 8 per buffer): LL 512 KiB and LL128 4,915,200 B of lines.
  static constexpr std::int64_t kLlStepBytes = 512 * 1024 / 8;
  static constexpr std::int64_t kLl128StepBytes = 120 * 640 * 8 * 8 / 8;

  double intra_lat(NcclAlgo a, Protocol p) const {
    return nccl_hop_latency_us(t_.nvlink ? HopClass::NvLink : HopClass::Pci, a, p);
  }
  // With one GPU a host (NCCL's ppn = nRanks / nNodes of 1: not 3 ranks on 2 hosts), NCCL
  // charges every algorithm the tree's network latency (2.23 on).
  double inter_lat(NcclAlgo a, Protocol p) const {
    const bool one_a_host = t_.ranks == t_.nodes;
    return nccl_hop_latency_us(HopClass::Net, one_a_host ? NcclAlgo::Tree : a, p);
  }
  double graph_bw() const { return t_.nodes > 1 ? t_.bw_inter : t_.bw_intra; }

  double ring_bw(Protocol p) const {
    if (op_ == CollectiveOp::AllToAll || op_ == CollectiveOp::Barrier) return 0;
    double bus = channels_ * graph_bw();
    if (p == Protocol::LL) bus = std::min(ll_max_bw(arch_, t_.nodes, t_.host_cpu), bus * 0.5);
    if (p == Protocol::LL128) bus = std::min(bus * 0.92, channels_ * per_ch_ring_ll128(arch_));
    const int n = std::max(t_.ranks, 2);
    return bus * n / steps_of(op_, n);
  }

  double ring_lat(Protocol p) const {
    const NcclAlgo a = NcclAlgo::Ring;
    const double base = nccl_base_latency_us(a, p);
    const int n = t_.ranks;
    if (op_ == CollectiveOp::Broadcast || op_ == CollectiveOp::Reduce)
      return base + (t_.nodes > 1 ? inter_lat(a, p) : intra_lat(a, p));
    const int steps = steps_of(op_, n);
    const int inter_steps =
        t_.nodes > 1 ? (op_ == CollectiveOp::AllReduce ? 2 : 1) * (t_.nodes - 1) : 0;
    double intra = intra_lat(a, p);
    if (t_.nodes > 1) intra = std::max(intra, p == Protocol::Simple ? 3.0 : 1.0);  // net overhead
    return base + (steps - inter_steps) * intra + inter_steps * inter_lat(a, p);
  }

  double tree_bw(Protocol p) const {
    const double per = t_.nodes > 1 ? std::min(t_.bw_inter, t_.bw_intra) : t_.bw_intra;
    double bus = channels_ * per;
    bus = std::min(bus * 0.92, channels_ * per_ch_tree(arch_, t_.nodes));
    if (p == Protocol::LL) bus = std::min(bus / 3.8, ll_max_bw(arch_, t_.nodes, t_.host_cpu));
    if (p == Protocol::LL128)
      bus = std::min(bus * (t_.nodes == 1 ? 7.0 / 9 : 120.0 / 128),
                     channels_ * per_ch_tree_ll128(arch_, t_.nodes));
    if (arch_ != Arch::Ampere) bus *= 0.85;  // sm90+: the TREE pattern, NIC traffic on one GPU
    return bus * 0.5;
  }

  double nvls_bw(NcclAlgo a) const {
    // NVLink SHARP needs sm90+, a switch that reduces, and more than 2 GPUs a host (NCCL's
    // ncclNvlsInit: none with 2 or fewer).
    if (!t_.nvls || t_.nvls_channels < 2 || arch_ == Arch::Ampere || t_.per_node <= 2) return 0;
    const bool tree = a == NcclAlgo::NvlsTree;
    const bool across = t_.nodes > 1;
    // NVLSTree across nodes only; NVLS across nodes where CollNet joins them (all-reduce).
    if (tree && !across) return 0;
    if (!tree && across && (!t_.collnet || op_ != CollectiveOp::AllReduce)) return 0;
    if (op_ != CollectiveOp::AllReduce &&
        !((op_ == CollectiveOp::AllGather || op_ == CollectiveOp::ReduceScatter) && !tree))
      return 0;
    const int nc = t_.nvls_channels;
    double intra = t_.nvls_bw * nvls_efficiency(arch_) * (nc - 1) / nc;
    intra *= op_ == CollectiveOp::AllReduce ? 2.0 : (t_.per_node - 1.0) / t_.per_node;
    double bw = intra;
    if (tree) {
      bw = std::min(bw, t_.nodes <= 2 ? 2 * t_.bw_inter : t_.bw_inter);
      bw = std::min(bw, per_ch_nvls_tree(arch_, t_.nodes));
    } else if (across) {
      bw = std::min(bw, t_.bw_inter);
    }
    const int n = std::max(t_.ranks, 2);
    return bw * nc * n / steps_of(op_, n);
  }

  // CollNet's graph: channels x bwIntra (NCCL reads its CollNet graphs by their intra
  // bandwidth at any node count; collsim takes the tree graph's channels); CollNetDirect is
  // slowed where a host has more GPUs than the graph has channels (NICs), and on sm90+ by
  // 0.85 (NCCL's tuning, 2.19 on); bus to algorithm bandwidth 1/2.
  double collnet_bw(NcclAlgo a) const {
    double bus = channels_ * t_.bw_intra;
    if (a == NcclAlgo::CollNetDirect) {
      double factor = static_cast<double>(t_.per_node) / std::max(1, t_.channels);
      factor -= (factor - 1) / 2;
      bus /= factor;
      if (arch_ != Arch::Ampere) bus *= 0.85;
    }
    return bus * 0.5;
  }

  // Up to the heads and back (Direct: one NVLink hop and a step per GPU gathered; Chain:
  // along the chain) and once through the network's switches.
  double collnet_lat(NcclAlgo a, Protocol p) const {
    const int ppn = t_.per_node;
    const double intra = intra_lat(a, p);
    const double up_down = a == NcclAlgo::CollNetDirect
                               ? std::min(1, ppn - 1) * intra +
                                     (ppn - 1) * nccl_published::kCollNetDirectArityLatencyUs
                               : (ppn - 1) * intra;
    return nccl_base_latency_us(a, p) + 2 * up_down + inter_lat(a, p);
  }

  const NcclTopo& t_;
  CollectiveOp op_;
  Arch arch_;
  double channels_;
};

// NCCL's ncclTopoPathAllNVLink: whether the GPU reaches every other GPU of its host over
// NVLink alone (through NVSwitches or other GPUs' NVLinks), not over PCIe. A PCIe server with
// NVLink bridges between pairs is not all-NVLink: NCCL's intra paths there are PCIe (its
// PCIe latencies, 128 KiB point-to-point chunks, no LL128).
bool reaches_host_over_nvlink(const Topology& t, NodeId gpu) {
  std::vector<char> reached(t.nodes().size(), 0);
  reached[static_cast<std::size_t>(gpu)] = 1;
  for (bool grew = true; grew;) {  // a few passes: NVLink paths are a hop or two
    grew = false;
    for (const Link& l : t.links())
      if (hop_class(l.kind) == HopClass::NvLink && reached[static_cast<std::size_t>(l.src)] &&
          !reached[static_cast<std::size_t>(l.dst)]) {
        reached[static_cast<std::size_t>(l.dst)] = 1;
        grew = true;
      }
  }
  const int host = t.node(gpu).host;
  for (std::size_t n = 0; n < t.nodes().size(); ++n)
    if (t.nodes()[n].kind == NodeKind::Gpu && t.nodes()[n].host == host && !reached[n])
      return false;
  return true;
}

}  // namespace

NcclTopo nccl_topo(const Topology& t, const std::vector<int>& ranks) {
  NcclTopo out;
  out.ranks = static_cast<int>(ranks.size());
  std::set<int> hosts;
  for (int r : ranks) hosts.insert(t.node(t.gpu_of_rank(r)).host);
  out.nodes = std::max<int>(1, static_cast<int>(hosts.size()));
  out.per_node = std::max(1, out.ranks / out.nodes);
  const NodeId gpu = t.gpu_of_rank(ranks.front());
  const double nvlink = gpu_nvlink_bandwidth(t, gpu);
  out.nvlink = nvlink > 0 && reaches_host_over_nvlink(t, gpu);
  double pcie = 0;
  for (const Link& l : t.links())
    if (l.src == gpu && l.kind == LinkKind::Pcie) pcie = std::max(pcie, l.bandwidth);
  // A GPU wired straight to others (a torus, a generic fabric) reaches them over
  // whatever links it has.
  double any = 0;
  for (const Link& l : t.links())
    if (l.src == gpu) any += l.bandwidth;
  out.arch = gpu_arch(t, gpu);
  // The hosts' CPUs: as the topology says, else as its GPU model's DGX has them, else as an
  // Ampere's DGX (AMD) or a later one's (Intel).
  out.host_cpu = t.host_cpu ? *t.host_cpu
                 : t.gpu    ? t.gpu->host_cpu
                            : (out.arch == Arch::Ampere ? HostCpu::Amd : HostCpu::Intel);
  out.intra_GBps = out.nvlink ? nvlink * nvlink_usable_fraction(out.arch) / 1e9
                   : pcie > 0 ? pcie / 1e9
                              : any / 1e9;
  // What one NIC of the first GPU's host sends into the network.
  const int host = t.node(gpu).host;
  for (const Link& l : t.links()) {
    const Node& src = t.node(l.src);
    if (src.kind == NodeKind::Nic && src.host == host && l.kind != LinkKind::Pcie)
      out.nic_GBps = std::max(out.nic_GBps, l.bandwidth / 1e9);
  }
  if (out.nic_GBps == 0)  // no NIC nodes: the GPU's own links into the network
    for (const Link& l : t.links())
      if (l.src == gpu && hop_class(l.kind) == HopClass::Net)
        out.nic_GBps = std::max(out.nic_GBps, l.bandwidth / 1e9);
  if (out.nic_GBps == 0) out.nic_GBps = out.intra_GBps;
  out.nics_per_node = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
    if (t.node(n).kind == NodeKind::Nic && t.node(n).host == host) ++out.nics_per_node;

  if (out.nodes == 1) {
    auto [c, s] = best_channels(out.arch, out.intra_GBps, 16);
    out.channels = c;
    out.bw_intra = s;
  } else {
    double inter = 0;
    for (double s : nccl_published::kInterSpeeds[index(out.arch)])
      if (s <= out.nic_GBps) {
        inter = s;
        break;
      }
    out.channels = std::max(1, std::min(out.nics_per_node, out.per_node));
    out.bw_inter = inter > 0 ? inter : out.nic_GBps;
    out.bw_intra = out.per_node > 1 ? out.intra_GBps / out.channels : out.bw_inter;
    out.bw_inter = std::min(out.bw_inter, out.bw_intra);
  }
  // Channel duplication: fast channels are split in two (past sm80: not when slower than
  // 50 GB/s with more than 4 channels).
  const double bw = out.nodes > 1 ? out.bw_inter : out.bw_intra;
  const bool past_sm80 = out.arch != Arch::Ampere;
  if (bw >= 25 && !(past_sm80 && bw < 50 && out.channels > 4)) {
    out.channels = std::min(32, out.channels * 2);
    out.bw_intra /= 2;
    out.bw_inter /= 2;
  }
  // The NVLS graph: one head per GPU, each charging (per_node + 1) x its speed.
  for (double s : nccl_published::kIntraSpeeds[index(out.arch)])
    if ((out.per_node + 1) * s <= out.intra_GBps) {
      out.nvls_bw = s;
      break;
    }
  out.nvls_channels = out.per_node;
  return out;
}

// NCCL_NVLS_CHUNKSIZE (128 KiB), at most NCCL_NVLSTREE_MAX_CHUNKSIZE (by default 64 KiB from
// 4 nodes on, else no limit), then 64 KiB where a channel's head would have fewer than 4
// chunks to move and 32 KiB where it would have less than one. NCCL asks per channel (its
// bytes, one channel); over all the channels' bytes at once the thresholds are the same
// where the channels hold equal shares, as here.
std::int64_t nvls_tree_chunk(std::int64_t bytes, int channels, const NcclTopo& topo) {
  constexpr std::int64_t kMaxFromFourNodes = 64 << 10;
  constexpr std::int64_t kFewChunks = 64 << 10, kUnderOneChunk = 32 << 10;
  std::int64_t chunk = topo.nodes >= 4 ? kMaxFromFourNodes : kNcclChunkBytes;
  const std::int64_t at_once = std::int64_t{std::max(1, channels)} * std::max(1, topo.per_node);
  if (bytes < 4 * at_once * chunk && chunk > kFewChunks) chunk = kFewChunks;
  if (bytes < at_once * chunk && chunk > kUnderOneChunk) chunk = kUnderOneChunk;
  return chunk;
}

std::int64_t nvls_net_chunk(double algbw_GBps) {
  constexpr double kSlowNvlsGBps = 150;
  constexpr std::int64_t kSlowChunk = 32 << 10;
  return algbw_GBps < kSlowNvlsGBps ? kSlowChunk : kNcclChunkBytes;
}

std::int64_t collnet_chain_chunk(std::int64_t bytes, int channels, const NcclTopo& topo) {
  std::int64_t chunk = 256 << 10;
  const std::int64_t depth = std::max(1, topo.per_node);
  const auto chunks = [&] { return bytes / (std::int64_t{std::max(1, channels)} * chunk); };
  while (chunks() < depth * 64 && chunk > (128 << 10)) chunk /= 2;
  while (chunks() < depth * 8 && chunk > (64 << 10)) chunk /= 2;
  while (chunks() < depth && chunk > (32 << 10)) chunk /= 2;
  return chunk;
}

ChannelStripe nccl_p2p_stripe(const NcclTopo& topo) {
  const std::size_t arch = index(topo.arch);
  const int ranks = std::max(1, topo.ranks);
  // The communicator's channels, every one open to sends. Every pair of ranks is asked how
  // many channels it needs; the fewest answer counts.
  const int open_channels = comm_channels(topo);
  int fewest = open_channels;
  if (topo.per_node > 1) {  // two per NVLink of the path, two over PCIe
    const double link = nccl_published::kNvlinkLinkGBps[arch];
    fewest = std::min(fewest,
                      topo.nvlink ? 2 * std::max(1, static_cast<int>(topo.intra_GBps / link)) : 2);
  }
  if (topo.nodes > 1) {  // two per network peer, fewer where every rank's sends would crowd them
    int net = nccl_published::kP2pChannelsPerNetPeer;
    while (net * ranks > open_channels * 4 && net > 1) net /= 2;
    fewest = std::min(fewest, net);
  }
  const int channels = static_cast<int>(std::bit_ceil(static_cast<unsigned>(open_channels)));
  ChannelStripe s;
  s.max_channels =
      std::min(static_cast<int>(std::bit_ceil(static_cast<unsigned>(fewest))), channels);
  // One channel per send where every rank's sends would not fit on the channels at once.
  s.min_channels = s.max_channels;
  while (s.min_channels * ranks > channels && s.min_channels > 1) s.min_channels /= 2;
  const std::int64_t step = topo.nodes > 1 ? nccl_published::kP2pNetChunkBytes
                            : topo.nvlink  ? nccl_published::kP2pNvlChunkBytes
                                           : nccl_published::kP2pPciChunkBytes;
  s.min_part = topo.nodes > 1 ? step / 2 : step / 8;
  s.max_part = topo.nodes > 1 ? step : step * 32;
  // A channel inside a host moves one NVLink's worth (a thread block's copy), across the
  // network what NCCL itself counts on one; its chunk is the communicator's (`step`, every
  // send's), smaller over the network for small parts.
  s.chunk_bytes = step;
  for (std::size_t k = 0; k < kLinkKindCount; ++k) {
    const bool net = hop_class(static_cast<LinkKind>(k)) == HopClass::Net;
    s.channel_Bps[k] =
        (net ? nccl_published::kP2pNetChannelGBps : nccl_published::kNvlinkLinkGBps[arch]) * 1e9;
    s.smaller_chunks[k] = net;
  }
  return s;
}

bool nccl_has_algorithms(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce:
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce:
      return true;
    default:
      return false;
  }
}

bool nccl_nvls_supports(CollectiveOp op, ReduceOp reduce, DType type) {
  if (!is_reducing(op)) return true;
  const bool sum = reduce == ReduceOp::Sum;
  const bool min_max = reduce == ReduceOp::Max || reduce == ReduceOp::Min;
  switch (type) {
    case DType::I32:
    case DType::I64:
    case DType::F16:
    case DType::BF16:
      return sum || min_max;
    case DType::F32:
    case DType::F64:
      return sum;
    default:
      return false;
  }
}

namespace {

// NCCL's estimate of one pair at `bytes`, with its tree correction by size and its ring
// plateau; algbw 0 where the pair is disabled.
NcclOption estimate(const Model& model, const NcclTopo& topo, CollectiveOp op, NcclAlgo a,
                    Protocol p, std::int64_t bytes) {
  NcclOption o = model.option(a, p);
  if (o.algbw_GBps <= 0) return o;
  // On Blackwell (x86 hosts) NCCL corrects NVLSTree's all-reduce by the tree's table too.
  if (a == NcclAlgo::Tree ||
      (a == NcclAlgo::NvlsTree && op == CollectiveOp::AllReduce && topo.arch == Arch::Blackwell))
    o.algbw_GBps *= tree_correction(p, bytes);
  if (a == NcclAlgo::Ring && p == Protocol::Simple && op == CollectiveOp::AllReduce &&
      topo.nodes > 1 && bytes / (comm_channels(topo) * topo.ranks) >= 64)
    o.latency_us *= 1.4;  // NCCL's ring "plateau" correction, by its run-time channels
  o.time_us = o.latency_us + static_cast<double>(bytes) / (1e3 * o.algbw_GBps);
  return o;
}

}  // namespace

namespace {

// NCCL's pick at `bytes` and its model of it on the channels it launches.
NcclPick pick_at(const Model& model, const NcclTopo& topo, CollectiveOp op, std::int64_t bytes,
                 const NcclFilter& filter) {
  NcclPick pick;
  const NcclOption* best = nullptr;
  for (NcclAlgo a : kNcclAlgos)
    for (Protocol p : kProtocols) {
      if (!enabled(filter, a, p)) continue;
      // LL128 only where a node's GPUs talk over NVLink, unless the filter names it (a
      // protocol list covering this collective): NCCL gates LL128 only while NCCL_PROTO
      // leaves it at its default, and runs it wherever a list enables it.
      if (p == Protocol::LL128 && !topo.nvlink && topo.per_node > 1 && filter.protocols.empty())
        continue;
      const NcclOption o = estimate(model, topo, op, a, p, bytes);
      if (o.algbw_GBps > 0) pick.options.push_back(o);
    }
  for (const NcclOption& o : pick.options)
    if (!best || o.time_us < best->time_us) best = &o;
  if (!best)
    throw std::invalid_argument(fmt::format(
        "NCCL has no algorithm and protocol for {} here that the filter allows", name_of(op)));
  pick.chosen = *best;
  const NcclAlgo a = pick.chosen.algorithm;
  const Protocol p = pick.chosen.protocol;
  pick.channels = model.run_channels(a, p, bytes);
  // NCCL chose by every channel of its graph (each run channel is half of one), but
  // launches fewer below a size: its model, per channel, of what it launches (NVLS's
  // bandwidth is its own graph's, whatever this count).
  pick.run_time_us =
      estimate(Model(topo, op, model.launched(a, p, bytes) / 2), topo, op, a, p, bytes).time_us;
  if (a == NcclAlgo::Tree) pick.chunk_bytes = model.tree_chunk(p, bytes, pick.channels);
  return pick;
}

}  // namespace

NcclPick nccl_pick(const NcclTopo& topo, CollectiveOp op, std::int64_t bytes,
                   const NcclFilter& filter) {
  const Model model(topo, op);
  NcclPick pick = pick_at(model, topo, op, bytes, filter);
  // Each candidate's time grows with size but where the tree's correction steps up, at
  // the powers of two of its table (to 512 MiB): the least over larger sizes is at one of
  // those, or at this size.
  pick.least_us = pick.run_time_us;
  if (bytes < 0 || bytes >= kTreeCorrectionTop) return pick;
  for (auto larger =
           static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(bytes) + 1));
       larger <= kTreeCorrectionTop; larger *= 2) {
    const double t = pick_at(model, topo, op, larger, filter).run_time_us;
    if (t < pick.least_us) pick.least_us = t, pick.least_at = larger;
  }
  return pick;
}

std::string describe(const NcclPick& pick) {
  return fmt::format("{}/{}/{}ch", name_of(pick.chosen.algorithm), name_of(pick.chosen.protocol),
                     pick.channels);
}

}  // namespace collsim
