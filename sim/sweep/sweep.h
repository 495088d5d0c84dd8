#pragma once
// Size x algorithm x rank-count sweeps of one collective, nccl-tests style, with
// the winner at each size and where the winner changes.
//
// A sweep is settled first (plan_sweep: every point, in report order), then its
// points run, each on its own copy of the scenario with its own router and network
// model, so points run on any thread, shard or MPI rank alike; finish_sweep puts the
// rows back together. Same points in, same bytes out, however they were split.
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "core/time.h"
#include "scenario/scenario.h"

namespace collsim {

struct SweepRequest {
  std::string collective;           // which of the scenario's; empty: the first
  std::vector<std::int64_t> sizes;  // bytes
  // empty: every one that applies, and "nccl" (NCCL's own pick) where NCCL has one
  std::vector<std::string> algorithms;
  std::vector<int> rank_counts;  // empty: the collective's own
};

// What the reports say about the swept collective and its network: kept apart from
// the Scenario so that `collsim merge` writes the reports from shard files alone.
struct SweepAbout {
  std::string scenario, topology, network;  // the names, and the network model
  int gpus = 0;
  Time alpha = 0;
  std::string collective, op, dtype;
  std::string algorithm;  // the collective's own ("nccl": NCCL runs it)
  std::string redop = "none";  // "none" when the collective does not reduce
  int root = -1;               // -1 when it has no root
};

struct SweepPoint {
  int ranks;
  std::string algorithm;
  std::int64_t bytes;
};

// Every point of a sweep, settled before any runs. Point k is
// (rank_counts[k / (A*S)], algorithms[k / S % A], sizes[k % S]): the report's order.
struct SweepPlan {
  SweepAbout about;
  std::size_t collective = 0;  // its index among the scenario's collectives
  bool own_ranks = true;       // the collective's own ranks (no rank counts asked for)
  std::vector<int> rank_counts;
  std::vector<std::string> algorithms;
  std::vector<std::int64_t> sizes;
  // Default algorithms the planner refuses here, each with why ("nvls: ..."): the reports
  // say so, rather than a sweep that silently lacks them or stops at their first point.
  std::vector<std::string> left_out;

  // Beside NCCL's pick, or sweeping a collective NCCL runs, the other algorithms pay
  // NCCL's protocol costs too (each its fastest): a point then differs from `collsim run`
  // of the algorithm without a protocol, and the table's header says so.
  bool others_on_nccl_protocols() const;
  std::size_t points() const { return rank_counts.size() * algorithms.size() * sizes.size(); }
  SweepPoint point(std::size_t k) const;
};

struct SweepRow {
  int ranks;
  std::string algorithm;
  std::int64_t bytes;
  std::int64_t count;
  double time_s;
  double algbw_Bps;
  double busbw_Bps;
  bool winner;       // fastest at this (ranks, size); "nccl" rows never win, they are compared
  std::string plan;  // the planned label: "ring (8 channels) LL128", "nccl: ring/LL/24ch"
  // What its ops took on the links: below time_s where NCCL's estimate held the pick
  // (CollectiveOutcome::held_by; the plan then ends in " (NCCL's estimate)").
  double ops_time_s = 0;
  // Under the ideal model only: faster than its busiest link can carry its bytes
  // (link_floor_s). Such a time is no physical one, so the row never wins.
  bool over_link_rate = false;
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

// A measured point (an nccl-tests log's out-of-place row), drawn and listed beside the
// simulated ones: plain numbers, so that sim/ needs no log reader.
struct MeasuredPoint {
  int ranks;
  std::int64_t bytes;
  double time_s;
  double busbw_Bps;
};

struct SweepResult {
  SweepPlan plan;
  std::vector<SweepRow> rows;  // by ranks, then algorithm, then size: one per point
  std::vector<Crossover> crossovers;
  std::vector<NcclVersusBest> nccl;  // when "nccl" is among the algorithms
  std::vector<MeasuredPoint> measured;  // given with --measured; empty: none
};

// The most sizes one sweep takes (nccl-tests sweeps have a few dozen): counted before
// any is made, so a factor near 1 cannot ask for billions of points.
inline constexpr std::size_t kMaxSweepSizes = 4096;

// "1KiB..1GiB" with step "x2" (or "x4", ...), or a comma list "1KiB,1MiB".
std::vector<std::int64_t> parse_sizes(const std::string& sizes, const std::string& step);
// A range's factor, "x2" -> 2: more than 1; an InputError naming --step otherwise.
double step_factor(const std::string& step);
// Sizes given as numbers (Python's list): each 1 B .. kMaxBytes, at most kMaxSweepSizes;
// an InputError names `where` and the index.
void check_sizes(const std::vector<std::int64_t>& sizes, const std::string& where);

// Checks the request against the scenario and lists its points.
SweepPlan plan_sweep(const Scenario& s, const SweepRequest& req);

// Simulates point k of the plan (winner left false).
SweepRow run_sweep_point(const Scenario& s, const SweepPlan& plan, std::size_t k);

// Called after each point with (points done, points to do); never two calls at once.
using SweepProgress = std::function<void(std::size_t, std::size_t)>;

// Simulates the given points on `threads` threads (each takes the next point not yet
// taken); rows in the order of `points`. When points fail, rethrows the error of the
// earliest, as one thread would.
std::vector<SweepRow> run_sweep_points(const Scenario& s, const SweepPlan& plan,
                                       std::span<const std::size_t> points, int threads = 1,
                                       const SweepProgress& progress = {});

// Winners, crossovers and NCCL's picks from one row per point, in point order.
SweepResult finish_sweep(SweepPlan plan, std::vector<SweepRow> rows);

// Where the fastest algorithm changes at rank count plan.rank_counts[ri], NCCL's pick
// among them or not (finish_sweep leaves it out: it is compared, not a candidate).
std::vector<Crossover> sweep_crossovers(const SweepPlan& plan, const std::vector<SweepRow>& rows,
                                        std::size_t ri, bool with_nccl);

// plan_sweep, every point on `threads` threads, finish_sweep.
SweepResult run_sweep(const Scenario& s, const SweepRequest& req,
                      const SweepProgress& progress = {}, int threads = 1);

// The measured point at (ranks, bytes), or null.
const MeasuredPoint* measured_at(const SweepResult& r, int ranks, std::int64_t bytes);

std::string sweep_table(const SweepResult& r);
void write_sweep_csv(std::ostream& out, const SweepResult& r);
nlohmann::json sweep_json(const SweepResult& r);
// Time and busbw against size, log-log, one line per algorithm, crossovers marked.
void write_sweep_html(std::ostream& out, const SweepResult& r);

}  // namespace collsim
