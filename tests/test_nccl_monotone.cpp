// "algorithm": "nccl" never takes less time for more data: on every bundled multi-GPU
// topology (stand-ins of a few nodes for the large clusters and nvl72), for every
// collective, the simulated time of NCCL's pick at 2s is at least its time at s, from
// 1 B to 16 GiB (1 GiB under the sanitizers). A decrease means a term charged by size that should
// not be (issue 23).
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "helpers.h"
#include "simulate/run_scenario.h"

using namespace collsim;

namespace nccl_monotone_test {

// The bundled topologies, with stand-ins for the large ones: the clusters as four hosts
// (NCCL's three-or-more-nodes constants) in their own fabric, nvl72 as eight GPUs.
// Under the sanitizers the 4-host stand-ins are left out (the Release run covers them;
// the sanitizers look for memory errors, which the 2-host cluster reaches as well).
std::vector<nlohmann::json> topologies() {
  std::vector<nlohmann::json> out{{{"preset", "cluster"}, {"nodes", 2}},
                                  {{"preset", "nvl72"}, {"gpus", 8}}};
  if (!kSanitized) {
    out.push_back({{"preset", "cluster"}, {"nodes", 4}});
    out.push_back({{"preset", "cluster"}, {"nodes", 4}, {"oversubscription", 2}});
    out.push_back(
        {{"preset", "cluster"}, {"nodes", 4}, {"pod_nodes", 2}, {"spines", 2}, {"cores", 2}});
  }
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(COLLSIM_SOURCE_DIR) + "/topologies")) {
    const std::string stem = entry.path().stem().string();
    if (!stem.starts_with("cluster") && stem != "nvl72") out.emplace_back(stem);
  }
  return out;
}

// Every power of two to 64 MiB (where NCCL's picks change), then every fourth to 16 GiB
// (one pick, bandwidth-bound, and the costliest to simulate); under the sanitizers every
// power of two to 4 MiB, then every sixteenth to 1 GiB.
std::vector<std::int64_t> sizes() {
  const std::int64_t fine = kSanitized ? 4 << 20 : 64 << 20;
  const std::int64_t top = kSanitized ? std::int64_t{1} << 30 : std::int64_t{16} << 30;
  std::vector<std::int64_t> out;
  for (std::int64_t s = 1; s <= top; s *= s < fine ? 2 : kSanitized ? 16 : 4) out.push_back(s);
  return out;
}

// The pick's label and simulated time for one collective alone on the topology.
std::pair<std::string, double> simulate(const nlohmann::json& topology, const std::string& op,
                                        std::int64_t bytes) {
  const nlohmann::json doc = {
      {"topology", topology},
      {"collectives",
       {{{"name", "x"}, {"op", op}, {"algorithm", "nccl"}, {"dtype", "int8"}, {"bytes", bytes}}}}};
  const ScenarioResult r = run_scenario(parse_scenario(doc, "."));
  return {r.labels[0], r.outcomes[0].time_s};
}

}  // namespace nccl_monotone_test

using namespace nccl_monotone_test;

TEST_CASE("NCCL's pick never takes less time for more data from 1 B to 16 GiB", "[nccl]") {
  const char* ops[] = {"all_reduce", "all_gather", "reduce_scatter",
                       "broadcast",  "reduce",     "all_to_all"};
  for (const auto& topology : topologies()) {
    for (const std::string op : ops) {
      std::string decreases;
      std::pair<std::string, double> last;
      std::int64_t last_bytes = 0;
      for (std::int64_t bytes : sizes()) {
        auto now = simulate(topology, op, bytes);
        // Only rounding is forgiven: the times are sums of picoseconds.
        if (last_bytes > 0 && now.second < last.second * (1 - 1e-9))
          decreases +=
              fmt::format("\n  {} B {} {:.3f} us -> {} B {} {:.3f} us", last_bytes, last.first,
                          last.second * 1e6, bytes, now.first, now.second * 1e6);
        last = std::move(now);
        last_bytes = bytes;
      }
      INFO(topology.dump() << " " << op << decreases);
      CHECK(decreases.empty());
    }
  }
}
