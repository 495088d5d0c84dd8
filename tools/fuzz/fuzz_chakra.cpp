// libFuzzer target: bytes -> one rank's Chakra trace file (NAME.<r>.et) -> parsed as
// `collsim run` parses it (parse_chakra_trace, the reader's code on the file's bytes)
// -> a step graph with one rank, and with two ranks each running it -> when small,
// simulated on a two-GPU switch.
//
// A finding is anything but a clean run or an InputError: another exception, a crash, a
// sanitizer report, a hang or running out of memory. Built without protobuf, every
// input is refused with "built without protobuf" (the target still builds). Build and
// run: see tools/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "core/json_view.h"
#include "scenario/scenario.h"
#include "schedule/algorithms.h"
#include "simulate/run_step.h"
#include "workload/chakra.h"

namespace {

using namespace collsim;

// Graphs simulated: a few tasks, so that each input takes milliseconds.
constexpr std::size_t kMaxSimulatedTasks = 64;

const Scenario& two_gpus() {
  static const Scenario s = parse_scenario(
      parse_json_text(R"({"topology": {"preset": "switch", "gpus": 2, "bandwidth": "100GB/s"},
                          "network": {"model": "ideal"},
                          "collectives": [{"op": "all_reduce", "bytes": 8}]})",
                      "fuzz.json"),
      ".");
  return s;
}

// What a Chakra workload with a GPU and a memory bandwidth sets (FLOPs and memory
// nodes are then timed, not refused or passed through).
ChakraOptions options() {
  ChakraOptions o;
  o.peak_flops = 989e12;
  o.mfu = 0.5;
  o.memory_bandwidth = 3e12;
  o.serialize_compute = true;
  return o;
}

void graph_and_simulate(const std::vector<ChakraTrace>& traces) {
  try {
    StepGraph g = chakra_step_graph(traces, options(), "fuzz");
    if (g.tasks.size() > kMaxSimulatedTasks) return;
    // As a workload without an "algorithm" gets them (workload.cpp, build_chakra).
    for (StepTask& t : g.tasks)
      if (t.kind == StepTaskKind::Collective && t.collective->algorithm.empty())
        t.collective.edit().algorithm = algorithms_for(t.collective->shape.op).front();
    simulate_step(two_gpus(), g);
  } catch (const InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    ChakraBudget budget;
    const ChakraTrace trace = parse_chakra_trace(bytes, "fuzz.0.et", budget);
    graph_and_simulate({trace});
    graph_and_simulate({trace, trace});
  } catch (const InputError&) {
    // Refused with a message: what bad input should get.
  }
  return 0;
}
