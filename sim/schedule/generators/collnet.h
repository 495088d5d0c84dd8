#pragma once
// NCCL's CollNet all-reduce: the reduction across hosts done in the network by InfiniBand
// SHARP switches. Each host's GPUs gather their data at heads (GPUs with a NIC); the heads
// of one rail, one per host, all-reduce it in the switch (a SwitchAllReduce over a switch
// group of one rank per host, Schedule::network_stride ranks apart); the heads hand the
// result back to their host's GPUs.
//   collnet_direct: every GPU a head of its slice of the buffer; the other GPUs of its
//                   host send it their part of the slice directly (NCCL's CollNetDirect).
//   collnet_chain:  a chain through each host's GPUs to one head per channel, channel c's
//                   at rail c, reduced up the chain and broadcast back down it
//                   (NCCL's CollNetChain).
#include <vector>

#include "schedule/algorithms.h"

namespace collsim {

void register_collnet(std::vector<AlgorithmEntry>& catalogue);

}  // namespace collsim
