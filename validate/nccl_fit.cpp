#include "validate/nccl_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "core/units.h"
#include "scenario/cost_json.h"
#include "scenario/scenario.h"
#include "validate/nccl_compare.h"

namespace collsim {
namespace {

constexpr double kHuber = 0.05;       // relative residual beyond which a size weighs less
constexpr double kCurveShare = 0.05;  // below this share of the time, bandwidth is noise
constexpr double kPoorMape = 10;      // percent: warn above
constexpr double kPoorPoint = 20;     // percent: name the size above

// One log's collective on the fit's topology, ideal network, no α: the terms carry it all.
struct LogScenario {
  Scenario s;
  CollectiveSpec base;
};

LogScenario scenario_for(const NcclFitRequest& req, const NcclTestsLog& log) {
  nlohmann::json doc = {{"topology", req.topology},
                        {"network", {{"model", "ideal"}}},
                        {"collectives",
                         {{{"name", "fit"},
                           {"op", name_of(log.op)},
                           {"algorithm", req.algorithm},
                           {"bytes", 4096}}}}};
  try {
    const Scenario probe = parse_scenario(doc, req.base_dir, "nccl-fit");
    if (probe.topology.num_ranks() < log.ranks)
      throw InputError("--topology",
                       fmt::format("{} has {} GPUs; {} ran on {}", probe.topology.name,
                                   probe.topology.num_ranks(), log.file, log.ranks));
    std::vector<int> ranks(static_cast<std::size_t>(log.ranks));
    for (int r = 0; r < log.ranks; ++r) ranks[static_cast<std::size_t>(r)] = r;
    doc["collectives"][0]["ranks"] = ranks;
    LogScenario out{parse_scenario(doc, req.base_dir, "nccl-fit"), {}};
    out.base = out.s.collectives.front();
    return out;
  } catch (const InputError& e) {
    throw InputError("--topology/--algorithm",
                     fmt::format("simulating {} ({} on {} GPUs): {}", log.file, name_of(log.op),
                                 log.ranks, e.what()));
  }
}

SizedRun run_with(const LogScenario& ls, const NcclTestsRow& row, const CostModel& m) {
  Scenario s = ls.s;
  if (!m.trivial()) s.network.cost = std::make_shared<const CostModel>(m);
  try {
    return simulate_alone(s, sized_like(ls.base, row));
  } catch (const InputError& e) {
    throw InputError("--algorithm",
                     fmt::format("calibrate --nccl-tests fits under the ideal network model, "
                                 "where the log's collective at {} bytes cannot be simulated "
                                 "(fit a log NCCL ran with NCCL_ALGO=RING with --algorithm "
                                 "ring): {}",
                                 row.bytes, e.what()));
  }
}

CostModel model_of(const FitValues& v, const std::vector<LinkKind>& kinds) {
  CostModel m;
  m.launch = from_seconds(v.launch_s);
  for (LinkKind k : kinds) {
    m.link(k).latency = from_seconds(v.latency_s);
    m.link(k).efficiency = v.efficiency;
    if (!v.curve.empty()) m.link(k).bandwidth = SizeCurve(v.curve);
  }
  return m;
}

// The kinds whose latency shows in the time: the ones the transfers cross.
std::vector<LinkKind> crossed_kinds(const std::vector<LogScenario>& scenarios,
                                    const std::vector<NcclTestsLog>& logs) {
  std::set<LinkKind> present, crossed;
  for (const auto& ls : scenarios)
    for (const Link& l : ls.s.topology.links()) present.insert(l.kind);
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const NcclTestsRow& row = logs[i].rows.back();  // every rank sends something
    const double t0 = run_with(scenarios[i], row, CostModel{}).time_s;
    for (LinkKind k : present) {
      CostModel m;
      m.link(k).latency = from_seconds(1e-6);
      if (run_with(scenarios[i], row, m).time_s - t0 > 0.5e-6) crossed.insert(k);
    }
  }
  return {crossed.begin(), crossed.end()};
}

// What one logged size costs as a function of the terms:
// time = fixed + launch + latencies x latency + bandwidth / (efficiency x curve share).
struct Point {
  std::size_t log = 0;
  const NcclTestsRow* row = nullptr;
  double measured = 0;
  std::int64_t transfer = 0;
  double fixed = 0, bandwidth = 0, latencies = 0;
};

std::vector<Point> measure_points(const std::vector<LogScenario>& scenarios,
                                  const std::vector<NcclTestsLog>& logs,
                                  const std::vector<LinkKind>& kinds) {
  FitValues half, late;
  half.efficiency = 0.5;  // doubles the bandwidth part
  late.latency_s = 1e-6;  // one microsecond per latency paid
  const CostModel m_half = model_of(half, kinds), m_late = model_of(late, kinds);
  std::vector<Point> points;
  for (std::size_t i = 0; i < logs.size(); ++i)
    for (const NcclTestsRow& row : logs[i].rows) {
      if (sized_like(scenarios[i].base, row).bytes == 0 || row.out_of_place.time_us <= 0) continue;
      const SizedRun base = run_with(scenarios[i], row, CostModel{});
      Point p{i, &row, row.out_of_place.time_us * 1e-6, base.transfer_bytes};
      p.bandwidth = run_with(scenarios[i], row, m_half).time_s - base.time_s;
      p.latencies = (run_with(scenarios[i], row, m_late).time_s - base.time_s) / 1e-6;
      p.fixed = base.time_s - p.bandwidth;
      points.push_back(p);
    }
  return points;
}

// Solves the normal equations a x = b (n <= 3) by elimination; false when singular.
bool solve_small(std::array<std::array<double, 3>, 3> a, std::array<double, 3> b, int n,
                 std::array<double, 3>& x) {
  for (int c = 0; c < n; ++c) {
    int piv = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    std::swap(a[c], a[piv]);
    std::swap(b[c], b[piv]);
    if (!(std::fabs(a[c][c]) > 1e-12)) return false;
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  for (int c = 0; c < n; ++c) x[c] = b[c] / a[c][c];
  return true;
}

// min sum w_i (sum_j coef_j col_j(i) - rhs_i)^2 with every coef >= 0: the best
// feasible solution over the subsets of free columns (3 at most: 8 subsets). Columns
// are scaled to unit norm first so the singularity test means the same for all.
std::array<double, 3> nonnegative_least_squares(const std::array<std::vector<double>, 3>& cols,
                                                const std::array<bool, 3>& allowed,
                                                const std::vector<double>& rhs,
                                                const std::vector<double>& w) {
  const std::size_t n = rhs.size();
  std::array<double, 3> scale{1, 1, 1};
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += w[i] * cols[j][i] * cols[j][i];
    scale[j] = s > 0 ? 1 / std::sqrt(s) : 0;
  }
  auto objective = [&](const std::array<double, 3>& coef) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double r = -rhs[i];
      for (int j = 0; j < 3; ++j) r += coef[j] * cols[j][i];
      sum += w[i] * r * r;
    }
    return sum;
  };
  std::array<double, 3> best{0, 0, 0};
  double best_obj = objective(best);
  for (int mask = 1; mask < 8; ++mask) {  // launch before latency before efficiency on ties
    std::array<int, 3> idx{};
    int m = 0;
    bool ok = true;
    for (int j = 0; j < 3; ++j)
      if (mask >> j & 1) {
        ok = ok && allowed[j] && scale[j] > 0;
        idx[m++] = j;
      }
    if (!ok) continue;
    std::array<std::array<double, 3>, 3> a{};
    std::array<double, 3> b{}, x{};
    for (std::size_t i = 0; i < n; ++i)
      for (int p = 0; p < m; ++p) {
        const double cp = cols[idx[p]][i] * scale[idx[p]];
        b[p] += w[i] * cp * rhs[i];
        for (int q = 0; q < m; ++q) a[p][q] += w[i] * cp * cols[idx[q]][i] * scale[idx[q]];
      }
    if (!solve_small(a, b, m, x)) continue;
    std::array<double, 3> coef{0, 0, 0};
    for (int p = 0; p < m; ++p) coef[idx[p]] = x[p] * scale[idx[p]];
    if (std::any_of(coef.begin(), coef.end(), [](double c) { return c < 0; })) continue;
    const double obj = objective(coef);
    if (obj < best_obj * (1 - 1e-9)) {
      best_obj = obj;
      best = coef;
    }
  }
  return best;
}

// Launch, latency and 1/efficiency - 1 (all >= 0) by Huber-weighted least squares of
// relative errors.
void fit_affine(const std::vector<Point>& pts, const FitTerms& terms, FitValues& v) {
  const std::size_t n = pts.size();
  std::array<std::vector<double>, 3> cols;
  std::vector<double> rhs(n), huber(n, 1.0), w(n);
  for (const Point& p : pts) {
    cols[0].push_back(1.0);
    cols[1].push_back(p.latencies);
    cols[2].push_back(p.bandwidth);
  }
  for (std::size_t i = 0; i < n; ++i) rhs[i] = pts[i].measured - pts[i].fixed - pts[i].bandwidth;
  const std::array<bool, 3> allowed{terms.launch, terms.latency, terms.efficiency};
  std::array<double, 3> coef{};
  for (int iter = 0; iter < 50; ++iter) {
    for (std::size_t i = 0; i < n; ++i) w[i] = huber[i] / (pts[i].measured * pts[i].measured);
    coef = nonnegative_least_squares(cols, allowed, rhs, w);
    double change = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double pred = coef[0] + coef[1] * cols[1][i] + coef[2] * cols[2][i];
      const double r = std::fabs(pred - rhs[i]) / pts[i].measured;
      const double h = r <= kHuber ? 1.0 : kHuber / r;
      change = std::max(change, std::fabs(h - huber[i]));
      huber[i] = h;
    }
    if (change < 1e-9) break;
  }
  v.launch_s = coef[0];
  v.latency_s = coef[1];
  v.efficiency = 1 / (1 + coef[2]);
}

// The bandwidth, per transfer size, that closes what the affine terms leave: at each
// size where bandwidth is a fair share of the time. Sizes sharing a transfer size
// (several logs) average.
void fit_curve(const std::vector<Point>& pts, double nominal, FitValues& v) {
  const double x = 1 / v.efficiency;
  std::map<std::int64_t, std::pair<double, int>> shares;  // transfer -> (sum of g, count)
  for (const Point& p : pts) {
    const double bw_part = p.bandwidth * x;
    if (p.transfer <= 0 || bw_part < kCurveShare * p.measured) continue;
    const double gap = p.measured - p.fixed - v.launch_s - p.latencies * v.latency_s;
    // g = nominal share of the curve at this size; at most x (no faster than nominal).
    double g = gap > 0 ? bw_part / gap : x;
    if (g > x || g < 0.01) ++v.clamped;
    g = std::clamp(g, 0.01, x);
    auto& [sum, count] = shares[p.transfer];
    sum += g;
    ++count;
  }
  for (const auto& [bytes, sc] : shares)
    v.curve.emplace_back(bytes, nominal * sc.first / sc.second);
}

FitValues fit_values(const std::vector<Point>& pts, const FitTerms& terms, double nominal) {
  FitValues v;
  fit_affine(pts, terms, v);
  if (terms.curve) fit_curve(pts, nominal, v);
  return v;
}

// Simulated with the fitted model, against every logged size.
std::vector<FitResidual> residuals_of(const FitValues& v, const std::vector<LinkKind>& kinds,
                                      const std::vector<LogScenario>& scenarios,
                                      const std::vector<Point>& pts, double* mape) {
  const CostModel m = model_of(v, kinds);
  std::vector<FitResidual> out;
  double sum = 0;
  for (const Point& p : pts) {
    const double t = run_with(scenarios[p.log], *p.row, m).time_s;
    out.push_back({p.log, p.row->bytes, p.measured, t, (t - p.measured) / p.measured * 100});
    sum += std::fabs(out.back().error_pct);
  }
  *mape = pts.empty() ? 0 : sum / static_cast<double>(pts.size());
  return out;
}

// Launch and latency cannot be told apart when (nearly) every size pays the same
// number of latencies: one log of one GPU count and one algorithm.
bool latency_separable(const std::vector<Point>& pts) {
  std::vector<double> n;
  for (const Point& p : pts) n.push_back(p.latencies);
  std::nth_element(n.begin(), n.begin() + static_cast<std::ptrdiff_t>(n.size() / 2), n.end());
  const double median = n[n.size() / 2];
  std::size_t same = 0;
  for (const Point& p : pts) same += std::fabs(p.latencies - median) <= 0.01 * median;
  return static_cast<double>(same) < 0.9 * static_cast<double>(pts.size());
}

std::string kind_list(const std::vector<LinkKind>& kinds) {
  std::vector<std::string> names;
  for (LinkKind k : kinds) names.emplace_back(name_of(k));
  return fmt::format("{}", fmt::join(names, ", "));
}

FitTerms both(const FitTerms& a, const FitTerms& b) {
  return {a.launch && b.launch, a.latency && b.latency, a.efficiency && b.efficiency,
          a.curve && b.curve};
}

}  // namespace

FitTerms parse_fit_terms(const std::string& list, const std::string& where) {
  FitTerms t{false, false, false, false};
  std::size_t a = 0;
  while (a <= list.size()) {
    std::size_t b = list.find(',', a);
    if (b == std::string::npos) b = list.size();
    const std::string name = list.substr(a, b - a);
    if (name == "launch")
      t.launch = true;
    else if (name == "latency")
      t.latency = true;
    else if (name == "efficiency")
      t.efficiency = true;
    else if (name == "curve")
      t.curve = true;
    else
      throw InputError(where, fmt::format("expected terms from launch, latency, efficiency, "
                                          "curve (comma separated), got \"{}\"",
                                          name));
    a = b + 1;
  }
  return t;
}

NcclFit fit_nccl_tests(const NcclFitRequest& req) {
  if (req.logs.empty()) throw InputError("--nccl-tests", "at least one log");
  if (req.algorithm == "auto")
    throw InputError("--algorithm",
                     "name the algorithm NCCL ran (NCCL_ALGO), not auto: the fit "
                     "needs the same schedule at every size and every term");
  std::vector<LogScenario> scenarios;
  for (const auto& log : req.logs) scenarios.push_back(scenario_for(req, log));
  NcclFit fit;
  fit.topology_name = scenarios.front().s.topology.name;
  fit.algorithm = req.algorithm;
  fit.kinds = crossed_kinds(scenarios, req.logs);
  if (fit.kinds.empty())
    throw InputError("--topology", "the collectives' transfers cross no link: nothing to fit");
  fit.nominal_Bps = INFINITY;
  for (const Link& l : scenarios.front().s.topology.links())
    if (std::find(fit.kinds.begin(), fit.kinds.end(), l.kind) != fit.kinds.end())
      fit.nominal_Bps = std::min(fit.nominal_Bps, l.bandwidth);
  const std::vector<Point> pts = measure_points(scenarios, req.logs, fit.kinds);
  if (pts.size() < 3)
    throw InputError("--nccl-tests", fmt::format("{} sizes to fit; at least 3", pts.size()));

  fit.notes.push_back(fmt::format("transfers cross {} (nominal {}); each term applies to these",
                                  kind_list(fit.kinds), format_bandwidth(fit.nominal_Bps)));
  fit.used = req.terms;
  if (fit.used.latency && !latency_separable(pts)) {
    fit.used.latency = false;
    fit.notes.push_back(
        "latency_s is not fitted: every size pays the same number of per-transfer latencies, so "
        "launch_s and latency_s are interchangeable on these logs (fit logs of several GPU counts "
        "to split them); launch_s takes the whole floor");
  }
  fit.values = fit_values(pts, fit.used, fit.nominal_Bps);
  fit.model = model_of(fit.values, fit.kinds);
  fit.residuals = residuals_of(fit.values, fit.kinds, scenarios, pts, &fit.mape_pct);

  const std::pair<const char*, FitTerms> rows[] = {
      {"", fit.used},
      {"launch", {false, true, true, true}},  // latency may take the floor over
      {"latency", {true, false, true, true}},
      {"launch, latency", {false, false, true, true}},
      {"efficiency", {true, fit.used.latency, false, true}},
      {"bandwidth_curve", {true, fit.used.latency, true, false}},
      {"launch, bandwidth_curve", {false, true, true, false}},  // the best α-β: α and β refitted
      {"all", {false, false, false, false}}};
  for (const auto& [without, terms] : rows) {
    const FitTerms allowed = both(terms, req.terms);
    const std::string_view w = without;
    // Leaving out what --terms left out, or what changes nothing, says nothing.
    if ((w.find("launch") != w.npos && !req.terms.launch) ||
        (w.find("latency") != w.npos && !req.terms.latency) ||
        (w.find("efficiency") != w.npos && !req.terms.efficiency) ||
        (w.find("curve") != w.npos && !req.terms.curve))
      continue;
    if (!w.empty() && allowed.launch == fit.used.launch && allowed.latency == fit.used.latency &&
        allowed.efficiency == fit.used.efficiency && allowed.curve == fit.used.curve)
      continue;
    AblationRow a{without, fit_values(pts, allowed, fit.nominal_Bps)};
    residuals_of(a.values, fit.kinds, scenarios, pts, &a.mape_pct);
    fit.ablation.push_back(a);
  }

  if (fit.values.efficiency >= 1)
    fit.notes.push_back(
        "efficiency stays at 1: the measured plateau reaches the nominal bandwidth");
  if (fit.values.clamped)
    fit.notes.push_back(fmt::format(
        "at {} size(s) the bandwidth curve hit its bounds (no faster than nominal): the floor "
        "there differs from the fitted one (NCCL changes protocol with size)",
        fit.values.clamped));
  if (fit.mape_pct > kPoorMape)
    fit.warnings.push_back(
        fmt::format("poor fit: MAPE {:.1f}% (above {:.0f}%)", fit.mape_pct, kPoorMape));
  for (const auto& r : fit.residuals)
    if (std::fabs(r.error_pct) > kPoorPoint)
      fit.warnings.push_back(fmt::format(
          "{} at {} B: fitted {:.2f} us, measured {:.2f} us ({:+.1f}%)", req.logs[r.log].file,
          r.bytes, r.fitted_s * 1e6, r.measured_s * 1e6, r.error_pct));
  return fit;
}

nlohmann::json nccl_calibration_json(const NcclFitRequest& req, const NcclFit& fit,
                                     const std::string& date) {
  nlohmann::json out = cost_model_json(fit.model);
  out["alpha_s"] = 0;  // the fitted terms take α's place
  nlohmann::json logs = nlohmann::json::array();
  for (const auto& log : req.logs)
    logs.push_back({{"file", std::filesystem::path(log.file).filename().string()},
                    {"fnv1a64", fmt::format("{:016x}", log.digest)},
                    {"collective", name_of(log.op)},
                    {"collective_from", log.op_source},
                    {"gpus", log.ranks},
                    {"gpus_from", log.ranks_source},
                    {"nccl_version", log.nccl_version},
                    {"nccl_tests_version", log.tests_version},
                    {"sizes", log.rows.size()}});
  out["provenance"] = {{"source", "nccl-tests"},
                       {"logs", logs},
                       {"topology", fit.topology_name},
                       {"algorithm", fit.algorithm},
                       {"network", "ideal"},
                       {"measured_column", "out_of_place"},
                       {"date", date}};
  nlohmann::json residuals = nlohmann::json::array();
  for (const auto& r : fit.residuals)
    residuals.push_back({{"file", std::filesystem::path(req.logs[r.log].file).filename().string()},
                         {"bytes", r.bytes},
                         {"measured_s", r.measured_s},
                         {"fitted_s", r.fitted_s},
                         {"error_pct", r.error_pct}});
  nlohmann::json ablation = nlohmann::json::array();
  for (const auto& a : fit.ablation)
    ablation.push_back(
        {{"without", a.without.empty() ? "nothing" : a.without}, {"mape_pct", a.mape_pct}});
  std::vector<std::string> kinds;
  for (LinkKind k : fit.kinds) kinds.emplace_back(name_of(k));
  std::vector<std::string> terms;
  if (fit.used.launch) terms.emplace_back("launch");
  if (fit.used.latency) terms.emplace_back("latency");
  if (fit.used.efficiency) terms.emplace_back("efficiency");
  if (fit.used.curve) terms.emplace_back("curve");
  out["fit"] = {{"link_kinds", kinds},     {"terms", terms},       {"mape_pct", fit.mape_pct},
                {"residuals", residuals},  {"ablation", ablation}, {"notes", fit.notes},
                {"warnings", fit.warnings}};
  return out;
}

std::string nccl_fit_report(const NcclFitRequest& req, const NcclFit& fit) {
  std::string out = fmt::format("# collsim calibrate --nccl-tests: {} log(s); {} on {} (ideal)\n",
                                req.logs.size(), fit.algorithm, fit.topology_name);
  for (const auto& log : req.logs)
    out += fmt::format("#   {}: {} on {} GPUs (from {}), NCCL {}, {} sizes\n", log.file,
                       name_of(log.op), log.ranks, log.ranks_source,
                       log.nccl_version.empty() ? "version not printed" : log.nccl_version,
                       log.rows.size());
  const FitValues& v = fit.values;
  out += "# fitted terms\n";
  out +=
      fmt::format("#   launch_s       {:>10.3f} us  once per collective (the small-size floor)\n",
                  v.launch_s * 1e6);
  out += fmt::format("#   latency_s      {:>10.3f} us  per transfer on {}{}\n", v.latency_s * 1e6,
                     kind_list(fit.kinds), fit.used.latency ? "" : " (not fitted: see note)");
  out += fmt::format("#   efficiency     {:>10.4f}     plateau {} of {} nominal\n", v.efficiency,
                     format_bandwidth(fit.nominal_Bps * v.efficiency),
                     format_bandwidth(fit.nominal_Bps));
  out += fmt::format("#   bandwidth_curve {} point(s), by transfer size (B/s before efficiency)\n",
                     v.curve.size());
  for (const auto& [bytes, bps] : v.curve)
    out += fmt::format("#     {:>12} B  {:>8.2f} GB/s  ({:.3f} of nominal)\n", bytes, bps / 1e9,
                       bps / fit.nominal_Bps);
  out += fmt::format("# {:<28} {:>12} {:>14} {:>14} {:>9}\n", "log", "bytes", "measured us",
                     "fitted us", "error");
  for (const auto& r : fit.residuals)
    out += fmt::format("  {:<28} {:>12} {:>14.2f} {:>14.2f} {:>8.1f}%\n",
                       std::filesystem::path(req.logs[r.log].file).filename().string(), r.bytes,
                       r.measured_s * 1e6, r.fitted_s * 1e6, r.error_pct);
  out += fmt::format("# MAPE {:.2f}% over {} sizes (out-of-place times, simulated with the fit)\n",
                     fit.mape_pct, fit.residuals.size());
  out += "# ablation: MAPE with terms left out (the rest refitted)\n";
  out += fmt::format("#   {:<24} {:>8} {:>11} {:>11} {:>10} {:>6}\n", "without", "MAPE",
                     "launch us", "latency us", "efficiency", "curve");
  for (const auto& a : fit.ablation)
    out += fmt::format("#   {:<24} {:>7.2f}% {:>11.3f} {:>11.3f} {:>10.4f} {:>6}\n",
                       a.without.empty()    ? "(nothing)"
                       : a.without == "all" ? "all (nominal links)"
                                            : a.without,
                       a.mape_pct, a.values.launch_s * 1e6, a.values.latency_s * 1e6,
                       a.values.efficiency, a.values.curve.size());
  for (const auto& n : fit.notes) out += "# note: " + n + "\n";
  for (const auto& w : fit.warnings) out += "# warning: " + w + "\n";
  return out;
}

}  // namespace collsim
