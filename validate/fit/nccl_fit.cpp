#include "validate/fit/nccl_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/json_view.h"
#include "core/units.h"
#include "nccl/nccl_model.h"
#include "nccl/protocol.h"
#include "report/output_dir.h"
#include "scenario/cost_json.h"
#include "scenario/scenario.h"
#include "validate/compare/nccl_compare.h"

namespace collsim {
namespace {

constexpr double kHuber = 0.05;       // relative residual beyond which a size weighs less
constexpr double kCurveShare = 0.05;  // below this share of the time, bandwidth is noise
constexpr double kPoorMape = 10;      // percent: warn above
constexpr double kPoorPoint = 20;     // percent: name the size above
constexpr double kSameError = 0.05;   // percentage points: held-out errors this close tie

// One log's collective on the fit's topology and network model, launched as the log was.
struct LogScenario {
  Scenario s;
  CollectiveSpec base;
};

// What NCCL was allowed to pick: --nccl-algo, else what the log says it was forced to.
std::string forced_algo(const NcclFitRequest& req, const NcclTestsLog& log) {
  if (!req.nccl_algo.empty() || req.algorithm != "nccl") return req.nccl_algo;
  return log.nccl_algo;
}

// What NCCL's protocol was held to: --nccl-proto, else what the log says ("": all).
std::string forced_proto(const NcclFitRequest& req, const NcclTestsLog& log) {
  if (!req.nccl_proto.empty() || req.algorithm != "nccl") return req.nccl_proto;
  return log.nccl_proto;
}

nlohmann::json collective_for(const NcclFitRequest& req, const NcclTestsLog& log) {
  nlohmann::json c = {
      {"name", "fit"}, {"op", name_of(log.op)}, {"algorithm", req.algorithm}, {"bytes", 4096}};
  if (const std::string algo = forced_algo(req, log); !algo.empty()) c["nccl_algo"] = algo;
  if (const std::string proto = forced_proto(req, log); !proto.empty()) c["nccl_proto"] = proto;
  return c;
}

LogScenario scenario_for(const NcclFitRequest& req, const NcclTestsLog& log) {
  nlohmann::json doc = {{"topology", req.topology}, {"collectives", {collective_for(req, log)}}};
  if (!req.network.empty()) doc["network"] = {{"model", req.network}};
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
    set_launch(out.s, launch_of(log));
    out.base = out.s.collectives.front();
    return out;
  } catch (const InputError& e) {
    throw InputError("--topology/--algorithm",
                     fmt::format("simulating {} ({} on {} GPUs): {}", log.file, name_of(log.op),
                                 log.ranks, e.what()));
  }
}

// The log's size under `m` (nullptr: the scenario's own costs, the defaults); the
// launch mode's issue time is the log's either way.
SizedRun run_with(const LogScenario& ls, const NcclTestsRow& row, const CostModel* m) {
  Scenario s = ls.s;
  if (m) {
    CostModel with_launch = *m;
    if (s.network.cost) with_launch.host_issue = s.network.cost->host_issue;
    s.network.cost = std::make_shared<const CostModel>(std::move(with_launch));
  }
  try {
    return simulate_alone(s, sized_like(ls.base, row));
  } catch (const InputError& e) {
    throw InputError("--algorithm",
                     fmt::format("calibrate --nccl-tests fits under the {} network model, "
                                 "where the log's collective at {} bytes cannot be simulated "
                                 "(fit under another with --network): {}",
                                 name_of(s.network.model), row.bytes, e.what()));
  }
}

// The kinds' hop latency at scale 1: NCCL's ring/Simple entry for each kind's class.
double reference_latency_s(LinkKind k) {
  return nccl_hop_latency_us(hop_class(k), NcclAlgo::Ring, Protocol::Simple) * 1e-6;
}

constexpr FitTerms kAllTerms{};

// The rows of a log the fit can time: they move bytes and were timed (zero-byte rows of
// all-gather and reduce-scatter are left out).
std::size_t timed_rows(const NcclTestsLog& log) {
  return static_cast<std::size_t>(std::count_if(
      log.rows.begin(), log.rows.end(),
      [](const NcclTestsRow& r) { return r.bytes > 0 && r.out_of_place.time_us > 0; }));
}

// Log i as the fit's report and file name it: its file name, or the path as given where
// another log has the same file name (per-run folders of one all_reduce.txt each).
std::string log_label(const std::vector<NcclTestsLog>& logs, std::size_t i) {
  const auto name = [&](std::size_t j) { return std::filesystem::path(logs[j].file).filename(); };
  for (std::size_t j = 0; j < logs.size(); ++j)
    if (j != i && name(j) == name(i)) return logs[i].file;
  return name(i).string();
}

// Each kind's slowest link rate: what a share of the kind's nominal rate is of.
std::vector<double> slowest_rates(const Topology& t, const std::vector<LinkKind>& kinds) {
  std::vector<double> out(kinds.size(), INFINITY);
  for (const Link& l : t.links())
    for (std::size_t i = 0; i < kinds.size(); ++i)
      if (l.kind == kinds[i]) out[i] = std::min(out[i], l.bandwidth);
  return out;
}

// The curve's shares of nominal as one kind's bandwidths (B/s).
std::vector<std::pair<std::int64_t, double>> scaled_curve(
    const std::vector<std::pair<std::int64_t, double>>& shares, double nominal_Bps) {
  std::vector<std::pair<std::int64_t, double>> out;
  for (const auto& [bytes, share] : shares) out.emplace_back(bytes, share * nominal_Bps);
  return out;
}

// The fit's terms as a cost model on the kinds the transfers cross. The terms in
// `stated` are stated (NCCL's model then uses them in place of its own); the others
// are left to the defaults, which `neutral` restates.
struct TermModel {
  std::vector<LinkKind> kinds;
  std::vector<double> default_efficiency;  // per kind
  FitValues neutral;  // the defaults as values: NCCL's table under "nccl", else none
  // The kind the curve describes (an index into `kinds`): the slowest, whose rate bounds
  // the sizes the curve is read from (across nodes the network; NVLink keeps its share),
  // and its nominal rate, what the curve's shares are of. No curve asked for (--terms):
  // linearise leaves the kind's own part of the time unmeasured.
  std::size_t curve_kind = 0;
  double curve_nominal_Bps = 0;
  bool curve = true;

  CostModel operator()(const FitValues& v, const FitTerms& stated = kAllTerms) const {
    CostModel m;
    if (stated.launch) m.launch = from_seconds(v.launch_s);
    m.stated.launch = stated.launch;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      const auto k = static_cast<std::size_t>(kinds[i]);
      LinkKindCost& c = m.links[k];
      if (stated.latency) c.latency = from_seconds(v.latency_scale * reference_latency_s(kinds[i]));
      if (stated.efficiency || stated.curve)
        c.efficiency = std::min(1.0, v.efficiency * default_efficiency[i]);
      if (!v.curve.empty() && i == curve_kind) {
        c.bandwidth = SizeCurve(scaled_curve(v.curve, curve_nominal_Bps));
        c.curve_algorithms = v.curve_algorithms;
      }
      m.stated.latency[k] = stated.latency;
      m.stated.efficiency[k] = stated.efficiency || stated.curve;
    }
    return m;
  }
};

FitValues neutral_values(const NcclFitRequest& req) {
  FitValues v;
  if (req.algorithm == "nccl") {  // NCCL's table is scale 1 of its ring/Simple entries
    v.launch_s = nccl_base_latency_us(NcclAlgo::Ring, Protocol::Simple) * 1e-6;
    v.latency_scale = 1;
  }
  return v;
}

// The kinds whose latency shows in the time: the ones the transfers cross.
std::vector<LinkKind> crossed_kinds(const std::vector<LogScenario>& scenarios,
                                    const std::vector<NcclTestsLog>& logs) {
  std::set<LinkKind> present, crossed;
  for (const auto& ls : scenarios)
    for (const Link& l : ls.s.topology.links()) present.insert(l.kind);
  // At the largest size every rank sends something; at the smallest latency is all there
  // is (a pipeline at the largest hides the latency of a stage with slack).
  for (std::size_t i = 0; i < logs.size(); ++i)
    for (const NcclTestsRow* row : {&logs[i].rows.front(), &logs[i].rows.back()}) {
      // Stated (a launch of 0), as the fit's models are: NCCL's estimate then bounds
      // nothing, and only the links decide.
      CostModel none;
      none.stated.launch = true;
      const double t0 = run_with(scenarios[i], *row, &none).time_s;
      for (LinkKind k : present) {
        CostModel m = none;
        m.link(k).latency = from_seconds(1e-6);
        if (run_with(scenarios[i], *row, &m).time_s - t0 > 0.5e-6) crossed.insert(k);
      }
    }
  return {crossed.begin(), crossed.end()};
}

// The usable share each kind has when nothing is stated: NCCL's NVLink and NIC shares
// under NCCL's model (its protocols and picks), else the nominal rate.
std::vector<double> default_efficiencies(const NcclFitRequest& req, const Topology& t,
                                         const std::vector<LinkKind>& kinds) {
  const bool nccl_model = req.algorithm == "nccl";
  const double nvlink =
      t.num_ranks() > 0 ? nvlink_usable_fraction(gpu_arch(t, t.gpu_of_rank(0))) : 1;
  const double net = t.num_ranks() > 0 ? net_usable_fraction(t, t.gpu_of_rank(0)) : 1;
  std::vector<double> out;
  for (LinkKind k : kinds) {
    const HopClass hw = hop_class(k);
    out.push_back(!nccl_model ? 1.0 : hw == HopClass::NvLink ? nvlink : hw == HopClass::Net ? net : 1.0);
  }
  return out;
}

// What one logged size costs, linearised at some values of the terms:
// time = fixed + launch x d_launch + latency_scale x d_latency + (1/efficiency) x d_x.
struct Point {
  std::size_t log = 0;
  const NcclTestsRow* row = nullptr;
  double measured = 0;
  std::int64_t transfer = 0;
  std::string algorithm;  // the schedule that ran at this size (SizedRun::algorithm)
  double fixed = 0, d_launch = 0, d_latency = 0, d_x = 0;
  double d_x_curve = 0;        // d_x's part from the curve's kind alone (TermModel::curve_kind)
  double bandwidth_share = 0;  // of the time at the defaults: d_x x (1/efficiency) / time
  bool heldout = false;        // every other size of its log: predicted, not fitted, in the trials
};

Point linearise(const LogScenario& ls, std::size_t log, const NcclTestsRow& row,
                const TermModel& model, const FitValues& at) {
  constexpr double kStep = 1e-6;  // one microsecond of launch, one of scale per hop
  FitValues launch = at, latency = at, slower = at;
  launch.launch_s += kStep;
  latency.latency_scale += 1;
  slower.efficiency /= 2;  // 1/efficiency doubles
  const CostModel m0 = model(at);
  const SizedRun base = run_with(ls, row, &m0);
  const CostModel ml = model(launch), mh = model(latency), ms = model(slower);
  Point p{log, &row, row.out_of_place.time_us * 1e-6, base.transfer_bytes, base.algorithm};
  const double x0 = 1 / at.efficiency;
  p.d_launch = (run_with(ls, row, &ml).time_s - base.time_s) / kStep;
  p.d_latency = run_with(ls, row, &mh).time_s - base.time_s;
  p.d_x = (run_with(ls, row, &ms).time_s - base.time_s) / x0;
  p.d_x_curve = p.d_x;
  if (model.curve && model.kinds.size() > 1) {  // the curve's kind alone twice as slow
    CostModel mc = m0;
    mc.link(model.kinds[model.curve_kind]).efficiency /= 2;
    p.d_x_curve = (run_with(ls, row, &mc).time_s - base.time_s) / x0;
  }
  p.fixed = base.time_s - p.d_launch * at.launch_s - p.d_latency * at.latency_scale - p.d_x * x0;
  p.bandwidth_share = base.time_s > 0 ? p.d_x * x0 / base.time_s : 0;
  return p;
}

// A size the fit can use: it moves data, it was timed, its two times agree (a disturbed
// size says nothing of the machine: NcclTestsRow::disturbed) and it passed nccl-tests'
// check (a run with wrong elements timed something broken).
bool fittable(const LogScenario& ls, const NcclTestsRow& row) {
  return sized_like(ls.base, row).bytes > 0 && row.out_of_place.time_us > 0 && !row.disturbed() &&
         row.wrong() == 0;
}

std::vector<Point> linearise_all(const std::vector<LogScenario>& scenarios,
                                 const std::vector<NcclTestsLog>& logs, const TermModel& model,
                                 const FitValues& at) {
  std::vector<Point> points;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    bool odd = false;
    for (const NcclTestsRow& row : logs[i].rows) {
      if (!fittable(scenarios[i], row)) continue;
      points.push_back(linearise(scenarios[i], i, row, model, at));
      points.back().heldout = odd;
      odd = !odd;
    }
  }
  return points;
}

// The affine terms' columns: launch, latency scale, 1/efficiency.
constexpr int kAffine = 3;
using Coefs = std::array<double, kAffine>;

// Solves the normal equations a x = b (n <= kAffine) by elimination; false when singular.
bool solve_small(std::array<Coefs, kAffine> a, Coefs b, int n, Coefs& x) {
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
// feasible solution over the subsets of free columns (kAffine at most: 8 subsets).
// Columns are scaled to unit norm first so the singularity test means the same for all.
Coefs nonnegative_least_squares(const std::array<std::vector<double>, kAffine>& cols,
                                const std::array<bool, kAffine>& allowed,
                                const std::vector<double>& rhs, const std::vector<double>& w) {
  const std::size_t n = rhs.size();
  Coefs scale{};
  for (int j = 0; j < kAffine; ++j) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += w[i] * cols[j][i] * cols[j][i];
    scale[j] = s > 0 ? 1 / std::sqrt(s) : 0;
  }
  auto objective = [&](const Coefs& coef) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double r = -rhs[i];
      for (int j = 0; j < kAffine; ++j) r += coef[j] * cols[j][i];
      sum += w[i] * r * r;
    }
    return sum;
  };
  Coefs best{};
  double best_obj = objective(best);
  // Launch before latency before efficiency on ties.
  for (int mask = 1; mask < 1 << kAffine; ++mask) {
    std::array<int, kAffine> idx{};
    int m = 0;
    bool ok = true;
    for (int j = 0; j < kAffine; ++j)
      if (mask >> j & 1) {
        ok = ok && allowed[j] && scale[j] > 0;
        idx[m++] = j;
      }
    if (!ok) continue;
    std::array<Coefs, kAffine> a{};
    Coefs b{}, x{};
    for (std::size_t i = 0; i < n; ++i)
      for (int p = 0; p < m; ++p) {
        const double cp = cols[idx[p]][i] * scale[idx[p]];
        b[p] += w[i] * cp * rhs[i];
        for (int q = 0; q < m; ++q) a[p][q] += w[i] * cp * cols[idx[q]][i] * scale[idx[q]];
      }
    if (!solve_small(a, b, m, x)) continue;
    Coefs coef{};
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

// Launch, latency scale and 1/efficiency - 1 (all >= 0) by Huber-weighted least squares
// of relative errors; the terms not fitted keep their neutral (default) values. One
// efficiency scales every kind: fitted per kind, the NVLink share of a multi-node log's
// mid sizes took the blame for what the model leaves out there (latencies), down to 3% of
// nominal on 10 x 8 H100 all-gathers, where the network bounds the time.
void fit_affine(const std::vector<const Point*>& pts, const FitTerms& terms, FitValues& v) {
  const std::size_t n = pts.size();
  std::array<std::vector<double>, kAffine> cols;
  std::vector<double> rhs(n), huber(n, 1.0), w(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Point& p = *pts[i];
    cols[0].push_back(p.d_launch);
    cols[1].push_back(p.d_latency);
    cols[2].push_back(p.d_x);
    rhs[i] = p.measured - p.fixed - p.d_x / v.efficiency;  // at the neutral efficiency
    if (!terms.launch) rhs[i] -= p.d_launch * v.launch_s;
    if (!terms.latency) rhs[i] -= p.d_latency * v.latency_scale;
  }
  const std::array<bool, kAffine> allowed{terms.launch, terms.latency, terms.efficiency};
  Coefs coef{};
  for (int iter = 0; iter < 50; ++iter) {
    for (std::size_t i = 0; i < n; ++i) w[i] = huber[i] / (pts[i]->measured * pts[i]->measured);
    coef = nonnegative_least_squares(cols, allowed, rhs, w);
    double change = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double pred = 0;
      for (int j = 0; j < kAffine; ++j) pred += coef[j] * cols[j][i];
      const double r = std::fabs(pred - rhs[i]) / pts[i]->measured;
      const double h = r <= kHuber ? 1.0 : kHuber / r;
      change = std::max(change, std::fabs(h - huber[i]));
      huber[i] = h;
    }
    if (change < 1e-9) break;
  }
  if (terms.launch) v.launch_s = coef[0];
  if (terms.latency) v.latency_scale = coef[1];
  if (terms.efficiency) v.efficiency = 1 / (1 / v.efficiency + coef[2]);
}

// Transfer sizes a quarter of an octave apart or closer share a point of the curve: a
// link's rate does not change between 419,424 and 419,432 bytes, where two collectives'
// transfers of one size fall, and a point per exact size read each collective's misfit as
// a rate (the curve zig-zagged between them).
constexpr double kCurveBinsPerOctave = 4;

// The bandwidth, per transfer size, that closes what the affine terms leave: at each
// size where bandwidth is a fair share of the time. Sizes in one bin (several logs, or
// collectives whose transfers are nearly the same size) average, at their mean size (in
// log scale).
void fit_curve(const std::vector<const Point*>& pts, FitValues& v) {
  const double x = 1 / v.efficiency;
  struct Bin {
    double g = 0, log2_bytes = 0;
    int count = 0;
  };
  std::map<long, Bin> bins;  // by quarter octave of the transfer size
  for (const Point* p : pts) {
    const double bw_part = p->d_x_curve * x;  // the curve's kind's part of the time
    if (p->transfer <= 0 || bw_part < kCurveShare * p->measured) continue;
    const double gap = p->measured - p->fixed - p->d_launch * v.launch_s -
                       p->d_latency * v.latency_scale - (p->d_x - p->d_x_curve) * x;
    // g = nominal share of the curve at this size; at most x (no faster than nominal).
    double g = gap > 0 ? bw_part / gap : x;
    if (g > x || g < 0.01) ++v.clamped;
    g = std::clamp(g, 0.01, x);
    const double log2_bytes = std::log2(static_cast<double>(p->transfer));
    if (std::find(v.curve_algorithms.begin(), v.curve_algorithms.end(), p->algorithm) ==
        v.curve_algorithms.end())
      v.curve_algorithms.push_back(p->algorithm);
    Bin& bin = bins[std::lround(log2_bytes * kCurveBinsPerOctave)];
    bin.g += g;
    bin.log2_bytes += log2_bytes;
    ++bin.count;
  }
  for (const auto& [key, bin] : bins)
    v.curve.emplace_back(std::llround(std::exp2(bin.log2_bytes / bin.count)), bin.g / bin.count);
  std::sort(v.curve_algorithms.begin(), v.curve_algorithms.end());
}

FitValues fit_values(const std::vector<const Point*>& pts, const FitTerms& terms,
                     const FitValues& neutral) {
  FitValues v = neutral;
  fit_affine(pts, terms, v);
  if (terms.curve) fit_curve(pts, v);
  return v;
}

std::vector<const Point*> select(const std::vector<Point>& pts, std::optional<bool> heldout) {
  std::vector<const Point*> out;
  for (const Point& p : pts)
    if (!heldout || p.heldout == *heldout) out.push_back(&p);
  return out;
}

// Each point simulated under `m` (nullptr: the defaults), against what was measured.
std::vector<FitResidual> residuals_of(const CostModel* m, const std::vector<LogScenario>& scenarios,
                                      const std::vector<const Point*>& pts, double* mape) {
  std::vector<FitResidual> out;
  double sum = 0;
  for (const Point* p : pts) {
    const double t = run_with(scenarios[p->log], *p->row, m).time_s;
    out.push_back({p->log, p->row->bytes, p->measured, t, (t - p->measured) / p->measured * 100});
    sum += std::fabs(out.back().error_pct);
  }
  *mape = pts.empty() ? 0 : sum / static_cast<double>(pts.size());
  return out;
}

// A log tells a term only through sizes where that term is most of the time. The floor
// (launch, latency) is read where it is nearly all of it (at most 10% bandwidth, and the
// launch not hidden behind a launch mode's issue time): a floor read from 1 MiB, where
// model error and noise are a large part of the time, carries that into every small
// size of every other log (a 1 MiB-8 GiB log fitted a 103 us launch). The plateau
// (efficiency, curve) is read where bandwidth is at least half the time (an NVLS
// collective's switch share keeps its link share below 80% at any size).
// A size held by neither bandwidth nor its floor (a point-to-point send at its channels'
// ceiling: 421 us for 32 MiB, where the launch is 2%) says nothing of the floor either:
// the launch must also be a fair part of the measured time (NCCL's own 8.4 us, at least
// kLaunchShare of it).
constexpr double kFloorShare = 0.1, kPlateauShare = 0.5, kLaunchShare = 0.15;
constexpr int kDominantSizes = 3;

bool shows_floor(const Point& p) {
  const double launch_s = nccl_base_latency_us(NcclAlgo::Ring, Protocol::Simple) * 1e-6;
  return p.d_launch > 0 && p.bandwidth_share <= kFloorShare &&
         p.d_launch * launch_s >= kLaunchShare * p.measured;
}

FitTerms identifiable(const std::vector<Point>& pts, FitTerms t, std::vector<std::string>& notes) {
  int floor = 0, plateau = 0;
  for (const Point& p : pts) {
    floor += shows_floor(p);
    plateau += p.bandwidth_share >= kPlateauShare;
  }
  if (floor < kDominantSizes && (t.launch || t.latency)) {
    t.launch = t.latency = false;
    notes.push_back(
        fmt::format("launch and latency are not fitted: {} size(s) of the logs show their launch "
                    "(at most 10% bandwidth, the launch at least 15% of the time; at "
                    "least {} needed); the defaults stay",
                    floor, kDominantSizes));
  }
  if (plateau < kDominantSizes && (t.efficiency || t.curve)) {
    t.efficiency = t.curve = false;
    notes.push_back(fmt::format(
        "efficiency and the bandwidth curve are not fitted: {} size(s) of the logs are at least "
        "half bandwidth (at least {} needed); the default usable shares stay",
        plateau, kDominantSizes));
  }
  return t;
}

// NCCL's point-to-point sends move at most their channels' rate (docs/nccl.md §12), which
// the links' terms cannot describe: where that ceiling sets a size's time the size says
// nothing of the links, and a link term fitted from such logs alone is read from their
// largest sizes only. Whether `req` fits logs of point-to-point sends alone under "nccl",
// with a link term allowed.
bool p2p_logs_only(const NcclFitRequest& req) {
  return req.algorithm == "nccl" && (req.terms.efficiency || req.terms.curve) &&
         std::all_of(req.logs.begin(), req.logs.end(),
                     [](const NcclTestsLog& l) { return !nccl_has_algorithms(l.op); });
}

// Before the choice: no link term can be read, though the logs reach sizes (1 MiB and up)
// across hosts where the channels' ceiling sets the time.
void note_p2p_unfittable(const NcclFitRequest& req, const std::vector<Point>& pts, NcclFit& fit) {
  if (!p2p_logs_only(req) || fit.used.efficiency || fit.used.curve) return;
  const bool network = std::any_of(fit.kinds.begin(), fit.kinds.end(),
                                   [](LinkKind k) { return hop_class(k) == HopClass::Net; });
  const bool large =
      std::any_of(pts.begin(), pts.end(), [](const Point& p) { return p.row->bytes >= (1 << 20); });
  if (network && large)
    fit.notes.push_back(fmt::format(
        "these logs are NCCL's point-to-point sends, each striped over channels of at most {} "
        "GB/s across hosts (docs/nccl.md §12): where that ceiling, not the links, sets a "
        "size's time, the size says nothing of the links; all-reduce, all-gather or "
        "reduce-scatter logs of the machine describe them",
        nccl_published::kP2pNetChannelGBps));
}

// After the choice: a link term kept from such logs.
void note_p2p_fitted(const NcclFitRequest& req, NcclFit& fit) {
  if (p2p_logs_only(req) && (fit.used.efficiency || fit.used.curve))
    fit.notes.push_back(
        "fitted from NCCL's point-to-point sends alone: below the links' rate their channels, "
        "not the links, set their time (docs/nccl.md §12), so only their largest sizes say what "
        "the links carry; check the file against an all-reduce log of the machine before "
        "using it for other collectives");
}

// Launch and latency cannot be told apart when (nearly) every size pays the same
// number of latencies per launch: one log of one GPU count and one algorithm.
bool latency_separable(const std::vector<Point>& pts) {
  std::vector<double> n;
  for (const Point& p : pts)
    if (p.d_launch > 0) n.push_back(p.d_latency / p.d_launch * 1e-6);
  if (n.size() < 3) return false;
  std::nth_element(n.begin(), n.begin() + static_cast<std::ptrdiff_t>(n.size() / 2), n.end());
  const double median = n[n.size() / 2];
  std::size_t same = 0;
  for (double x : n) same += std::fabs(x - median) <= 0.01 * median;
  return static_cast<double>(same) < 0.9 * static_cast<double>(n.size());
}

// "nvlink (nominal 450 GB/s), ib (nominal 50 GB/s)": each kind with its slowest rate.
std::string kind_list(const std::vector<LinkKind>& kinds, const std::vector<double>& nominal_Bps) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < kinds.size(); ++i)
    names.push_back(
        fmt::format("{} (nominal {})", name_of(kinds[i]), format_bandwidth(nominal_Bps[i])));
  return fmt::format("{}", fmt::join(names, ", "));
}

int term_count(const FitTerms& t) {
  return t.launch + t.latency + t.efficiency + t.curve;
}

std::string term_names(const FitTerms& t) {
  std::vector<std::string> names;
  if (t.launch) names.emplace_back("launch");
  if (t.latency) names.emplace_back("latency");
  if (t.efficiency) names.emplace_back("efficiency");
  if (t.curve) names.emplace_back("curve");
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ","));
}

// The sets of terms worth trying: all that may be fitted, each with one left out, and
// the floor and plateau alone (launch, efficiency).
std::vector<FitTerms> candidate_terms(const FitTerms& allowed) {
  std::vector<FitTerms> out{allowed, {false, false, false, false}};  // none: the defaults
  auto add = [&](FitTerms t) {
    t = {t.launch && allowed.launch, t.latency && allowed.latency,
         t.efficiency && allowed.efficiency, t.curve && allowed.curve};
    for (const FitTerms& o : out)
      if (o.launch == t.launch && o.latency == t.latency && o.efficiency == t.efficiency &&
          o.curve == t.curve)
        return;
    out.push_back(t);
  };
  add({false, true, true, true});
  add({true, false, true, true});
  add({true, true, false, true});
  add({true, true, true, false});
  add({true, false, true, false});
  add({true, false, false, false});
  add({false, false, true, false});
  return out;
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

namespace {

void check_request(const NcclFitRequest& req) {
  if (req.logs.empty()) throw InputError("--nccl-tests", "at least one log");
  if (req.algorithm == "auto")
    throw InputError("--algorithm",
                     "name what the log ran: nccl (NCCL's choice, the default) or the "
                     "algorithm it was forced to, not auto (the fit needs the same schedule "
                     "the log ran at every size)");
  if (!req.nccl_algo.empty() && req.algorithm != "nccl")
    throw InputError("--nccl-algo", fmt::format("only with --algorithm nccl (NCCL's pick "
                                                "under its NCCL_ALGO), not {}",
                                                req.algorithm));
  if (!req.nccl_proto.empty() && req.algorithm != "nccl")
    throw InputError("--nccl-proto", fmt::format("only with --algorithm nccl (NCCL's pick "
                                                 "under its NCCL_PROTO), not {}",
                                                 req.algorithm));
  // The same log twice (a copy under another name) would count its sizes twice.
  for (std::size_t i = 0; i < req.logs.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (req.logs[i].digest == req.logs[j].digest)
        throw InputError("--nccl-tests", fmt::format("{} is {} byte for byte: give each log once",
                                                     req.logs[i].file, req.logs[j].file));
  for (const NcclTestsLog& log : req.logs)
    if (log.ranks < 2)
      throw InputError("--nccl-tests",
                       fmt::format("{} ran on one GPU: nothing crossed a link, so it says nothing "
                                   "of the machine's links or latencies (fit logs of two GPUs "
                                   "or more)",
                                   log.file));
}

// Each trial fitted on every other size and judged on the rest; the kept terms are the
// trial with the lowest held-out error, fewer terms on a tie.
void choose_terms(NcclFit& fit, const std::vector<Point>& pts,
                  const std::vector<LogScenario>& scenarios, const TermModel& model) {
  const auto fitted = select(pts, false), heldout = select(pts, true);
  const TermsTrial* best = nullptr;
  for (const FitTerms& t : candidate_terms(fit.used)) {
    TermsTrial trial{t, fit_values(fitted, t, model.neutral)};
    const CostModel m = model(trial.values, t);
    residuals_of(&m, scenarios, heldout, &trial.heldout_mape_pct);
    fit.trials.push_back(trial);
  }
  for (const TermsTrial& t : fit.trials)
    if (!best || t.heldout_mape_pct < best->heldout_mape_pct - kSameError ||
        (t.heldout_mape_pct <= best->heldout_mape_pct + kSameError &&
         term_count(t.terms) < term_count(best->terms)))
      best = &t;
  fit.used = best->terms;
  fit.heldout_mape_pct = best->heldout_mape_pct;
}

// "file.txt at 32 B (why), ..." for every size of the logs the fit leaves out for one
// reason (`left_out`); empty when none.
template <class LeftOut, class Why>
std::string sizes_left_out(const std::vector<NcclTestsLog>& logs, LeftOut left_out, Why why) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < logs.size(); ++i)
    for (const NcclTestsRow& row : logs[i].rows)
      if (left_out(row))
        out.push_back(fmt::format("{} at {} B ({})", log_label(logs, i), row.bytes, why(row)));
  return fmt::format("{}", fmt::join(out, ", "));
}

std::string disturbed_sizes(const std::vector<NcclTestsLog>& logs) {
  return sizes_left_out(
      logs,
      [](const NcclTestsRow& r) { return r.bytes > 0 && r.disturbed(); },  // 0 B: never fitted
      [](const NcclTestsRow& r) {
        return fmt::format("{:.2f} / {:.2f} us", r.out_of_place.time_us, r.in_place->time_us);
      });
}

std::string failed_sizes(const std::vector<NcclTestsLog>& logs) {
  return sizes_left_out(
      logs, [](const NcclTestsRow& r) { return r.wrong() > 0; },
      [](const NcclTestsRow& r) { return fmt::format("{} wrong", r.wrong()); });
}

// A usable share this far from NCCL's says more of the topology than of the machine.
constexpr double kImplausibleShare = 0.25;

// The share of its nominal rate a link kind keeps at the largest transfers: its usable
// share, times the bandwidth curve's last point where the fit kept a curve (which may pass
// nominal under a small share, or hold a default share far down).
double share_at_largest(const NcclFit& fit, std::size_t kind) {
  const double share = fit.model.link(fit.kinds[kind]).efficiency;
  if (!fit.used.curve || fit.values.curve.empty() || kind != fit.curve_kind) return share;
  return share * fit.values.curve.back().second;
}

// Most bandwidth-bound sizes faster than the fit can make them: the links the topology
// gives are slower than the machine's (a usable share can only lower a link's rate), and
// a file fitted there would describe neither. Refused, nothing written.
void refuse_faster_than_topology(const NcclFit& fit, const std::vector<const Point*>& points) {
  int bound = 0, slow = 0;
  for (const auto& r : fit.residuals) {
    const auto p = std::find_if(points.begin(), points.end(), [&](const Point* q) {
      return q->log == r.log && q->row->bytes == r.bytes;
    });
    if (p == points.end() || (*p)->bandwidth_share < kPlateauShare) continue;
    ++bound;
    slow += r.error_pct > kPoorPoint;
  }
  if (2 * slow > bound)
    throw InputError(
        "--topology",
        fmt::format("{} of the {} bandwidth-bound sizes ran faster than the fit can simulate "
                    "them on this topology (by more than {:.0f}%): the machine the logs ran on "
                    "has faster links than it says (the NVLink or NIC speed, the GPUs per host); "
                    "nothing written",
                    slow, bound, kPoorPoint));
}

void add_warnings(NcclFit& fit, const NcclFitRequest& req) {
  if (fit.used.efficiency || fit.used.curve)
    for (std::size_t i = 0; i < fit.kinds.size(); ++i)
      if (const double share = share_at_largest(fit, i); share < kImplausibleShare)
        fit.warnings.push_back(fmt::format(
            "{} links keep {:.1f}% of their nominal rate at the largest transfers: check the "
            "topology's link bandwidths against the machine's (a slower link on the path, "
            "fewer NICs, PCIe)",
            name_of(fit.kinds[i]), share * 100));
  if (fit.mape_pct > kPoorMape)
    fit.warnings.push_back(
        fmt::format("poor fit: MAPE {:.1f}% (above {:.0f}%)", fit.mape_pct, kPoorMape));
  if (fit.heldout_mape_pct > kPoorMape)
    fit.warnings.push_back(fmt::format(
        "sizes the fit did not see are predicted at {:.1f}% (above {:.0f}%): expect that "
        "much on other logs of this machine",
        fit.heldout_mape_pct, kPoorMape));
  for (const auto& r : fit.residuals)
    if (std::fabs(r.error_pct) > kPoorPoint)
      fit.warnings.push_back(fmt::format(
          "{} at {} B: fitted {:.2f} us, measured {:.2f} us ({:+.1f}%)", req.logs[r.log].file,
          r.bytes, r.fitted_s * 1e6, r.measured_s * 1e6, r.error_pct));
}

}  // namespace

NcclFit fit_nccl_tests(const NcclFitRequest& req) {
  check_request(req);
  std::vector<LogScenario> scenarios;
  for (const auto& log : req.logs) scenarios.push_back(scenario_for(req, log));
  NcclFit fit;
  const Scenario& first = scenarios.front().s;
  fit.topology_name = first.topology.name;
  fit.algorithm = req.algorithm;
  if (req.algorithm == "nccl" && (!req.nccl_algo.empty() || !req.nccl_proto.empty())) {
    std::vector<std::string> held;
    if (!req.nccl_algo.empty()) held.push_back("NCCL_ALGO=" + req.nccl_algo);
    if (!req.nccl_proto.empty()) held.push_back("NCCL_PROTO=" + req.nccl_proto);
    fit.algorithm = fmt::format("nccl ({})", fmt::join(held, ", "));
  }
  fit.network = std::string(name_of(first.network.model));
  // A calibration describes the machine a log ran on: fitted on another, its terms stand for
  // the difference between the two machines, not for either.
  for (const NcclTestsLog& log : req.logs)
    if (const std::string other = device_mismatch(log, first.topology); !other.empty())
      throw InputError("--topology",
                       fmt::format("{}: {}; fit it on a topology of the machine it ran on (a "
                                   "preset's \"gpu\", or a topology file naming its GPUs)",
                                   log.file, other));
  for (const auto& ls : scenarios) fit.launches.push_back(ls.s.launch->describe());
  std::size_t timed = 0;  // rows that move bytes (the links say nothing of the others)
  for (const NcclTestsLog& log : req.logs) timed += timed_rows(log);
  if (timed < 4)
    throw InputError("--nccl-tests",
                     fmt::format("{} timed sizes above zero bytes to fit; at least 4", timed));
  fit.kinds = crossed_kinds(scenarios, req.logs);
  if (fit.kinds.empty())
    throw InputError("--topology", "the collectives' transfers cross no link: nothing to fit");
  fit.default_efficiency = default_efficiencies(req, first.topology, fit.kinds);
  fit.nominal_Bps = slowest_rates(first.topology, fit.kinds);
  fit.curve_kind = static_cast<std::size_t>(
      std::min_element(fit.nominal_Bps.begin(), fit.nominal_Bps.end()) - fit.nominal_Bps.begin());
  const TermModel model{fit.kinds,      fit.default_efficiency,          neutral_values(req),
                        fit.curve_kind, fit.nominal_Bps[fit.curve_kind], req.terms.curve};

  // Linearised at the defaults, fitted with every term the logs can tell, linearised
  // again there.
  std::vector<Point> pts = linearise_all(scenarios, req.logs, model, model.neutral);
  if (pts.size() < 4) {
    std::size_t disturbed = 0, failed = 0;
    for (const NcclTestsLog& log : req.logs)
      for (const NcclTestsRow& row : log.rows) {
        if (row.bytes == 0 || row.out_of_place.time_us <= 0) continue;
        disturbed += row.disturbed();
        failed += !row.disturbed() && row.wrong() > 0;
      }
    throw InputError(
        "--nccl-tests",
        fmt::format("{} sizes to fit; at least 4 ({} timed sizes left out: {} disturbed, their "
                    "out-of-place and in-place times more than {:.0f}% apart, {} failed "
                    "nccl-tests' check)",
                    pts.size(), timed - pts.size(), disturbed, (kColumnsAgree - 1) * 100, failed));
  }
  fit.used = identifiable(pts, req.terms, fit.notes);
  note_p2p_unfittable(req, pts, fit);
  if (term_count(fit.used) == 0)
    throw InputError("--nccl-tests", "the logs determine none of the terms --terms allows: " +
                                         fmt::format("{}", fmt::join(fit.notes, "; ")));
  FitTerms affine = fit.used;
  affine.curve = false;
  pts =
      linearise_all(scenarios, req.logs, model, fit_values(select(pts, {}), affine, model.neutral));

  // The logs' launch modes, each once (logs of one machine mostly share theirs).
  std::vector<std::string> launches;
  for (const std::string& l : fit.launches)
    if (std::find(launches.begin(), launches.end(), l) == launches.end()) launches.push_back(l);
  fit.notes.insert(
      fit.notes.begin(),
      fmt::format("transfers cross {}; fitted under the {} network model, {}",
                  kind_list(fit.kinds, fit.nominal_Bps), fit.network, fmt::join(launches, "; ")));
  if (std::string left = disturbed_sizes(req.logs); !left.empty())
    fit.notes.push_back(fmt::format(
        "left out, their out-of-place and in-place times more than {:.0f}% apart (neither "
        "stands for the collective): {}",
        (kColumnsAgree - 1) * 100, left));
  for (std::size_t i = 0; i < req.logs.size(); ++i)
    for (const std::string& note : req.logs[i].notes)
      fit.notes.push_back(log_label(req.logs, i) + ": " + note);
  if (std::string failed = failed_sizes(req.logs); !failed.empty())
    fit.notes.push_back("left out, their elements wrong by nccl-tests' own check: " + failed);
  if (fit.used.latency && !latency_separable(pts)) {
    fit.used.latency = false;
    fit.notes.push_back(
        "latency is not fitted: every size pays the same per-hop latencies per launch, so "
        "launch_s and latency_s are interchangeable on these logs (fit logs of several GPU "
        "counts or protocols to split them); NCCL's per-hop latencies stay");
  }
  choose_terms(fit, pts, scenarios, model);
  note_p2p_fitted(req, fit);
  fit.values = fit_values(select(pts, {}), fit.used, model.neutral);
  fit.model = model(fit.values, fit.used);
  fit.residuals = residuals_of(&fit.model, scenarios, select(pts, {}), &fit.mape_pct);
  residuals_of(nullptr, scenarios, select(pts, {}), &fit.defaults_mape_pct);
  if (fit.mape_pct > fit.defaults_mape_pct)
    throw InputError(
        "--nccl-tests",
        fmt::format("the fitted terms predict the logs at {:.1f}% where the defaults give "
                    "{:.1f}%; nothing written (is --topology the machine the logs ran on, and "
                    "--algorithm/--nccl-algo what they ran?)",
                    fit.mape_pct, fit.defaults_mape_pct));
  if (term_count(fit.used) == 0)
    fit.notes.push_back(
        "no set of terms predicts the sizes left out better than the defaults: the file states "
        "no term, and simulates as the defaults do");
  if (fit.values.clamped)
    fit.notes.push_back(fmt::format(
        "at {} size(s) the bandwidth curve hit its bounds (no faster than nominal): the floor "
        "there differs from the fitted one (NCCL changes protocol with size)",
        fit.values.clamped));
  refuse_faster_than_topology(fit, select(pts, {}));
  add_warnings(fit, req);
  return fit;
}

nlohmann::json nccl_calibration_json(const NcclFitRequest& req, const NcclFit& fit,
                                     const std::string& date) {
  nlohmann::json out = cost_model_json(fit.model);
  out["alpha_s"] = 0;  // the fitted terms take α's place
  nlohmann::json logs = nlohmann::json::array();
  for (std::size_t i = 0; i < req.logs.size(); ++i) {
    const NcclTestsLog& log = req.logs[i];
    logs.push_back({{"file", log_label(req.logs, i)},
                    {"fnv1a64", fmt::format("{:016x}", log.digest)},
                    {"collective", name_of(log.op)},
                    {"collective_from", log.op_source},
                    {"gpus", log.ranks},
                    {"gpus_from", log.ranks_source},
                    {"launch", fit.launches[i]},
                    {"nccl_algo", forced_algo(req, log)},
                    {"nccl_proto", forced_proto(req, log)},
                    {"nccl_version", log.nccl_version},
                    {"nccl_tests_version", log.tests_version},
                    {"sizes", timed_rows(log)}});
  }
  out["provenance"] = {{"source", "nccl-tests"},
                       {"logs", logs},
                       {"topology", fit.topology_name},
                       {"algorithm", req.algorithm},
                       {"nccl_algo", req.nccl_algo},
                       {"nccl_proto", req.nccl_proto},
                       {"network", fit.network},
                       {"measured_column", "out_of_place"},
                       {"date", date}};
  nlohmann::json residuals = nlohmann::json::array();
  for (const auto& r : fit.residuals)
    residuals.push_back({{"file", log_label(req.logs, r.log)},
                         {"bytes", r.bytes},
                         {"measured_s", r.measured_s},
                         {"fitted_s", r.fitted_s},
                         {"error_pct", r.error_pct}});
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& t : fit.trials)
    trials.push_back({{"terms", term_names(t.terms)}, {"heldout_mape_pct", t.heldout_mape_pct}});
  std::vector<std::string> kinds;
  for (LinkKind k : fit.kinds) kinds.emplace_back(name_of(k));
  out["fit"] = {{"link_kinds", kinds},
                {"terms", term_names(fit.used)},
                {"mape_pct", fit.mape_pct},
                {"heldout_mape_pct", fit.heldout_mape_pct},
                {"defaults_mape_pct", fit.defaults_mape_pct},
                {"residuals", residuals},
                {"trials", trials},
                {"notes", fit.notes},
                {"warnings", fit.warnings}};
  return out;
}

namespace {

std::string fitted_terms_text(const NcclFit& fit) {
  const FitValues& v = fit.values;
  std::string out =
      "# fitted terms (NCCL's model scales its other algorithms and protocols from "
      "these)\n";
  out += fmt::format("#   launch_s       {:>10.3f} us  per collective, as ring/Simple pays it{}\n",
                     v.launch_s * 1e6,
                     fit.used.launch ? "; it replaces NCCL's own estimate of its pick as the "
                                       "floor of small sizes (the defaults keep that estimate)"
                                     : " (not kept: see the trials)");
  for (std::size_t i = 0; i < fit.kinds.size(); ++i) {
    const LinkKindCost& c = fit.model.link(fit.kinds[i]);
    const double latency_us = v.latency_scale * reference_latency_s(fit.kinds[i]) * 1e6;
    out += fmt::format(
        "#   {:<8} latency_s {:>8.3f} us per hop{}, efficiency {:.4f}{}\n", name_of(fit.kinds[i]),
        latency_us, fit.used.latency ? "" : " (default)",
        fit.used.efficiency || fit.used.curve ? c.efficiency : fit.default_efficiency[i],
        fit.used.efficiency ? ""
        : fit.used.curve    ? " (the default's, stated with the curve)"
                            : " (default)");
  }
  if (v.curve.empty()) return out;  // no curve kept
  const std::size_t k = fit.curve_kind;
  out += fmt::format(
      "#   bandwidth_curve {} point(s) of {} links (the slowest kind), by transfer size (B/s "
      "before efficiency), read from {} transfers (other algorithms' take its last rate)\n",
      v.curve.size(), name_of(fit.kinds[k]), fmt::join(v.curve_algorithms, ", "));
  // With the usable share too: the two trade against each other (a curve above nominal
  // under a small share can be the nominal rate).
  for (const auto& [bytes, share] : v.curve)
    out += fmt::format(
        "#     {:>12} B  {:>8.2f} GB/s  ({:.3f} of nominal; {:.3f} with the usable "
        "share)\n",
        bytes, share * fit.nominal_Bps[k] / 1e9, share,
        share * fit.model.link(fit.kinds[k]).efficiency);
  return out;
}

}  // namespace

std::string nccl_fit_report(const NcclFitRequest& req, const NcclFit& fit) {
  std::string out =
      fmt::format("# collsim calibrate --nccl-tests: {} log(s); {} on {} ({} network model)\n",
                  req.logs.size(), fit.algorithm, fit.topology_name, fit.network);
  for (std::size_t i = 0; i < req.logs.size(); ++i) {
    const NcclTestsLog& log = req.logs[i];
    const std::size_t timed = timed_rows(log), untimed = log.rows.size() - timed;
    out += fmt::format("#   {}: {} on {} GPUs (from {}), NCCL {}, {} sizes{}; {}\n", log.file,
                       name_of(log.op), log.ranks, log.ranks_source,
                       log.nccl_version.empty() ? "version not printed" : log.nccl_version, timed,
                       untimed > 0 ? fmt::format(" ({} zero-byte left out)", untimed) : "",
                       fit.launches[i]);
    if (req.nccl_algo.empty() && !log.nccl_algo.empty())
      out += fmt::format("#     NCCL_ALGO={} (from the log): NCCL's pick among those\n",
                         log.nccl_algo);
    if (req.nccl_proto.empty() && !forced_proto(req, log).empty())
      out += fmt::format("#     NCCL_PROTO={} (from the log): NCCL's protocol among those\n",
                         log.nccl_proto);
  }
  out += fitted_terms_text(fit);
  out += fmt::format("# {:<28} {:>12} {:>14} {:>14} {:>9}\n", "log", "bytes", "measured us",
                     "fitted us", "error");
  for (const auto& r : fit.residuals)
    out +=
        fmt::format("  {:<28} {:>12} {:>14.2f} {:>14.2f} {:>8.1f}%\n", log_label(req.logs, r.log),
                    r.bytes, r.measured_s * 1e6, r.fitted_s * 1e6, r.error_pct);
  out += fmt::format(
      "# MAPE {:.2f}% over {} sizes in sample; {:.2f}% held out (fitted on every other size, "
      "predicting the rest); {:.2f}% uncalibrated\n",
      fit.mape_pct, fit.residuals.size(), fit.heldout_mape_pct, fit.defaults_mape_pct);
  out +=
      "# term sets tried: held-out MAPE (fitted on every other size); the lowest is kept (lat "
      "and eff scale: of NCCL's per-hop latencies and of each link kind's usable share)\n";
  out += fmt::format("#   {:<32} {:>8} {:>11} {:>9} {:>10} {:>6}\n", "terms", "held out",
                     "launch us", "lat scale", "eff scale", "curve");
  for (const auto& t : fit.trials)
    out += fmt::format("#   {:<32} {:>7.2f}% {:>11.3f} {:>9.3f} {:>10.4f} {:>6}{}\n",
                       term_names(t.terms), t.heldout_mape_pct, t.values.launch_s * 1e6,
                       t.values.latency_scale, t.values.efficiency, t.values.curve.size(),
                       term_names(t.terms) == term_names(fit.used) ? "  kept" : "");
  for (const auto& n : fit.notes) out += "# note: " + n + "\n";
  for (const auto& w : fit.warnings) out += "# warning: " + w + "\n";
  return out;
}

NcclFitRequest nccl_fit_request(const NcclCalibrateRequest& r) {
  if (r.topology.empty())
    throw InputError("--topology",
                     "--nccl-tests needs the machine the logs ran on "
                     "(a bundled name like dgx-h100, or a topology file)");
  if (r.logs.empty()) throw InputError("--nccl-tests", "no log given");
  std::optional<CollectiveOp> op;
  if (!r.collective.empty()) {
    op = nccl_tests_op(r.collective);
    if (!op)
      throw InputError("--collective", fmt::format("not a collective: \"{}\"", r.collective));
  }
  NcclFitRequest req;
  req.algorithm = r.algorithm;
  req.nccl_algo = r.nccl_algo;
  req.nccl_proto = r.nccl_proto;
  req.network = r.network;
  req.base_dir = r.base_dir;
  req.terms = parse_fit_terms(r.terms, "--terms");
  // Inline JSON like `collsim topo` takes, else a bundled name or a file.
  req.topology = r.topology.front() == '{' ? parse_json_text(r.topology, "--topology")
                                           : nlohmann::json(r.topology);
  for (const auto& file : r.logs) {
    req.logs.push_back(read_nccl_tests_log(file, {.op = op, .ranks = r.ranks}));
    if (op && req.logs.back().op != *op)
      throw InputError(
          file, fmt::format("the log measured {} (from {}), not {}", name_of(req.logs.back().op),
                            req.logs.back().op_source, name_of(*op)));
  }
  return req;
}

void write_calibration_file(const std::filesystem::path& file, const nlohmann::json& doc) {
  OutputDir dir(std::filesystem::absolute(file).parent_path());
  dir.open(file.filename().string())
      << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  dir.commit();
}

std::string calibration_date() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) t = std::atoll(epoch);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

}  // namespace collsim
