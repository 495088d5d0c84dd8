// libFuzzer target: bytes -> scenario JSON -> load -> simulate, the CLI's code path.
//
// A finding is anything but a clean load or an InputError: another exception, a
// crash, a sanitizer report (built with -fsanitize=fuzzer,address,undefined), a hang
// or running out of memory. Build and run: see tools/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "core/json_view.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"

#ifndef COLLSIM_SCENARIOS_DIR
#define COLLSIM_SCENARIOS_DIR "scenarios"
#endif

namespace {

using namespace collsim;

// What is simulated, so that each input takes milliseconds: the loader sees every
// input, the simulator only small ones. Big scenarios are the loader's to refuse
// (schedule and preset size checks), and those checks run on every input.
constexpr int kMaxRanks = 64;
constexpr std::size_t kMaxCollectives = 16;
constexpr std::size_t kMaxLinks = 4096;
constexpr int kMaxSegments = 64;
constexpr std::int64_t kMaxAutoSegmentElements = 256;  // "segments": "auto" tries up to count
constexpr double kMaxPackets = 1 << 16;                // packet model: packets over all transfers

constexpr int kMaxChannels = 8;

// Segments and channels anywhere in the options (hierarchy levels too), and "auto"
// ones only on small buffers: the tuner simulates every candidate.
bool small_options(const AlgorithmOptions& o, std::int64_t count) {
  if (o.segments > kMaxSegments || o.channels > kMaxChannels) return false;
  if ((o.auto_segments || o.auto_channels) && count > kMaxAutoSegmentElements) return false;
  for (const auto& level : o.levels)
    if (!small_options(level.options, count)) return false;
  return true;
}

bool small_enough(const Scenario& s) {
  if (s.topology.num_ranks() > kMaxRanks || s.topology.links().size() > kMaxLinks) return false;
  if (s.collectives.size() > kMaxCollectives) return false;
  double packets = 0;
  for (const auto& c : s.collectives) {
    if (!small_options(c.options, c.shape.count)) return false;
    // A rank sends at most about twice the collective's bytes (all-reduce).
    packets += 2.0 * static_cast<double>(c.bytes) * static_cast<double>(c.ranks.size()) /
               static_cast<double>(s.network.packet_bytes);
  }
  return !collsim::info_of(s.network.model).holds_packets || packets <= kMaxPackets;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json doc = parse_json_text(text, "fuzz.json");
    const Scenario scenario = parse_scenario(doc, COLLSIM_SCENARIOS_DIR, "fuzz");
    if (!small_enough(scenario)) return 0;
    run_scenario(scenario);
  } catch (const InputError&) {
    // Refused with a message: what bad input should get.
  }
  return 0;
}
