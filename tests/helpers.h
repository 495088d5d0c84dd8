#pragma once
// Small conveniences shared by the tests.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/json_view.h"
#include "network/network_model.h"
#include "scenario/scenario.h"
#include "schedule/algorithms.h"
#include "simulate/run_scenario.h"
#include "simulate/simulator.h"
#include "topology/presets.h"
#include "workload/chakra.h"

namespace collsim::test {

// CI runs the suite a second time under ASan + UBSan at -O0, about ten times slower
// (tests/CMakeLists.txt defines COLLSIM_SANITIZE there). The heaviest sweeps then take a
// reduced set that still reaches every code path; the Release run keeps the full sweep.
#ifdef COLLSIM_SANITIZE
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// Rank counts 1..max_k; under the sanitizers 1..8 (every small case), then the powers of
// two, one below each (15, 31, 63, 127: odd, all bits set) and 13 and 17 (primes).
inline std::vector<int> rank_counts_up_to(int max_k) {
  std::vector<int> out;
  for (int k = 1; k <= max_k; ++k)
    if (!kSanitized || k <= 8 || k == 13 || k == 17 || ((k & (k - 1)) == 0) || (((k + 1) & k) == 0))
      out.push_back(k);
  return out;
}

inline CollectiveShape shape_of(CollectiveOp op, int ranks, std::int64_t count,
                                DType dtype = DType::F32) {
  CollectiveShape s;
  s.op = op;
  s.ranks = ranks;
  s.count = count;
  s.dtype = dtype;
  return s;
}

inline Schedule generate(CollectiveOp op, std::string_view algorithm, const CollectiveShape& shape,
                         AlgorithmOptions options = {}) {
  const AlgorithmEntry* e = find_algorithm(op, algorithm);
  if (!e) throw std::invalid_argument("no such algorithm in the catalogue");
  return e->generate(shape, options);
}

// Simulates one schedule on ranks 0..K-1 of `topology`.
inline SimulationResult simulate(const Schedule& s, const Topology& topology, double alpha_s,
                                 const std::string& model = "ideal") {
  Router router(topology);
  NetworkParams p;
  p.model = model;
  p.alpha = from_seconds(alpha_s);
  auto net = make_network_model(p, topology, router);
  std::vector<NodeId> gpus;
  for (int r = 0; r < s.shape.ranks; ++r) gpus.push_back(topology.gpu_of_rank(r));
  Simulator sim(topology, router, *net);
  return sim.run({{"test", &s, gpus, {}, nullptr}});
}

inline double simulated_seconds(const Schedule& s, const Topology& topology, double alpha_s,
                                const std::string& model = "ideal") {
  const auto r = simulate(s, topology, alpha_s, model);
  return to_seconds(r.tasks[0].end - r.tasks[0].start);
}

// A whole file, as bytes.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh, empty folder under the system's temporary folder, one per test process.
inline std::filesystem::path temp_dir(const std::string& tag) {
  const auto d = std::filesystem::temp_directory_path() /
                 ("collsim-test-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// The collsim command as a user runs it: exit status, stdout and stderr.
struct Outcome {
  int status;
  std::string out;
  std::string err;
};

inline Outcome run_collsim(const std::string& args) {
  const auto err_file = temp_dir("stderr") / "err.txt";
  const std::string cmd = std::string(COLLSIM_EXE) + " " + args + " 2>" + err_file.string();
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {-1, "", "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, slurp(err_file)};
}

// The InputError message from loading (and running) a scenario given as text.
inline std::string error_of(const std::string& text) {
  try {
    const Scenario s = parse_scenario(parse_json_text(text, "scenario.json"), ".");
    run_scenario(s);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// A bundled scenario whose workload reads a Chakra trace that this build cannot
// (no protobuf) or that this checkout lacks (the published traces are in ../shared):
// the loops over every bundled scenario skip it. `dir` resolves relative prefixes.
inline bool chakra_trace_unavailable(const nlohmann::json& doc, const std::filesystem::path& dir) {
  if (!doc.contains("workload")) return false;
  const auto& w = doc["workload"];
  const std::vector<nlohmann::json> jobs =
      w.is_array() ? w.get<std::vector<nlohmann::json>>() : std::vector<nlohmann::json>{w};
  for (const auto& job : jobs) {
    if (!job.is_object() || !job.contains("chakra")) continue;
    if (!chakra_files_supported()) return true;
    try {
      chakra_rank_files(dir / job["chakra"].get<std::string>(), 0);
    } catch (const InputError&) {
      return true;
    }
  }
  return false;
}

}  // namespace collsim::test
