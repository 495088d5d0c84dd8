#pragma once
// Small conveniences shared by the tests.
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

namespace collsim::test {

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
  return sim.run({{"test", &s, gpus, {}}});
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

}  // namespace collsim::test
