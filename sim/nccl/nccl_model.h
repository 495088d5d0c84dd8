#pragma once
// NCCL's own choice of algorithm, protocol and channels: its published cost model
// (lat + bytes / algBw for each enabled algorithm x protocol, the minimum wins) over
// the channel graph its topology search would find (docs/nccl.md §1-§3). collsim
// then simulates that choice; `sweep` shows where it is not the fastest.
#include <string>
#include <vector>

#include "core/nccl_published.h"
#include "nccl/protocol.h"
#include "network/cost_model.h"
#include "schedule/collective.h"
#include "topology/topology.h"

namespace collsim {

// What NCCL's search would see of the GPUs taking part.
struct NcclTopo {
  int ranks = 0;
  int nodes = 1;     // hosts
  int per_node = 0;  // GPUs per host (ranks / nodes)
  // The GPUs' generation, from their NVLink bandwidth (Ampere without NVLink).
  nccl_published::Arch arch = nccl_published::Arch::Ampere;
  HostCpu host_cpu = HostCpu::Intel;  // the hosts' CPUs (Topology::host_cpu): LL's cap across hosts
  double intra_GBps = 0;  // a GPU's usable NVLink bandwidth (or PCIe without NVLink)
  bool nvlink = false;    // intra paths are NVLink: LL128 is on
  double nic_GBps = 0;    // one NIC's bandwidth, when nodes > 1
  int nics_per_node = 0;
  bool nvls = false;  // the GPUs share a switch that reduces (NVLink SHARP)
  // Each rail's GPUs (one per host) reach a network switch that reduces (InfiniBand SHARP,
  // with NCCL_COLLNET_ENABLE and its plugin): NCCL's CollNet algorithms.
  bool collnet = false;
  // The ring/tree graph: channels x per-channel bandwidth, before the run-time doubling.
  int channels = 1;
  double bw_intra = 0, bw_inter = 0;
  int nvls_channels = 0;  // the NVLS graph
  double nvls_bw = 0;
};

NcclTopo nccl_topo(const Topology& t, const std::vector<int>& ranks);

// Which algorithms and protocols may be picked (NCCL_ALGO / NCCL_PROTO); empty: all.
struct NcclFilter {
  std::vector<NcclAlgo> algorithms;
  std::vector<Protocol> protocols;

  bool operator==(const NcclFilter&) const = default;
};

struct NcclOption {
  NcclAlgo algorithm;
  Protocol protocol;
  double latency_us = 0;
  double algbw_GBps = 0;
  double time_us = 0;  // NCCL's model estimate
};

struct NcclPick {
  NcclOption chosen;
  int channels = 1;                 // the channels NCCL would run on at this size
  // NCCL's model of its pick on the channels it launches (chosen.time_us counts every
  // channel of its graph, as NCCL does when it picks): each at the rate its model gives
  // one, their count taken as a real number (48 KiB of ring/LL is one and a half channels'
  // worth, where `channels` says 1) so that the time never falls as a channel is added.
  double run_time_us = 0;
  // The least of run_time_us here and at the larger powers of two, where NCCL's tree
  // correction steps up (to the end of its table, 512 MiB): more bytes never take less
  // time, so no size is held above what such a larger one may take. `least_at` is that
  // larger size, 0 where this size's own is the least.
  double least_us = 0;
  std::int64_t least_at = 0;
  std::int64_t chunk_bytes = 0;     // a tree channel's data per pipeline step (0: not set)
  std::vector<NcclOption> options;  // every enabled pair, in NCCL's order
};

// Whether NCCL has collective algorithms for `op` (else it runs point-to-point sends).
bool nccl_has_algorithms(CollectiveOp op);

// Whether NCCL's NVLS kernels (NVLS, NVLSTree) reduce `reduce` over elements of `type`: the
// switch adds integers and 16-bit floats and takes their min and max, adds 32- and 64-bit
// floats only, and has no 8-bit types (ncclNvlsSupported). Collectives that do not reduce
// pass.
bool nccl_nvls_supports(CollectiveOp op, ReduceOp reduce, DType type);

// Throws std::invalid_argument when nothing is enabled for this collective.
NcclPick nccl_pick(const NcclTopo& topo, CollectiveOp op, std::int64_t bytes,
                   const NcclFilter& filter = {});

// "ring/LL128/24ch"
std::string describe(const NcclPick& pick);

// How NCCL stripes one point-to-point send to one peer over its channels (one thread
// block each), as CostModel::stripe holds it: the channels by size (ncclTopoComputeP2pChannels,
// addP2pToPlan, up to NCCL 2.28), each at one NVLink's rate inside a host (kNvlinkLinkGBps:
// what one block moves; 80 GB/s on 4 channels in a published 8 x H100 sendrecv table, 163 on
// 8) and at NCCL's own 14 GB/s over the network (kP2pNetChannelGBps).
ChannelStripe nccl_p2p_stripe(const NcclTopo& topo);

// NCCL's usual pipelining chunk (NCCL_NVLS_CHUNKSIZE, a Simple slice): what one channel
// moves at a time.
inline constexpr std::int64_t kNcclChunkBytes = 128 << 10;

// NCCL's NVLSTree chunk (calcCollChunking in NCCL 2.2x's enqueue.cc): the bytes one channel
// moves for one head per loop, for `bytes` in all over `channels` channels.
std::int64_t nvls_tree_chunk(std::int64_t bytes, int channels, const NcclTopo& topo);

// NCCL's NVLS chunk across nodes (CollNet joining them): its usual chunk, at most 32 KiB
// where NCCL's model gives NVLS all-reduce less than 150 GB/s (`algbw_GBps`).
std::int64_t nvls_net_chunk(double algbw_GBps);

// NCCL's CollNetChain chunk: 256 KiB, halved while a channel would move fewer chunks than
// 64, 8 and 1 times the chain's depth (a host's GPUs), down to 128, 64 and 32 KiB.
std::int64_t collnet_chain_chunk(std::int64_t bytes, int channels, const NcclTopo& topo);

}  // namespace collsim
