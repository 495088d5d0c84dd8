#pragma once
// NCCL's published tables, in one file, as NCCL's source writes them (docs/nccl.md says
// where each comes from): the tuning model's latencies and per-generation bandwidth caps
// (src/graph/tuning.cc), the NVLS efficiency, the per-link NVLink rates the topology
// search assumes (src/graph/topo.h), the speeds the channel search tries
// (src/graph/search.cc), the tree correction by size, and the share of a protocol's bytes
// that is data. Plain data read by the tuner and the protocol costs (nccl/), the presets
// (topology/) and the fit (validate/fit/): change a number here and all of them follow.
// The formulas that combine them, with the coefficients NCCL writes inline in them, are
// the tuning model's code (nccl/nccl_model.cpp).
#include <cstddef>
#include <cstdint>
#include <span>

namespace collsim::nccl_published {

// The GPU generations NCCL's tables distinguish; Volta and older count as Ampere.
enum class Arch { Ampere, Hopper, Blackwell };

// A GPU's generation from its NVLink bandwidth (one direction, bytes/s): 18 links of
// 50 GB/s on Blackwell, 18 of 25 GB/s on Hopper (NCCL reads the compute capability).
inline constexpr double kBlackwellNvlinkBps = 900e9;
inline constexpr double kHopperNvlinkBps = 450e9;
constexpr Arch arch_of_nvlink(double gpu_nvlink_Bps) {
  if (gpu_nvlink_Bps >= kBlackwellNvlinkBps) return Arch::Blackwell;
  if (gpu_nvlink_Bps >= kHopperNvlinkBps) return Arch::Hopper;
  return Arch::Ampere;
}
constexpr std::size_t index(Arch a) {
  return static_cast<std::size_t>(a);
}

// NCCL's rate of one NVLink (topo.h, ncclTopoNVLinkBw: SM80 20.0, SM90 20.6, SM100 40.1
// GB/s), [arch], and its share of the link's nominal rate (25 GB/s a link before
// Blackwell, 50 on it): the rate NCCL's search counts per link.
inline constexpr double kNvlinkLinkGBps[3] = {20.0, 20.6, 40.1};
inline constexpr double kNvlinkUsable[3] = {kNvlinkLinkGBps[0] / 25, kNvlinkLinkGBps[1] / 25,
                                            kNvlinkLinkGBps[2] / 50};

// Point-to-point sends (init.cc computeBuffSizes, paths.cc ncclTopoComputeP2pChannels,
// enqueue.cc addP2pToPlan): the bytes one step moves across hosts (NCCL_P2P_NET_CHUNKSIZE),
// inside an all-NVLink host (NCCL_P2P_NVL_CHUNKSIZE) and over PCIe (NCCL_P2P_PCI_CHUNKSIZE);
// the channels a network peer gets (NCCL_NCHANNELS_PER_NET_PEER unset, up to 2.28) before
// it scales down; a channel count's ceiling (MAXCHANNELS).
inline constexpr std::int64_t kP2pNetChunkBytes = 128 << 10;
inline constexpr std::int64_t kP2pNvlChunkBytes = 512 << 10;
inline constexpr std::int64_t kP2pPciChunkBytes = 128 << 10;
inline constexpr int kP2pChannelsPerNetPeer = 2;
// What NCCL counts on one channel of a point-to-point send moving over the network, GB/s
// (NCCL_P2P_PER_CHANNEL_NET_BW, paths.cc, 2.29 on: it sizes a network peer's channels by it).
inline constexpr double kP2pNetChannelGBps = 14;
inline constexpr int kMaxChannels = 64;

// nvlsEfficiency: the share of the link rate NVLink SHARP's reductions and multicasts
// reach, [arch] (no NVLS before Hopper).
inline constexpr double kNvlsEfficiency[3] = {0.85, 0.85, 0.74};

// Latencies in µs. baseLat [algorithm][protocol] and hwLat [hop][algorithm][protocol],
// in collsim's orders: algorithms {Tree, Ring, Nvls, NvlsTree, Pat, CollNetDirect,
// CollNetChain}, protocols {LL, LL128, Simple}, hops {NVLink, PCI, NET}. NVLS, PAT and
// CollNet are Simple-only: their LL and LL128 entries are never read.
inline constexpr double kBaseLatencyUs[7][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0},
                                                {0, 0, 0},        {8.0, 8.0, 8.0},  {0, 0, 0},
                                                {0, 0, 0}};
inline constexpr double kHopLatencyUs[3][7][3] = {
    // NVLink
    {{0.6, 1.25, 4.0},
     {0.6, 1.9, 3.4},
     {0, 0, 25},
     {0, 0, 25},
     {0, 0, 4.0},
     {0, 0, 3.7},
     {0, 0, 2.8}},
    // PCI
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}, {0, 0, 3.7}, {0, 0, 2.8}},
    // NET
    {{5.0, 8.5, 14}, {2.7, 4.0, 14}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}, {0, 0, 31}, {0, 0, 30}},
};
// CollNetDirect's latency per GPU a head gathers from (NCCL: 0.4 µs per arity step).
inline constexpr double kCollNetDirectArityLatencyUs = 0.4;

// The share of what a protocol moves that is data, [protocol]: LL sends 8 bytes of flag
// with every 8 of data, LL128 8 of every 128.
inline constexpr double kProtocolDataShare[3] = {0.5, 120.0 / 128.0, 1.0};

// Bandwidth caps in GB/s, [arch][nodes: 1, 2, more]: llMaxBws, perChMaxTreeBws,
// perChMaxTreeLL128Bws, perChMaxNVLSTreeBws; perChMaxRingLL128Bws is [arch] alone.
inline constexpr double kLlMaxBw[3][3] = {{87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282, 90, 70}};
// Across hosts NCCL reads llMaxBws by the hosts' CPU vendor instead ("for multi-node, we
// look at CPU type"): its Volta row for Intel hosts, its Ampere row for AMD ones, [nodes: 2,
// more].
inline constexpr double kLlMaxBwIntelHosts[2] = {39.0, 20.4};
inline constexpr double kLlMaxBwAmdHosts[2] = {22.5, 19.0};
inline constexpr double kPerChannelRingLl128[3] = {20, 36.7, 40};
inline constexpr double kPerChannelTree[3][3] = {
    {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
inline constexpr double kPerChannelTreeLl128[3][3] = {
    {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
inline constexpr double kPerChannelNvlsTree[3][3] = {
    {24.0, 23.6, 17.8}, {0, 57.7, 45.5}, {0, 96.0, 80.0}};

// The per-channel speeds the channel search tries, fastest first, GB/s (search.cc:
// speedArrayIntra/Inter before sm90, sm90SpeedArray*, sm100SpeedArray*): intra-node
// lists where the GPUs reach no NIC, inter-node lists where they do.
inline constexpr double kIntraSpeedsAmpere[] = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
inline constexpr double kIntraSpeedsHopper[] = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
inline constexpr double kIntraSpeedsBlackwell[] = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18};
inline constexpr double kInterSpeedsAmpere[] = {48, 30, 28, 24, 20, 18,  15,  12,   10,  9,
                                                7,  6,  5,  4,  3,  2.4, 1.2, 0.24, 0.12};
inline constexpr double kInterSpeedsHopper[] = {48, 45, 42, 40, 30,  24,  22,   20,  17.5,
                                                15, 12, 6,  3,  2.4, 1.2, 0.24, 0.12};
inline constexpr double kInterSpeedsBlackwell[] = {96,   48, 45.1, 42, 40, 30,  24,  22,   20,
                                                   17.5, 15, 12,   6,  3,  2.4, 1.2, 0.24, 0.12};
// The lists by generation, [arch].
inline constexpr std::span<const double> kIntraSpeeds[3] = {kIntraSpeedsAmpere, kIntraSpeedsHopper,
                                                            kIntraSpeedsBlackwell};
inline constexpr std::span<const double> kInterSpeeds[3] = {kInterSpeedsAmpere, kInterSpeedsHopper,
                                                            kInterSpeedsBlackwell};

// treeCorrectionFactor: tree all-reduce's bandwidth by size, [protocol][64 B x 2^i].
inline constexpr double kTreeCorrection[3][23] = {
    {1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1, 1, 1, 1},
    {1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1, 1},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

}  // namespace collsim::nccl_published
