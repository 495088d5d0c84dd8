#include "validate/fit/sweep_fit.h"

#include <algorithm>
#include <cmath>

namespace collsim {
namespace {

// How far a rate may lie from a side's prediction and still agree with it.
constexpr double kOutlier = 0.25;

// The rate at i extrapolated from its two neighbours on one side (dir -1: left, +1:
// right) as a power law, a line in log-log (a rate proportional to the size, as small
// copies have, is followed exactly); one neighbour: its rate.
double side_prediction(const std::vector<double>& x, const std::vector<double>& rate, std::size_t i,
                       int dir) {
  const std::size_t a = i + dir;  // the near neighbour, always present here
  if ((dir < 0 && a == 0) || (dir > 0 && a + 1 == rate.size())) return rate[a];
  const std::size_t b = a + dir;
  const double slope = (std::log(rate[a]) - std::log(rate[b])) / (x[a] - x[b]);
  return rate[a] * std::exp(slope * (x[i] - x[a]));
}

}  // namespace

AlphaBeta fit_alpha_beta(std::vector<CalibrationSample>& samples) {
  AlphaBeta c;
  // Weighted least squares with w = 1/t^2 on t = α + n g, g = 1/β.
  double sw = 0, swn = 0, swnn = 0, swt = 0, swnt = 0;
  for (const auto& s : samples) {
    const double w = 1 / (s.time_s * s.time_s), n = static_cast<double>(s.bytes);
    sw += w;
    swn += w * n;
    swnn += w * n * n;
    swt += w * s.time_s;
    swnt += w * n * s.time_s;
  }
  const double det = sw * swnn - swn * swn;
  double g = det != 0 ? (sw * swnt - swn * swt) / det : 0;
  c.alpha_s = (swt - g * swn) / sw;
  if (c.alpha_s < 0) {  // no negative start-up cost: the best line through the origin
    c.alpha_s = 0;
    g = swnn > 0 ? swnt / swnn : 0;
  }
  c.bandwidth_Bps = g > 0 ? 1 / g : 0;
  const double mean = swt / sw;
  double res = 0, tot = 0;
  for (auto& s : samples) {
    s.fit_s = c.alpha_s + static_cast<double>(s.bytes) * g;
    const double w = 1 / (s.time_s * s.time_s);
    res += w * (s.time_s - s.fit_s) * (s.time_s - s.fit_s);
    tot += w * (s.time_s - mean) * (s.time_s - mean);
  }
  c.r2 = tot > 0 ? 1 - res / tot : 1;
  return c;
}

void fit_curve(Sweep& s, double tolerance_pct) {
  std::sort(s.samples.begin(), s.samples.end(),
            [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  std::vector<double> rate;
  for (const auto& p : s.samples) rate.push_back(static_cast<double>(p.bytes) / p.time_s);
  // A size beyond both neighbours' rates that neither side's trend explains (a rank
  // descheduled in most of its iterations) takes the mean of what the two sides
  // predict, held between the neighbours. Anything between its neighbours is kept, and
  // one side agreeing is enough: a cache cliff agrees with the side beyond it.
  std::vector<double> x;
  for (const auto& p : s.samples) x.push_back(std::log(static_cast<double>(p.bytes)));
  std::vector<std::pair<std::int64_t, double>> knots;
  for (std::size_t i = 0; i < rate.size(); ++i) {
    double v = rate[i];
    if (i > 0 && i + 1 < rate.size()) {
      const double lo = std::min(rate[i - 1], rate[i + 1]), hi = std::max(rate[i - 1], rate[i + 1]);
      const double left = side_prediction(x, rate, i, -1), right = side_prediction(x, rate, i, +1);
      const auto agrees = [&](double p) { return std::fabs(v - p) <= kOutlier * p; };
      const bool beyond = v > hi * (1 + kOutlier) || v < lo * (1 - kOutlier);
      if (beyond && !agrees(left) && !agrees(right)) v = std::clamp((left + right) / 2, lo, hi);
    }
    if (!knots.empty() && knots.back().first == s.samples[i].bytes) continue;
    knots.emplace_back(s.samples[i].bytes, v);
  }
  s.curve = SizeCurve(std::move(knots));
  double sum = 0, spread = 0;
  s.max_residual_pct = 0;
  for (auto& p : s.samples) {
    p.fit_s = static_cast<double>(p.bytes) / s.curve.at(p.bytes);
    const double r = std::fabs(p.time_s - p.fit_s) / p.time_s * 100;
    sum += r * r;
    spread = std::max(spread, (p.p90_s - p.p10_s) / p.time_s * 100);
    if (r >= s.max_residual_pct) {
      s.max_residual_pct = r;
      s.worst_bytes = p.bytes;
    }
  }
  s.rms_residual_pct =
      s.samples.empty() ? 0 : std::sqrt(sum / static_cast<double>(s.samples.size()));
  // Noise shows either as sizes off the curve or as iterations far apart.
  s.max_spread_pct = spread;
  s.poor = s.max_residual_pct > tolerance_pct || spread > 4 * tolerance_pct;
}

Sweep memory_sweep(const std::string& name, const Sweep& concurrent, const Sweep& one_way,
                   int ranks) {
  Sweep m(name);
  for (std::size_t i = 0; i < concurrent.samples.size(); ++i) {
    CalibrationSample s = concurrent.samples[i];
    const double alone =
        one_way.curve.empty() ? s.time_s : static_cast<double>(s.bytes) / one_way.curve.at(s.bytes);
    s.time_s = std::min(s.time_s / ranks, alone);
    s.p10_s = std::min(s.p10_s / ranks, alone);
    s.p90_s = std::min(s.p90_s / ranks, alone);
    m.samples.push_back(s);
  }
  fit_curve(m);
  return m;
}

}  // namespace collsim
