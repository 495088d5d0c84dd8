#pragma once
// NCCL's protocols (LL, LL128, Simple) as costs: each adds NCCL's published base
// latency once per collective and its per-hop latency per transfer, and moves data
// at its payload efficiency; NVLink carries data at NCCL's usable per-link rate.
// The constants are NVIDIA's tuning figures (docs/nccl.md §1, §7), restated.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "network/cost_model.h"
#include "schedule/collective.h"
#include "schedule/nccl_family.h"
#include "topology/topology.h"

namespace collsim {

enum class Protocol : std::uint8_t { LL, LL128, Simple };
inline constexpr Protocol kProtocols[] = {Protocol::LL, Protocol::LL128, Protocol::Simple};


std::string_view name_of(Protocol p);
std::optional<Protocol> protocol_from_name(std::string_view name);
std::string_view name_of(NcclAlgo a);

// The family a catalogue algorithm declares (AlgorithmEntry::nccl_family): trees pay
// tree latencies, the switch-reducing ones NVLS's, everything else (rings,
// halving-doubling, direct, hierarchical) a ring's. Ring for a name not in the catalogue.
NcclAlgo nccl_family(CollectiveOp op, std::string_view algorithm);

// NCCL's latency constants, in µs: once per collective, and per hop by link class.
double nccl_base_latency_us(NcclAlgo a, Protocol p);
enum class HopClass : std::uint8_t { NvLink, Pci, Net };
double nccl_hop_latency_us(HopClass hw, NcclAlgo a, Protocol p);
HopClass hop_class(LinkKind k);

// The share of a link's bandwidth that carries payload under the protocol: LL sends
// 4 bytes of flag per 4 of data, LL128 8 of 128.
double protocol_efficiency(Protocol p);

// The generation NCCL reads `gpu`'s tables for: the topology's named GPU model's, else
// guessed from the GPU's NVLink bandwidth (nccl_published::arch_of_nvlink).
nccl_published::Arch gpu_arch(const Topology& t, NodeId gpu);
// NCCL's usable NVLink rate over the signalling rate (20.6 of 25 GB/s per H100 link,
// 20 of 25 per A100 link, 40.1 of 50 per B200 link), by the GPUs' generation.
double nvlink_usable_fraction(nccl_published::Arch arch);
// The share of a NIC's rate NCCL's search counts (channels of the fastest speed of its
// inter-node list that fit in the NIC's rate: 48 GB/s of a 400 Gb/s NIC, 2 x 48 of an 800
// Gb/s one), for the NICs of `gpu`'s host; 1 without NICs.
double net_usable_fraction(const Topology& t, NodeId gpu);
// The sum of a GPU's outgoing NVLink bandwidth (0 without NVLink).
double gpu_nvlink_bandwidth(const Topology& t, NodeId gpu);

// `base` (may be null) with the protocol's costs for algorithm family `a` on `t`; its
// per-hop latencies replace the network's alpha. Machine terms `base` states (a
// calibration) replace NCCL's defaults for the same quantity instead of adding to them:
// a stated launch_s is the machine's ring/Simple base latency, a stated per-kind
// latency_s its ring/Simple per-hop latency on that link class (NCCL's other
// algorithms and protocols scaled by the same factor, keeping the table's ratios),
// a stated efficiency or bandwidth curve the usable share in place of NCCL's NVLink
// share; the protocol's payload efficiency applies on top. `across_hosts`: the collective's
// GPUs span hosts (NVLS then joins them in the network, its network latency NCCL's once).
// `chain`: a ring's chain (broadcast, reduce), whose latency NCCL counts as one hop's for the
// whole chain (the network's where it spans hosts), not one per hop.
std::shared_ptr<CostModel> protocol_cost(const std::shared_ptr<const CostModel>& base, Protocol p,
                                         NcclAlgo a, const Topology& t, bool across_hosts = false,
                                         bool chain = false);

}  // namespace collsim
