#pragma once
// The GPUs a server can be named by ("gpu": "a100" in a dgx or cluster preset, or at the top
// of a topology file): the generation NCCL's tuning tables are read for, whether the
// server's NVSwitch reduces (NVLink SHARP), and the links such a server is built with by
// default. A topology that names its GPUs carries the model (Topology::gpu); one that does
// not has its generation guessed from the GPUs' NVLink bandwidth, which a GPU of reduced
// NVLink (H800: 200 GB/s, a Hopper) defeats. Figures and their sources: docs/scenarios.md.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "core/nccl_published.h"

namespace collsim {

// The hosts' CPUs, as NCCL tells them apart: across hosts it caps its LL protocol by their
// vendor (llMaxBws), not by the GPUs.
enum class HostCpu : std::uint8_t { Intel, Amd };

inline std::string_view name_of(HostCpu c) {
  return c == HostCpu::Amd ? "amd" : "intel";
}
inline std::vector<std::string> host_cpu_names() {
  return {"intel", "amd"};
}

struct GpuModel {
  std::string_view name;
  nccl_published::Arch arch;
  double nvlink;        // bytes/s per GPU and direction through the NVSwitch fabric
  double pcie;          // bytes/s, GPU to its NIC
  double nic;           // bytes/s, one NIC per GPU
  bool switch_reduces;  // the NVSwitch reduces and multicasts (NVLink SHARP, from Hopper on)
  HostCpu host_cpu;     // its DGX's CPUs
};

inline constexpr GpuModel kGpuModels[] = {
    // DGX A100: NVLink 3, 12 links x 25 GB/s; PCIe Gen4 x16; HDR InfiniBand 200 Gb/s; two
    // AMD EPYC 7742.
    {"a100", nccl_published::Arch::Ampere, 300e9, 32e9, 25e9, false, HostCpu::Amd},
    // DGX H100 / H200: NVLink 4, 18 x 25 GB/s; PCIe Gen5 x16; NDR 400 Gb/s; two Intel Xeon
    // Platinum 8480C.
    {"h100", nccl_published::Arch::Hopper, 450e9, 64e9, 50e9, true, HostCpu::Intel},
    {"h200", nccl_published::Arch::Hopper, 450e9, 64e9, 50e9, true, HostCpu::Intel},
    // HGX H800: a Hopper with 8 of its 18 NVLinks (400 GB/s both ways); NVLS runs on it.
    {"h800", nccl_published::Arch::Hopper, 200e9, 64e9, 50e9, true, HostCpu::Intel},
    // DGX B200: NVLink 5, 18 x 50 GB/s; ConnectX-7 400 Gb/s on PCIe Gen5; two Intel Xeon
    // Platinum 8570.
    {"b200", nccl_published::Arch::Blackwell, 900e9, 64e9, 50e9, true, HostCpu::Intel},
};

inline const GpuModel* find_gpu_model(std::string_view name) {
  const auto it = std::find_if(std::begin(kGpuModels), std::end(kGpuModels),
                               [&](const GpuModel& g) { return g.name == name; });
  return it == std::end(kGpuModels) ? nullptr : &*it;
}

inline std::vector<std::string> gpu_model_names() {
  std::vector<std::string> names;
  for (const GpuModel& g : kGpuModels) names.emplace_back(g.name);
  return names;
}

}  // namespace collsim
