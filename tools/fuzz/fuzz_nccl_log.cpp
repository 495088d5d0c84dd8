// libFuzzer target: bytes -> nccl-tests log text -> the parser `collsim compare
// --nccl-tests LOG` and `collsim calibrate --nccl-tests LOG` use, then, for small logs,
// what compare does next: the launch mode from the header, each row shaped into the
// collective (sized_like), simulated and tabled (compare_nccl_log).
//
// A finding is anything but a parsed log or an InputError: another exception, a
// crash, a sanitizer report, a hang or running out of memory. See tools/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"
#include "scenario/scenario.h"
#include "validate/compare/nccl_compare.h"
#include "validate/compare/nccl_tests_log.h"

namespace {

using namespace collsim;

// What is simulated, so that each input takes milliseconds: the parser sees every
// input, the simulator only logs of a few small rows on a few GPUs.
constexpr int kMaxRanks = 8;
constexpr std::size_t kMaxRows = 4;
constexpr std::int64_t kMaxRowBytes = 1 << 20;

bool small_enough(const NcclTestsLog& log) {
  if (log.ranks > kMaxRanks || log.rows.size() > kMaxRows) return false;
  for (const auto& r : log.rows)
    if (r.bytes > kMaxRowBytes) return false;
  return true;
}

// The log's collective on as many GPUs as it ran on, behind one switch: what a user's
// scenario for the comparison looks like.
Scenario scenario_for(const NcclTestsLog& log) {
  const nlohmann::json doc = {
      {"topology", {{"preset", "switch"}, {"gpus", log.ranks}, {"bandwidth", "100GB/s"}}},
      {"network", {{"model", "flow"}}},
      {"collectives", {{{"name", "c"}, {"op", name_of(log.op)}, {"bytes", 1024}}}}};
  return parse_scenario(doc, ".", "fuzz");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    // The file name names a collective, as a log without a header line relies on.
    const NcclTestsLog log = parse_nccl_tests_log(text, "fuzz_all_reduce.txt");
    launch_of(log);
    if (!small_enough(log)) return 0;
    const Scenario s = scenario_for(log);
    const NcclComparison c =
        compare_nccl_log(s, pick_collective(s, ""), log, 0, std::int64_t{1} << 62);
    nccl_comparison_table(c);
    nccl_comparison_json(c).dump();
  } catch (const InputError&) {
    // Refused with a message: what bad input should get.
  }
  return 0;
}
