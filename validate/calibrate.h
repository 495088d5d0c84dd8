#pragma once
// α-β calibration: a point-to-point ping-pong between two ranks over a range of
// sizes, and a least-squares fit of time = α + n/β in relative error (so small
// messages, where α lives, count as much as large ones).
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "validate/runner.h"

namespace collsim {

struct CalibrationSample {
  std::int64_t bytes;
  double median_s;  // one message: half a round trip
  double p10_s, p90_s;
  double fit_s = 0;
};

struct Calibration {
  double alpha_s = 0;
  double bandwidth_Bps = 0;
  double r2 = 0;  // weighted by 1/t^2, as the fit is
  std::vector<CalibrationSample> samples;
  std::string backend, device, date;
  int ranks = 2;
};

// Fits α and β to (bytes, seconds) samples, minimising the sum of squared relative errors.
void fit_alpha_beta(Calibration& c);

// Ping-pong over the options' backend between `ranks` / 2 pairs at once (rank r with
// r + ranks / 2): 2 is the plain point-to-point figure, more measures under load.
Calibration calibrate(const std::vector<std::int64_t>& sizes, int ranks, const RunOptions& options);
nlohmann::json calibration_json(const Calibration& c);

}  // namespace collsim
