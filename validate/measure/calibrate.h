#pragma once
// Calibration: what the cost model (sim/network/cost_model.h) needs, measured on this
// machine with the runner, and written as a calibration file a scenario can load.
//
// Four sweeps over transfer sizes, each op timed inside the rank that runs it, on
// buffers laid out as the collectives' (in place: one data buffer per rank, a step
// moving a chunk of it into the same chunk of the peer's), because on shm what a copy
// costs depends on how much memory each rank touches:
//   one_way     one rank copies its buffer into its peer's: the bandwidth curve;
//   concurrent  both ranks copy a chunk to each other at once, timed by the slower (a
//               step ends with its slowest op): the host's memory as a capacity those
//               copies share (host_memory; it binds once data leaves the caches). Then
//               a second such step, waiting on the first: the gap between them is the
//               per-op overhead (a wake-up, a flag read from the peer's cache), and the
//               way from the release of all ranks to the later one's first op is the
//               launch;
//   reduce      one rank reduces its peer's chunk into its own, per "dtype.op": the
//               fused read-reduce-write loop's rate; then both ranks at once: the host
//               memory as reductions share it (reduce_memory; they read twice what a
//               copy reads).
// All sweeps run in rounds (RunOptions::rounds), every schedule once per round.
// Each curve keeps the measured rate at every size, except a size more than 25% off
// what both sides' trends predict (noise), which takes their mean; printed with its
// residuals.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "network/cost_model.h"
#include "validate/fit/sweep_fit.h"
#include "validate/measure/runner.h"

namespace collsim {

struct Calibration {
  // The classic α-β line through the one-way sweep, kept as provenance.
  double alpha_s = 0;
  double bandwidth_Bps = 0;
  double r2 = 0;                           // weighted by 1/t^2, as the fit is
  std::vector<CalibrationSample> samples;  // the α-β fit's input (and fit_s)

  CostModel model;  // what the simulator uses
  double overhead_p10_s = 0, overhead_p90_s = 0;
  // one_way, concurrent, host_memory, then per reduction: alone, concurrent, its memory
  std::vector<Sweep> sweeps;

  std::string backend, device, date;
  int ranks = 2;
  int iterations = 0, warmup = 0, rounds = 1;
  double quantile = 0.5;
  Pinning pinning;
  double load_before = 0, load_after = 0;  // 1-minute load average around the run
};

// What calibrate measures: ranks / 2 pairs (rank r with r + ranks / 2) at once.
struct CalibrateRequest {
  std::vector<std::int64_t> sizes;
  int ranks = 2;
  std::vector<std::string> reductions = {"float32.sum"};  // "dtype.op"
};

Calibration calibrate(const CalibrateRequest& request, const RunOptions& options);

// The file: the cost model's keys (cost_json), "alpha_s" 0 and "bandwidth_Bps" the
// curve's top (the nominal rate the curve stretches), and provenance.
nlohmann::json calibration_json(const Calibration& c);
// Each sweep with its fitted curve and residuals, the overhead, and warnings.
std::string calibration_report(const Calibration& c);

}  // namespace collsim
