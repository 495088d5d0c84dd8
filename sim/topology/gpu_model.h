#pragma once
// The GPUs a server can be named by ("gpu": "a100" in a dgx or cluster preset, or at the top
// of a topology file): the generation NCCL's tuning tables are read for, whether the
// server's NVSwitch reduces (NVLink SHARP), and the links such a server is built with by
// default. A topology that names its GPUs carries the model (Topology::gpu); one that does
// not has its generation guessed from the GPUs' NVLink bandwidth, which a GPU of reduced
// NVLink (H800: 200 GB/s, a Hopper) defeats. Figures and their sources: docs/scenarios.md.
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "core/nccl_published.h"

namespace collsim {

struct GpuModel {
  std::string_view name;
  nccl_published::Arch arch;
  double nvlink;        // bytes/s per GPU and direction through the NVSwitch fabric
  double pcie;          // bytes/s, GPU to its NIC
  double nic;           // bytes/s, one NIC per GPU
  bool switch_reduces;  // the NVSwitch reduces and multicasts (NVLink SHARP, from Hopper on)
};

inline constexpr GpuModel kGpuModels[] = {
    // DGX A100: NVLink 3, 12 links x 25 GB/s; PCIe Gen4 x16; HDR InfiniBand 200 Gb/s.
    {"a100", nccl_published::Arch::Ampere, 300e9, 32e9, 25e9, false},
    // DGX H100 / H200: NVLink 4, 18 x 25 GB/s; PCIe Gen5 x16; NDR 400 Gb/s.
    {"h100", nccl_published::Arch::Hopper, 450e9, 64e9, 50e9, true},
    {"h200", nccl_published::Arch::Hopper, 450e9, 64e9, 50e9, true},
    // HGX H800: a Hopper with 8 of its 18 NVLinks (400 GB/s both ways); NVLS runs on it.
    {"h800", nccl_published::Arch::Hopper, 200e9, 64e9, 50e9, true},
    // DGX B200: NVLink 5, 18 x 50 GB/s; ConnectX-7 400 Gb/s on PCIe Gen5.
    {"b200", nccl_published::Arch::Blackwell, 900e9, 64e9, 50e9, true},
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
