#include "validate/measure/calibrate.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scenario/cost_json.h"
#include "schedule/builder.h"
#include "validate/fit/sweep_fit.h"
#include "validate/measure/measure.h"
#include "validate/measure/validation_error.h"

namespace collsim {
namespace {

// `collective` names the in-place layout whose inputs the runner fills and whose
// outputs it checks against the replayer (buffer 0 of `count` elements per rank).
CollectiveShape pair_shape(std::int64_t bytes, int ranks, CollectiveOp collective, DType dtype,
                           ReduceOp op, int chunks) {
  CollectiveShape shape;
  shape.op = collective;
  shape.ranks = ranks;
  shape.dtype = dtype;
  shape.reduce_op = op;
  shape.count = chunks * std::max<std::int64_t>(1, bytes / element_size(dtype));
  return shape;
}

// The sweeps use the buffers as the collectives do (in place, layout.h): one data
// buffer per rank, a ring step moving one chunk of it to the same chunk of the peer's.
// What a copy costs on shm depends on how much memory each rank touches (4 MiB one
// way: 105 us from a 4 MiB buffer, 155 us from send_recv's two), so a sweep with
// another footprint than the collectives' mispredicts them.

// Rank r copies its n bytes into rank r + K/2's buffer: a broadcast's step, with its
// footprint (n per rank). With K > 2 the K/2 pairs run at once and share whatever they
// share (memory, links).
Schedule one_way_copy(std::int64_t bytes, int ranks) {
  const auto shape =
      pair_shape(bytes, ranks, CollectiveOp::Broadcast, DType::F32, ReduceOp::Sum, 1);
  const std::int64_t n = shape.count;
  auto b = ScheduleBuilder::uniform(shape, "one_way", {n});
  for (int r = 0; r < ranks / 2; ++r) b.copy({r, 0, 0}, {r + ranks / 2, 0, 0}, n);
  return b.finish();
}

// Both ranks of every pair copy their own chunk into the peer's at the same time, as
// an all-gather step of two chunks of n does; then again, as the next step of a ring
// does, each copy waiting on both of the first (the builder's step dependencies).
Schedule both_ways(std::int64_t bytes, int ranks) {
  const auto shape =
      pair_shape(bytes, ranks, CollectiveOp::AllGather, DType::F32, ReduceOp::Sum, 2);
  const std::int64_t n = shape.count / 2;
  auto b = ScheduleBuilder::uniform(shape, "both_ways", {2 * n});
  const int half = ranks / 2;
  for (int step = 0; step < 2; ++step) {
    if (step) b.next_step();
    for (int r = 0; r < half; ++r) {
      b.copy({r, 0, 0}, {r + half, 0, 0}, n);
      b.copy({r + half, 0, n}, {r, 0, n}, n);
    }
  }
  return b.finish();
}

// Rank r reduces the peer's chunk into its own (run by r, reading the peer's memory);
// `both`: the peer does the same with the other chunk at once, as a ring's
// reduce-scatter step of two chunks of n has them.
Schedule reduce_from_peer(std::int64_t bytes, int ranks, DType dtype, ReduceOp op, bool both) {
  const auto shape = pair_shape(bytes, ranks, CollectiveOp::AllReduce, dtype, op, 2);
  const std::int64_t n = shape.count / 2;
  auto b = ScheduleBuilder::uniform(shape, "reduce_from_peer", {2 * n});
  const int half = ranks / 2;
  for (int r = 0; r < half; ++r) {
    b.reduce({r + half, 0, 0}, {r, 0, 0}, n);
    if (both) b.reduce({r, 0, n}, {r + half, 0, n}, n);
  }
  return b.finish();
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[quantile_index(v.size(), q)];
}

// What a sweep point stands for: the mean of the samples from quantile q - 0.15 to
// q + 0.15. One order statistic moves in the clock's steps (10 ns here, a tenth of a
// small copy), so three calibrations in a row could differ by a step at every small size;
// the band's mean does not, and still leaves out the tails that interference makes.
double band_mean(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t lo = quantile_index(v.size(), q - 0.15),
                    hi = quantile_index(v.size(), q + 0.15);
  double sum = 0;
  for (std::size_t i = lo; i <= hi; ++i) sum += v[i];
  return sum / static_cast<double>(hi - lo + 1);
}

// A sweep's sample: durations about the run's quantile (the median by default), p10, p90.
CalibrationSample sample_of(const Schedule& s, std::vector<double> d, double q) {
  return {s.bytes(s.ops[0]), band_mean(d, q), percentile(d, 0.1), percentile(d, 0.9)};
}

// The durations of every op in every measured iteration, pooled.
CalibrationSample op_durations(const Schedule& s, const Measurement& m, double q) {
  std::vector<double> d;
  for (const auto& ops : m.iteration_ops)
    for (const auto& op : ops) d.push_back(to_seconds(op.end - op.start));
  return sample_of(s, std::move(d), q);
}

// Ops running at once, timed as the step they make: the longest of the first step's
// ops per iteration. The simulator gives concurrent equal transfers one rate, and a
// collective's step ends with its slowest op; the cores need not be alike (one of this
// VM's two copied 8 MiB at 0.6x the other's rate), and a pooled median would time the
// step by the faster.
CalibrationSample step_durations(const Schedule& s, const Measurement& m, double q) {
  std::vector<double> d;
  for (const auto& ops : m.iteration_ops) {
    double longest = 0;
    for (OpId i = 0; i < ops.size() && s.ops[i].step == 0; ++i)
      longest = std::max(longest, to_seconds(ops[i].end - ops[i].start));
    d.push_back(longest);
  }
  return sample_of(s, std::move(d), q);
}

// From the release of every rank to the start of the last of the ops that wait on
// nothing, per iteration: what the simulator's launch stands for (it starts every
// rank's first ops after it). The last, because a step that needs every rank waits
// for the latest to start (one of two ranks starts 30-70 ns after the other here).
std::vector<double> release_latencies(const Schedule& s, const Measurement& m) {
  std::vector<double> out;
  for (const auto& ops : m.iteration_ops) {
    double latest = 0;
    for (OpId i = 0; i < ops.size(); ++i)
      if (s.dep_begin[i] == s.dep_begin[i + 1]) latest = std::max(latest, to_seconds(ops[i].start));
    out.push_back(latest);
  }
  return out;
}

// Between the two steps of both_ways: from the end of the first step's last op to the
// start of the second step's last op to start. What a ring step costs beyond its
// transfers: the rank that finished first wakes when the other's flag changes, the
// other reads that flag from its peer's cache.
std::vector<double> step_gaps(const Schedule& s, const Measurement& m) {
  std::vector<double> gaps;
  for (const auto& ops : m.iteration_ops) {
    Time first_end = 0, second_start = 0;
    for (OpId i = 0; i < ops.size(); ++i) {
      if (s.ops[i].step == 0)
        first_end = std::max(first_end, ops[i].end);
      else
        second_start = std::max(second_start, ops[i].start);
    }
    gaps.push_back(std::max(0.0, to_seconds(second_start - first_end)));
  }
  return gaps;
}

double load_average() {
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  return load;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  return date;
}

// "float32.sum" -> its dtype and op; throws naming the option on anything else.
std::pair<DType, ReduceOp> parse_reduction(const std::string& key) {
  const auto dot = key.find('.');
  const auto t = dot == std::string::npos ? std::nullopt : dtype_from_name(key.substr(0, dot));
  const auto op =
      dot == std::string::npos ? std::nullopt : reduce_op_from_name(key.substr(dot + 1));
  if (!t || !op)
    throw ValidationError(fmt::format(
        "--reduce: \"{}\" is not a reduction like float32.sum (a dtype, a dot, an op)", key));
  return {*t, *op};
}

using Reduction = std::pair<DType, ReduceOp>;

// One schedule of the calibration's sweeps: what it measures, at which size and reduction.
enum class SweepKind { OneWay, BothWays, ReduceAlone, ReduceBoth };
struct SweepItem {
  SweepKind kind;
  std::size_t size, reduction;  // indices into the request's sizes and reductions
  Schedule schedule;
};

std::vector<SweepItem> sweep_items(const CalibrateRequest& request,
                                   const std::vector<Reduction>& reductions) {
  const int ranks = request.ranks;
  std::vector<SweepItem> items;
  for (std::size_t z = 0; z < request.sizes.size(); ++z) {
    const std::int64_t bytes = request.sizes[z];
    items.push_back({SweepKind::OneWay, z, 0, one_way_copy(bytes, ranks)});
    items.push_back({SweepKind::BothWays, z, 0, both_ways(bytes, ranks)});
    for (std::size_t i = 0; i < reductions.size(); ++i) {
      const auto [dtype, op] = reductions[i];
      items.push_back(
          {SweepKind::ReduceAlone, z, i, reduce_from_peer(bytes, ranks, dtype, op, false)});
      items.push_back(
          {SweepKind::ReduceBoth, z, i, reduce_from_peer(bytes, ranks, dtype, op, true)});
    }
  }
  return items;
}

// Every item measured, in rounds together (run_in_rounds); a transport that moves the
// wrong bytes has no rate worth fitting.
std::vector<Measurement> measure_items(const CalibrateRequest& request,
                                       const std::vector<SweepItem>& items,
                                       const RunOptions& options) {
  std::vector<const Schedule*> schedules;
  for (const auto& item : items) schedules.push_back(&item.schedule);
  std::vector<Measurement> measured = run_in_rounds(schedules, options);
  for (std::size_t i = 0; i < items.size(); ++i)
    if (measured[i].wrong)
      throw ValidationError(fmt::format("{} of {} bytes: {} elements differ from the replayer",
                                        items[i].schedule.algorithm, request.sizes[items[i].size],
                                        measured[i].wrong));
  return measured;
}

// The measurements sorted into their sweeps, with the wake-up gaps and release latencies
// read where copies are short.
struct SortedSamples {
  Sweep one_way{"one_way"}, concurrent{"concurrent"};
  std::vector<Sweep> alone, both;  // per reduction
  std::vector<double> gaps, releases;
};

SortedSamples sort_samples(const CalibrateRequest& request, const std::vector<SweepItem>& items,
                           const std::vector<Measurement>& measured, double q) {
  SortedSamples out;
  for (const auto& key : request.reductions) {
    out.alone.emplace_back(key);
    out.both.emplace_back("concurrent " + key);
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const SweepItem& item = items[i];
    const Measurement& m = measured[i];
    const bool short_copies = request.sizes[item.size] <= 4096 || item.size == 0;
    switch (item.kind) {
      case SweepKind::OneWay:
        out.one_way.samples.push_back(op_durations(item.schedule, m, q));
        break;
      case SweepKind::BothWays: {
        out.concurrent.samples.push_back(step_durations(item.schedule, m, q));
        if (!short_copies) break;
        const auto g = step_gaps(item.schedule, m);
        out.gaps.insert(out.gaps.end(), g.begin(), g.end());
        const auto l = release_latencies(item.schedule, m);
        out.releases.insert(out.releases.end(), l.begin(), l.end());
        break;
      }
      case SweepKind::ReduceAlone:
        out.alone[item.reduction].samples.push_back(op_durations(item.schedule, m, q));
        break;
      case SweepKind::ReduceBoth:
        out.both[item.reduction].samples.push_back(step_durations(item.schedule, m, q));
        break;
    }
  }
  return out;
}

// Fits every sweep's curve and lists them in the file's order: one_way, concurrent,
// host_memory, then per reduction its alone, concurrent and host-memory sweeps.
std::vector<Sweep> fitted_sweeps(SortedSamples& sorted, const CalibrateRequest& request) {
  fit_curve(sorted.one_way);
  fit_curve(sorted.concurrent);
  std::vector<Sweep> sweeps = {
      sorted.one_way, sorted.concurrent,
      memory_sweep("host_memory", sorted.concurrent, sorted.one_way, request.ranks)};
  for (std::size_t i = 0; i < sorted.alone.size(); ++i) {
    Sweep& alone = sorted.alone[i];
    Sweep& both = sorted.both[i];
    fit_curve(alone);
    fit_curve(both);
    Sweep memory = memory_sweep("host_memory " + request.reductions[i], both, alone, request.ranks);
    sweeps.insert(sweeps.end(), {std::move(alone), std::move(both), std::move(memory)});
  }
  return sweeps;
}

// The cost model read from the fitted sweeps (in fitted_sweeps' order) and the gaps.
void set_cost_model(Calibration& c, const SortedSamples& sorted, double q) {
  c.model.launch = from_seconds(band_mean(sorted.releases, q));
  c.model.op_overhead = from_seconds(band_mean(sorted.gaps, q));
  c.overhead_p10_s = percentile(sorted.gaps, 0.1);
  c.overhead_p90_s = percentile(sorted.gaps, 0.9);
  for (auto& k : c.model.links) k.bandwidth = c.sweeps[0].curve;
  c.model.local_copy = c.sweeps[0].curve;  // a copy inside a rank is the same memcpy
  c.model.host_memory = c.sweeps[2].curve;
  for (std::size_t i = 3; i + 2 < c.sweeps.size(); i += 3) {
    c.model.reduce.push_back({c.sweeps[i].name, c.sweeps[i].curve});
    c.model.reduce_memory.push_back({c.sweeps[i].name, c.sweeps[i + 2].curve});
  }
  // The classic line, for comparison: one message = the wake-up plus the copy.
  for (const auto& s : c.sweeps[0].samples)
    c.samples.push_back({s.bytes, s.time_s + to_seconds(c.model.op_overhead), s.p10_s, s.p90_s});
  const AlphaBeta line = fit_alpha_beta(c.samples);
  c.alpha_s = line.alpha_s;
  c.bandwidth_Bps = line.bandwidth_Bps;
  c.r2 = line.r2;
}

}  // namespace

Calibration calibrate(const CalibrateRequest& request, const RunOptions& options) {
  if (request.ranks < 2 || request.ranks % 2)
    throw ValidationError(
        fmt::format("--ranks must be even and at least 2, not {}", request.ranks));
  if (request.sizes.size() < 2)
    throw ValidationError("--sizes: calibrate needs at least two sizes to fit curves");
  Calibration c;
  c.backend = name_of(options.backend);
  c.device = backend_device(options.backend);
  c.ranks = request.ranks;
  c.date = today();
  c.iterations = options.iterations;
  c.warmup = options.warmup;
  c.rounds = effective_rounds(options);
  c.quantile = options.quantile;
  c.load_before = load_average();
  std::vector<Reduction> reductions;
  for (const auto& key : request.reductions) reductions.push_back(parse_reduction(key));

  const std::vector<SweepItem> items = sweep_items(request, reductions);
  const std::vector<Measurement> measured = measure_items(request, items, options);
  c.pinning = measured.front().pinning;
  SortedSamples sorted = sort_samples(request, items, measured, options.quantile);
  c.sweeps = fitted_sweeps(sorted, request);
  c.load_after = load_average();
  set_cost_model(c, sorted, options.quantile);
  return c;
}

namespace {

nlohmann::json samples_json(const std::vector<CalibrationSample>& samples) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : samples)
    out.push_back({{"bytes", s.bytes},
                   {"time_s", s.time_s},
                   {"p10_s", s.p10_s},
                   {"p90_s", s.p90_s},
                   {"fit_s", s.fit_s},
                   {"residual_pct", (s.time_s - s.fit_s) / s.time_s * 100}});
  return out;
}

}  // namespace

nlohmann::json calibration_json(const Calibration& c) {
  // Link curves go once, as the top-level curve every link kind reads.
  CostModel model = c.model;
  for (auto& k : model.links) k.bandwidth = SizeCurve();
  nlohmann::json out = cost_model_json(model);
  const SizeCurve& curve = c.model.links[0].bandwidth;
  double top = c.bandwidth_Bps;
  if (!curve.empty()) {
    out["bandwidth_curve"] = size_curve_json(curve);
    top = *std::max_element(curve.values().begin(), curve.values().end());
  }
  // α is in the overhead and the curve now; the links' nominal rate is the curve's top.
  out["alpha_s"] = 0.0;
  out["bandwidth_Bps"] = top;
  nlohmann::json sweeps = nlohmann::json::object();
  for (const auto& s : c.sweeps)
    sweeps[s.name] = {{"samples", samples_json(s.samples)},
                      {"rms_residual_pct", s.rms_residual_pct},
                      {"max_residual_pct", s.max_residual_pct},
                      {"max_spread_pct", s.max_spread_pct},
                      {"poor_fit", s.poor}};
  out["provenance"] = {{"backend", c.backend},
                       {"device", c.device},
                       {"date", c.date},
                       {"ranks", c.ranks},
                       {"pinned", c.pinning.pinned},
                       {"pinning", c.pinning.note},
                       {"ranks_share_units", c.pinning.shared},
                       {"iterations", c.iterations},
                       {"warmup", c.warmup},
                       {"rounds", c.rounds},
                       {"quantile", c.quantile},
                       {"load_average", {c.load_before, c.load_after}},
                       {"samples", c.sweeps.empty() ? 0 : c.sweeps[0].samples.size()}};
  out["overhead"] = {{"time_s", to_seconds(c.model.op_overhead)},
                     {"p10_s", c.overhead_p10_s},
                     {"p90_s", c.overhead_p90_s}};
  out["alpha_beta"] = {{"alpha_s", c.alpha_s}, {"bandwidth_Bps", c.bandwidth_Bps}, {"r2", c.r2}};
  out["sweeps"] = sweeps;
  // Where earlier readers looked: the provenance at the top level too.
  for (const char* k : {"backend", "device", "date", "ranks"}) out[k] = out["provenance"][k];
  return out;
}

std::string calibration_report(const Calibration& c) {
  std::string out = fmt::format(
      "# {} on {}; {}; {} of {} iterations in {} round{}, each after {} warm-up; load "
      "average {:.2f} -> {:.2f}\n",
      c.backend, c.device, c.pinning.note, quantile_name(c.quantile), c.iterations, c.rounds,
      c.rounds == 1 ? "" : "s", c.warmup, c.load_before, c.load_after);
  out += "# rates in GB/s (1 GB = 1e9 bytes); residual = (measured - fitted) / measured time\n";
  for (const auto& s : c.sweeps) {
    out += fmt::format("# {}\n# {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}\n", s.name, "bytes",
                       quantile_name(c.quantile) + " us", "p10 us", "p90 us", "GB/s", "fit GB/s",
                       "residual");
    for (const auto& p : s.samples)
      out += fmt::format("  {:>10} {:>10.3f} {:>10.3f} {:>10.3f} {:>9.2f} {:>9.2f} {:>8.1f}%\n",
                         p.bytes, p.time_s * 1e6, p.p10_s * 1e6, p.p90_s * 1e6,
                         static_cast<double>(p.bytes) / p.time_s / 1e9,
                         static_cast<double>(p.bytes) / p.fit_s / 1e9,
                         (p.time_s - p.fit_s) / p.time_s * 100);
    out += fmt::format(
        "# {}: rms residual {:.1f}%, largest {:.1f}% at {} bytes; widest p10-p90 spread {:.0f}%\n",
        s.name, s.rms_residual_pct, s.max_residual_pct, s.worst_bytes, s.max_spread_pct);
  }
  out += fmt::format(
      "# op overhead (wake-up after a dependency): {:.3f} us (p10 {:.3f}, p90 {:.3f})\n",
      to_seconds(c.model.op_overhead) * 1e6, c.overhead_p10_s * 1e6, c.overhead_p90_s * 1e6);
  out += fmt::format("# launch (from the release of all ranks to their first op): {:.3f} us\n",
                     to_seconds(c.model.launch) * 1e6);
  out += fmt::format(
      "# alpha-beta line for comparison: alpha {:.3f} us, beta {:.2f} GB/s, R^2 {:.4f}\n",
      c.alpha_s * 1e6, c.bandwidth_Bps / 1e9, c.r2);
  return out;
}

}  // namespace collsim
