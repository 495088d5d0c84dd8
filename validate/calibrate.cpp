#include "validate/calibrate.h"

#include <fmt/format.h>
#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "schedule/builder.h"
#include "validate/measure.h"

namespace collsim {
namespace {

// Rank 0 sends n bytes to rank 1, which sends them back: two messages, the second
// waiting for the first, so each pays the wake-up and start-up cost α too.
Schedule ping_pong(std::int64_t bytes) {
  CollectiveShape shape;
  shape.op = CollectiveOp::Broadcast;  // the result: the root's data on both ranks
  shape.ranks = 2;
  shape.dtype = DType::F32;
  shape.count = std::max<std::int64_t>(1, bytes / 4);
  auto b = ScheduleBuilder::uniform(shape, "ping_pong", {shape.count});
  b.copy({0, 0, 0}, {1, 0, 0}, shape.count);
  b.next_step();
  b.copy({1, 0, 0}, {0, 0, 0}, shape.count);
  return b.finish();
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * (v.size() - 1) + 0.5)];
}

}  // namespace

void fit_alpha_beta(Calibration& c) {
  // Weighted least squares with w = 1/t^2 on t = α + n g, g = 1/β.
  double sw = 0, swn = 0, swnn = 0, swt = 0, swnt = 0;
  for (const auto& s : c.samples) {
    const double w = 1 / (s.median_s * s.median_s), n = static_cast<double>(s.bytes);
    sw += w;
    swn += w * n;
    swnn += w * n * n;
    swt += w * s.median_s;
    swnt += w * n * s.median_s;
  }
  const double det = sw * swnn - swn * swn;
  const double g = det != 0 ? (sw * swnt - swn * swt) / det : 0;
  c.alpha_s = (swt - g * swn) / sw;
  c.bandwidth_Bps = g > 0 ? 1 / g : 0;
  const double mean = swt / sw;
  double res = 0, tot = 0;
  for (auto& s : c.samples) {
    s.fit_s = c.alpha_s + static_cast<double>(s.bytes) * g;
    const double w = 1 / (s.median_s * s.median_s);
    res += w * (s.median_s - s.fit_s) * (s.median_s - s.fit_s);
    tot += w * (s.median_s - mean) * (s.median_s - mean);
  }
  c.r2 = tot > 0 ? 1 - res / tot : 1;
}

Calibration calibrate_shm(const std::vector<std::int64_t>& sizes, const ShmOptions& options) {
  Calibration c;
  c.backend = "shm";
  c.device = cpu_name();
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  c.date = date;
  for (std::int64_t bytes : sizes) {
    const ShmMeasurement m = run_on_shm(ping_pong(bytes), options);
    std::vector<double> one_way;
    for (double t : m.iteration_s) one_way.push_back(t / 2);
    c.samples.push_back({std::max<std::int64_t>(4, bytes / 4 * 4), m.median_s / 2,
                         percentile(one_way, 0.1), percentile(one_way, 0.9)});
  }
  fit_alpha_beta(c);
  return c;
}

nlohmann::json calibration_json(const Calibration& c) {
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& s : c.samples)
    samples.push_back({{"bytes", s.bytes},
                       {"median_s", s.median_s},
                       {"p10_s", s.p10_s},
                       {"p90_s", s.p90_s},
                       {"fit_s", s.fit_s},
                       {"residual_pct", (s.median_s - s.fit_s) / s.median_s * 100}});
  return {{"alpha_s", c.alpha_s}, {"bandwidth_Bps", c.bandwidth_Bps},
          {"r2", c.r2},           {"samples", samples},
          {"backend", c.backend}, {"device", c.device},
          {"date", c.date}};
}

}  // namespace collsim
