// libFuzzer target: bytes -> a scenario's "workload" (JSON text: one job or a list) on
// a fixed 64-GPU switch -> loaded as `collsim run` loads it (parse_json_text, then
// parse_scenario with scenarios/ as the base folder, so bundled Chakra prefixes
// resolve) -> when small, built and simulated with run_workloads.
//
// A finding is anything but a clean run or an InputError: another exception, a crash, a
// sanitizer report, a hang or running out of memory. Build and run: see
// tools/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "core/json_view.h"
#include "scenario/scenario.h"
#include "simulate/run_workload.h"
#include "workload/workload.h"

#ifndef COLLSIM_SCENARIOS_DIR
#define COLLSIM_SCENARIOS_DIR "scenarios"
#endif

namespace {

using namespace collsim;

// What is simulated, so that each input takes milliseconds: the loader (and its size
// estimate, workload_size) sees every input, the builder and simulator small ones.
constexpr std::int64_t kMaxTasks = 512;
constexpr std::int64_t kMaxOps = 1 << 16;

bool small_enough(const Scenario& s) {
  std::int64_t tasks = 0, ops = 0;
  for (const auto& w : s.workloads) {
    if (w.is_chakra()) tasks += 64;  // the bundled traces: a node or two per rank
    const WorkloadSize size = workload_size(w);
    tasks += size.tasks;
    ops += size.ops;
  }
  return tasks <= kMaxTasks && ops <= kMaxOps;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    nlohmann::json doc = parse_json_text(
        R"({"topology": {"preset": "switch", "gpus": 64, "bandwidth": "450GB/s"},
            "network": {"model": "ideal"}})",
        "fuzz.json");
    doc["workload"] = parse_json_text(text, "fuzz.json");
    const Scenario scenario = parse_scenario(doc, COLLSIM_SCENARIOS_DIR, "fuzz");
    if (!small_enough(scenario)) return 0;
    run_workloads(scenario);
  } catch (const InputError&) {
    // Refused with a message: what bad input should get.
  }
  return 0;
}
