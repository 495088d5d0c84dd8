#include "validate/calibrate.h"

#include <fmt/format.h>
#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "schedule/builder.h"
#include "validate/measure.h"
#include "validate/validation_error.h"

namespace collsim {
namespace {

// Rank r sends n bytes to rank r + K/2, which sends them back: two messages, the
// second waiting for the first, so each pays the wake-up and start-up cost α too.
// With K > 2 the K/2 pairs run at once and share whatever they share (memory, links).
Schedule ping_pong(std::int64_t bytes, int ranks) {
  CollectiveShape shape;
  shape.op = CollectiveOp::SendRecv;
  shape.ranks = ranks;
  shape.dtype = DType::F32;
  shape.count = std::max<std::int64_t>(1, bytes / 4);
  // Buffer 0 holds what is sent, buffer 1 what comes back (send_recv's layout).
  auto b = ScheduleBuilder::uniform(shape, "ping_pong", {shape.count, shape.count});
  const int half = ranks / 2;
  for (int r = 0; r < half; ++r) b.copy({r, 0, 0}, {r + half, 1, 0}, shape.count);
  b.next_step();
  for (int r = 0; r < half; ++r) b.copy({r + half, 1, 0}, {r, 1, 0}, shape.count);
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
  double g = det != 0 ? (sw * swnt - swn * swt) / det : 0;
  c.alpha_s = (swt - g * swn) / sw;
  if (c.alpha_s < 0) {  // no negative start-up cost: the best line through the origin
    c.alpha_s = 0;
    g = swnn > 0 ? swnt / swnn : 0;
  }
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

Calibration calibrate(const std::vector<std::int64_t>& sizes, int ranks,
                      const RunOptions& options) {
  if (ranks < 2 || ranks % 2)
    throw ValidationError(fmt::format("--ranks must be even and at least 2, not {}", ranks));
  Calibration c;
  c.backend = name_of(options.backend);
  c.device = backend_device(options.backend);
  c.ranks = ranks;
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  c.date = date;
  for (std::int64_t bytes : sizes) {
    const Measurement m = run_for_real(ping_pong(bytes, ranks), options);
    std::vector<double> one_way;
    for (double t : m.iteration_s) one_way.push_back(t / 2);
    c.samples.push_back({std::max<std::int64_t>(4, bytes / 4 * 4), m.median_s / 2,
                         percentile(one_way, 0.1), percentile(one_way, 0.9)});
  }
  fit_alpha_beta(c);
  if (c.bandwidth_Bps <= 0)
    throw ValidationError(fmt::format(
        "the measured times do not grow with the message size ({} to {} bytes), so no bandwidth "
        "can be fitted: measure a wider --sizes range, or more --iters on a quieter machine",
        sizes.front(), sizes.back()));
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
          {"ranks", c.ranks},     {"date", c.date}};
}

}  // namespace collsim
