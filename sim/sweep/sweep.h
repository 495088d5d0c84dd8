#pragma once
// Size x algorithm x rank-count sweeps of one collective, nccl-tests style, with
// the winner at each size and where the winner changes.
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "scenario/scenario.h"

namespace collsim {

struct SweepRequest {
  std::string collective;               // which of the scenario's; empty: the first
  std::vector<std::int64_t> sizes;      // bytes
  // empty: every one that applies, and "nccl" (NCCL's own pick) where NCCL has one
  std::vector<std::string> algorithms;
  std::vector<int> rank_counts;         // empty: the collective's own
};

struct SweepRow {
  int ranks;
  std::string algorithm;
  std::int64_t bytes;
  std::int64_t count;
  double time_s;
  double algbw_Bps;
  double busbw_Bps;
  bool winner;  // fastest at this (ranks, size); "nccl" rows never win, they are compared
  std::string plan;  // the planned label: "ring (8 channels) LL128", "nccl: ring/LL/24ch"
};

// At one (ranks, size): NCCL's pick, simulated, against the fastest simulated algorithm.
struct NcclVersusBest {
  int ranks;
  std::int64_t bytes;
  std::string nccl_plan, best_plan;
  double nccl_s, best_s;
};

struct Crossover {
  int ranks;
  std::string from, to;       // the winner below, the winner above
  std::int64_t below, above;  // the sizes either side
  double estimate;            // where the two algorithms' time lines cross, in bytes
};

struct SweepResult {
  const CollectiveSpec* spec = nullptr;
  std::vector<SweepRow> rows;  // by ranks, then algorithm, then size
  std::vector<Crossover> crossovers;
  std::vector<NcclVersusBest> nccl;  // when "nccl" is among the algorithms
};

// "1KiB..1GiB" with step "x2" (or "x4", ...), or a comma list "1KiB,1MiB".
std::vector<std::int64_t> parse_sizes(const std::string& sizes, const std::string& step);

// `progress(done, total)` is called after each simulation.
SweepResult run_sweep(const Scenario& s, const SweepRequest& req,
                      const std::function<void(std::size_t, std::size_t)>& progress = {});

std::string sweep_table(const Scenario& s, const SweepResult& r);
void write_sweep_csv(std::ostream& out, const Scenario& s, const SweepResult& r);
nlohmann::json sweep_json(const Scenario& s, const SweepResult& r);
// Time and busbw against size, log-log, one line per algorithm, crossovers marked.
void write_sweep_html(std::ostream& out, const Scenario& s, const SweepResult& r);

}  // namespace collsim
