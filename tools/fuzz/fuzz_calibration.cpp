// libFuzzer target: bytes -> calibration JSON -> the reader a scenario's
// "calibration" and `collsim compare --calibration` go through (parse_json_text, then
// apply_calibration and its read_cost_model), then a small collective simulated with
// the calibrated cost model, where its curves and rates are used.
//
// A finding is anything but a clean read or an InputError: another exception, a
// crash, a sanitizer report, a hang or running out of memory. See tools/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/error.h"
#include "core/json_view.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"

namespace {

using namespace collsim;

// Four GPUs behind a switch, an all-reduce and a broadcast of 64 KiB under the flow
// model (which uses host_memory): milliseconds to simulate, and every cost term applies.
const Scenario& base_scenario() {
  static const Scenario s = parse_scenario(nlohmann::json::parse(R"({
      "topology": {"preset": "switch", "gpus": 4, "bandwidth": "100GB/s"},
      "network": {"model": "flow"},
      "collectives": [{"name": "ar", "op": "all_reduce", "algorithm": "ring", "bytes": "64KiB"},
                      {"name": "bc", "op": "broadcast", "bytes": "64KiB", "after": ["ar"]}]})"),
                                           ".", "fuzz");
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json doc = parse_json_text(text, "fuzz-calibration.json");
    Scenario s = base_scenario();
    apply_calibration(s, doc, "fuzz-calibration.json");
    run_scenario(s);
  } catch (const InputError&) {
    // Refused with a message: what bad input should get.
  }
  return 0;
}
