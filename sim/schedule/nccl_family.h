#pragma once
// NCCL's algorithm families. A catalogue entry declares the one its schedule has the
// shape of (AlgorithmEntry::nccl_family): NCCL's latency and protocol tables
// (nccl/protocol.h) are kept per family, so a tree pays tree latencies because its
// entry says it is a tree, not because its name contains "tree".
#include <cstdint>

namespace collsim {

enum class NcclAlgo : std::uint8_t { Tree, Ring, Nvls, NvlsTree, Pat, CollNetDirect, CollNetChain };
inline constexpr NcclAlgo kNcclAlgos[] = {
    NcclAlgo::Tree, NcclAlgo::Ring,          NcclAlgo::Nvls,        NcclAlgo::NvlsTree,
    NcclAlgo::Pat,  NcclAlgo::CollNetDirect, NcclAlgo::CollNetChain};

}  // namespace collsim
