#pragma once
// Curves fitted to measured sweeps (no processes, no hardware): the size -> rate curve
// of one sweep, with outlying sizes replaced and residuals reported; the host's memory
// as several concurrent copies see it; and the classic alpha-beta line. calibrate
// (validate/measure/calibrate.h) measures the sweeps and fits them with these.
#include <cstdint>
#include <string>
#include <vector>

#include "network/cost_model.h"

namespace collsim {

struct CalibrationSample {
  std::int64_t bytes;
  double time_s;  // one op's (or step's) duration at the run's quantile
  double p10_s, p90_s;
  double fit_s = 0;  // the fitted curve's time for these bytes
};

// One sweep over sizes, and the curve fitted to it (rates in B/s).
struct Sweep {
  explicit Sweep(std::string sweep_name) : name(std::move(sweep_name)) {}
  std::string name;  // "one_way", "concurrent", "float32.sum"
  std::vector<CalibrationSample> samples;
  SizeCurve curve;
  double rms_residual_pct = 0, max_residual_pct = 0;
  std::int64_t worst_bytes = 0;  // where the largest residual is
  double max_spread_pct = 0;     // widest (p90 - p10) / time_s over its sizes
  bool poor = false;             // residuals or spread too large to trust
};

// The line t = alpha + n / bandwidth through (bytes, seconds) samples.
struct AlphaBeta {
  double alpha_s = 0;
  double bandwidth_Bps = 0;
  double r2 = 0;  // weighted by 1/t^2, as the fit is
};

// Fits alpha and beta to the samples, minimising the sum of squared relative errors;
// fills each sample's fit_s.
AlphaBeta fit_alpha_beta(std::vector<CalibrationSample>& samples);

// Fits a size -> rate curve to a sweep's samples (outlying sizes replaced, see
// sweep_fit.cpp) and fills in its residuals; `poor` when they or the samples' spread pass
// `tolerance_pct`.
void fit_curve(Sweep& s, double tolerance_pct = 10);

// The host's memory as seen by `ranks` ops at once: their bytes over the time they
// took, never below one op alone (a lone transfer is not slowed by it).
Sweep memory_sweep(const std::string& name, const Sweep& concurrent, const Sweep& one_way,
                   int ranks);

}  // namespace collsim
