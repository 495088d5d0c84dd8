#pragma once
// Small conveniences shared by the tests.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>
#include <stdexcept>
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

// A test that cannot run in this build or on this machine, because an optional dependency
// is missing (protobuf, MPI, Chromium, a GPU), prints this marker with the reason and
// returns: tests/CMakeLists.txt makes CTest report any test whose output holds the
// marker as Skipped, never Passed, and .ci/run fails when anything but the GPU tests
// skips. Data the repository holds is never a reason to skip.
#define COLLSIM_SKIP_TEST(reason)                                   \
  do {                                                              \
    std::cout << "COLLSIM-TEST-SKIPPED: " << reason << std::endl; \
    return;                                                         \
  } while (false)

namespace collsim::test {

// CI runs the suite a second time under ASan + UBSan, the library at -O1 and the tests at
// -O0 (tests/CMakeLists.txt defines COLLSIM_SANITIZE there): the whole suite takes 3.5
// times its Release run's CPU time, allocation-heavy tests up to 20 times. The heaviest sweeps then take a
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
  p.model = *network_model_named(model);
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

// `env`: VAR=VALUE settings for this run only ("" for none).
inline Outcome run_collsim(const std::string& args, const std::string& env = "") {
  const auto err_file = temp_dir("stderr") / "err.txt";
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(COLLSIM_EXE) + " " +
                          args + " 2>" + err_file.string();
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

// The outside data the repository holds (data/README.md: published nccl-tests logs,
// ASTRA-sim's Chakra traces). It is always there: a missing file fails the test.
// Where headless Chromium is, or empty: a page-rendering test skips without it.
inline std::string chromium_path() {
  return std::filesystem::exists("/usr/bin/chromium") ? "/usr/bin/chromium" : "";
}
inline constexpr const char* kChromiumFlags =
    " --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 ";

// A page as headless Chromium renders it: its DOM (empty if Chromium failed), and the
// console lines that report an error (an uncaught exception, a failed script).
struct RenderedPage {
  std::string dom;
  std::vector<std::string> console_errors;
};
inline RenderedPage render_in_chromium(const std::filesystem::path& html) {
  const auto dom_file = html.parent_path() / "dom.html", log = html.parent_path() / "chromium.log";
  const std::string cmd = "timeout 120 " + chromium_path() + kChromiumFlags + "--dump-dom file://" +
                          html.string() + " >" + dom_file.string() + " 2>" + log.string();
  RenderedPage page;
  if (std::system(cmd.c_str()) != 0) return page;
  page.dom = slurp(dom_file);
  std::istringstream lines(slurp(log));
  for (std::string line; std::getline(lines, line);)
    if (line.find("CONSOLE") != std::string::npos &&
        (line.find("Uncaught") != std::string::npos || line.find("Error") != std::string::npos))
      page.console_errors.push_back(line);
  return page;
}

inline std::filesystem::path data_file(const std::filesystem::path& relative) {
  const std::filesystem::path p = std::filesystem::path(COLLSIM_SOURCE_DIR) / "data" / relative;
  if (!std::filesystem::exists(p)) throw std::runtime_error("missing " + p.string());
  return p;
}

// GPUs whose names once broke the JSON or the HTML written about them: a quote, a
// backslash, markup and non-ASCII text (a newline is refused at load), each linked to
// switch "sw" at 10 GB/s: a topology named `name`.
inline const std::vector<std::string> kOddGpuNames = {"gpu\"0", "gpu\\1", "gpu</script>2",
                                                      "gp\xC3\xBC-\xE2\x86\x92-3"};
inline nlohmann::json odd_names_topology(const std::string& name) {
  nlohmann::json nodes = nlohmann::json::array(), links = nlohmann::json::array();
  for (const auto& g : kOddGpuNames) {
    nodes.push_back({{"name", g}, {"kind", "gpu"}});
    links.push_back({{"src", g}, {"dst", "sw"}, {"bandwidth", "10GB/s"}, {"kind", "nvlink"}});
  }
  nodes.push_back({{"name", "sw"}, {"kind", "nvswitch"}});
  return {{"name", name}, {"nodes", nodes}, {"links", links}};
}

// A bundled scenario whose workload reads a Chakra trace, which a build without protobuf
// cannot: the loops over every bundled scenario leave it out, and "the bundled Chakra
// scenario runs" (test_chakra.cpp) reports itself skipped in such a build.
inline bool needs_protobuf(const nlohmann::json& doc) {
  if (chakra_files_supported() || !doc.contains("workload")) return false;
  const auto& w = doc["workload"];
  const std::vector<nlohmann::json> jobs =
      w.is_array() ? w.get<std::vector<nlohmann::json>>() : std::vector<nlohmann::json>{w};
  for (const auto& job : jobs)
    if (job.is_object() && job.contains("chakra")) return true;
  return false;
}

}  // namespace collsim::test
