#include "sweep/sweep.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <thread>

#include "core/csv.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/units.h"
#include "nccl/nccl_model.h"
#include "plan/plan.h"
#include "simulate/run_scenario.h"
#include "simulate/simulated_plan.h"
#include "topology/routing.h"

namespace collsim {

namespace {

std::int64_t size_argument(const std::string& s) {
  const auto v = parse_size(s);
  if (!v || *v <= 0)
    throw InputError("--sizes", fmt::format("expected a size like \"1KiB\", got \"{}\"", s));
  if (*v > kMaxBytes)
    throw InputError(
        "--sizes", fmt::format("{} is more than the largest size, {}", s, format_bytes(kMaxBytes)));
  return *v;
}

}  // namespace

double step_factor(const std::string& step) {
  double factor = 0;
  const char* end = step.data() + step.size();
  const bool is_factor = step.size() >= 2 && step[0] == 'x' &&
                         std::from_chars(step.data() + 1, end, factor).ptr == end;
  if (!is_factor || !std::isfinite(factor))
    throw InputError("--step", fmt::format("expected a factor like \"x2\", got \"{}\"", step));
  if (!(factor > 1)) throw InputError("--step", "the factor must be more than 1");
  return factor;
}

void check_sizes(const std::vector<std::int64_t>& sizes, const std::string& where) {
  if (sizes.size() > kMaxSweepSizes)
    throw InputError(where, fmt::format("{} sizes, more than the {} a sweep takes", sizes.size(),
                                        kMaxSweepSizes));
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] <= 0 || sizes[i] > kMaxBytes)
      throw InputError(fmt::format("{}[{}]", where, i),
                       fmt::format("expected a size of 1 B to {} bytes ({}), got {}", kMaxBytes,
                                   format_bytes(kMaxBytes), sizes[i]));
}

std::vector<std::int64_t> parse_sizes(const std::string& text, const std::string& step) {
  std::vector<std::int64_t> out;
  const double factor = step_factor(step);  // a range's; checked for a list too
  if (auto dots = text.find(".."); dots != std::string::npos) {
    const std::int64_t lo = size_argument(text.substr(0, dots));
    const std::int64_t hi = size_argument(text.substr(dots + 2));
    if (lo > hi) throw InputError("--sizes", "the first size must not exceed the last");
    // Counted before any is made: a factor near 1 must not ask for billions of points.
    const double points = std::floor(std::log(static_cast<double>(hi) / lo) / std::log(factor)) + 1;
    if (points > kMaxSweepSizes)
      throw InputError("--step", fmt::format("{} from {} to {} makes {} sizes, more than the {} a "
                                             "sweep takes; use a larger factor",
                                             step, format_bytes(lo), format_bytes(hi),
                                             format_significant(points, 3), kMaxSweepSizes));
    for (double v = static_cast<double>(lo); v <= hi * (1 + 1e-12); v *= factor)
      out.push_back(std::llround(v));
  } else {
    for (std::size_t a = 0; a <= text.size();) {
      std::size_t b = text.find(',', a);
      if (b == std::string::npos) b = text.size();
      out.push_back(size_argument(text.substr(a, b - a)));
      if (out.size() > kMaxSweepSizes)
        throw InputError("--sizes",
                         fmt::format("more than the {} sizes a sweep takes", kMaxSweepSizes));
      a = b + 1;
    }
  }
  return out;
}

namespace {

// The sizes as the sweep runs them: whole elements (nccl-tests' count = size / type size),
// in increasing order, each once; sizes under one element are left out (none left: refused).
std::vector<std::int64_t> whole_elements(std::vector<std::int64_t> sizes, int element) {
  for (std::int64_t& b : sizes) b -= b % element;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::erase(sizes, 0);
  if (sizes.empty())
    throw InputError("--sizes",
                     fmt::format("no size of at least one element ({} B) to sweep", element));
  return sizes;
}

// Where a's and b's times cross between two sizes, treating each time as a line in size.
double crossing(double x0, double x1, double a0, double a1, double b0, double b1) {
  const double d0 = a0 - b0, d1 = a1 - b1;
  if (d0 == d1) return (x0 + x1) / 2;
  // Lines that do not cross between the two sizes (the winner changed as a row went over
  // its link rate, SweepRow::over_link_rate) are placed at the nearer end, not beyond it.
  return std::clamp(x0 + (x1 - x0) * d0 / (d0 - d1), x0, x1);
}

// The swept collective at one point: `a` on `n` ranks (0..n-1 unless its own), `bytes`.
CollectiveSpec point_collective(const CollectiveSpec& base, bool own_ranks, const std::string& a,
                                int n, std::int64_t bytes) {
  const int esize = element_size(base.shape.dtype);
  CollectiveSpec c = base;
  c.algorithm = a;
  c.after.clear();
  if (!own_ranks) {
    c.ranks.resize(n);
    for (int i = 0; i < n; ++i) c.ranks[i] = i;
  }
  c.shape.ranks = static_cast<int>(c.ranks.size());
  c.shape.count = bytes / esize;  // like nccl-tests: count = size / type size
  c.bytes = c.shape.count * esize;
  // The options this algorithm takes, as the scenario gave them; the planner
  // derives the rest (hierarchical levels from the hosts of these ranks).
  c.options =
      a == "nccl" ? AlgorithmOptions{} : find_algorithm(base.shape.op, a)->own(base.options);
  if (!own_ranks) c.options = c.options.for_other_ranks();
  return c;
}

SweepAbout about_of(const Scenario& s, const CollectiveSpec& c) {
  SweepAbout a;
  a.scenario = s.name;
  a.topology = s.topology.name;
  a.network = std::string(name_of(s.network.model));
  a.gpus = s.topology.num_ranks();
  a.alpha = s.network.alpha;
  a.collective = c.name;
  a.op = name_of(c.shape.op);
  a.algorithm = c.algorithm;
  a.dtype = name_of(c.shape.dtype);
  if (is_reducing(c.shape.op)) a.redop = name_of(c.shape.reduce_op);
  if (is_rooted(c.shape.op)) a.root = c.shape.root;
  return a;
}

// Why the planner refuses `algorithm` for the swept collective: at each rank count's first
// size, or at every size; nothing when it takes them all. Every rank count: judged at the
// first only, an algorithm another count refuses (hierarchical on 6 ranks of hosts of 4)
// stopped the sweep or not depending on the order of --ranks. Planned as a streamed run
// plans (no schedule generated where nothing is left to choose), so asking costs little.
std::optional<std::string> refusal(const Scenario& s, const CollectiveSpec& base,
                                   const SweepPlan& plan, const std::string& algorithm,
                                   bool every_size) {
  Router router(s.topology, s.network.routing);
  const CostFunction cost = simulated_alone(s, router);
  const std::size_t sizes = every_size ? plan.sizes.size() : 1;
  const bool one_point = plan.rank_counts.size() * sizes == 1;
  for (const int ranks : plan.rank_counts)
    for (std::size_t k = 0; k < sizes; ++k) {
      const std::int64_t bytes = plan.sizes[k];
      Scenario one = s;
      one.collectives = {point_collective(base, plan.own_ranks, algorithm, ranks, bytes)};
      try {
        make_plan(one, router, cost, ScheduleHolding::Streamed);
      } catch (const InputError& e) {
        if (one_point) return e.message();
        return fmt::format("at {} ranks and {}: {}", ranks, format_bytes(bytes), e.message());
      }
    }
  return std::nullopt;
}

// A row's plan without what held its time past its ops' (held_label): its time on the links.
std::string on_the_links(std::string plan) {
  for (const HeldBy h : {HeldBy::NcclModel, HeldBy::HostIssue})
    if (plan.ends_with(held_label(h))) plan.resize(plan.size() - held_label(h).size());
  return plan;
}

// Each value once: a repeated rank count or algorithm would run its points twice.
template <class T>
void refuse_repeats(const char* option, const std::vector<T>& values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (std::find(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values[i]) !=
        values.begin() + static_cast<std::ptrdiff_t>(i))
      throw InputError(option, fmt::format("{} is given twice", values[i]));
}

}  // namespace

SweepPoint SweepPlan::point(std::size_t k) const {
  const std::size_t per_ranks = algorithms.size() * sizes.size();
  return {rank_counts.at(k / per_ranks), algorithms[k / sizes.size() % algorithms.size()],
          sizes[k % sizes.size()]};
}

SweepPlan plan_sweep(const Scenario& s, const SweepRequest& req) {
  if (s.collectives.empty())
    throw InputError("collectives",
                     "sweep runs the scenario's collectives and it has only a "
                     "\"workload\"; `collsim workload-sweep` sweeps that");
  SweepPlan plan;
  const CollectiveSpec* found = nullptr;
  for (const auto& c : s.collectives)
    if (req.collective.empty() ? &c == &s.collectives.front() : c.name == req.collective)
      found = &c;
  if (!found)
    throw InputError("--collective",
                     "no collective named \"" + req.collective + "\" in the scenario");
  const CollectiveSpec& base = *found;
  if (base.shape.op == CollectiveOp::Barrier)
    throw InputError("--collective", "\"" + base.name +
                                         "\" is a barrier: it has no size to sweep; pick another "
                                         "with --collective");
  if (base.shape.matrix)
    throw InputError("--collective",
                     "\"" + base.name +
                         "\" is a routed all-to-all: its bytes come from its routing, so it has "
                         "no size to sweep; pick another with --collective");
  if (req.sizes.empty()) throw InputError("--sizes", "no sizes to sweep");
  plan.about = about_of(s, base);
  plan.collective = static_cast<std::size_t>(found - s.collectives.data());
  plan.own_ranks = req.rank_counts.empty();
  plan.sizes = whole_elements(req.sizes, element_size(base.shape.dtype));
  plan.rank_counts = plan.own_ranks ? std::vector<int>{base.shape.ranks} : req.rank_counts;
  for (int n : plan.rank_counts)
    if (n < 1 || n > s.topology.num_ranks())
      throw InputError(
          "--ranks", fmt::format("{} ranks; the topology has {} GPUs", n, s.topology.num_ranks()));
  refuse_repeats("--ranks", plan.rank_counts);
  // Each point runs alone: its data must be what a scenario of it could hold.
  for (int n : plan.rank_counts) {
    const double data =
        static_cast<double>(plan.sizes.back()) * (plan.own_ranks ? base.ranks.size() : n);
    for (const std::string& problem : {data_problem(data), packet_count_problem(s.network, data)})
      if (!problem.empty())
        throw InputError("--sizes", fmt::format("{} at {} ranks: {}",
                                                format_bytes(plan.sizes.back()), n, problem));
  }
  if (is_rooted(base.shape.op))
    for (int n : plan.rank_counts)
      if (base.shape.root >= n)
        throw InputError("--ranks", fmt::format("\"{}\" is rooted at rank {}, which {} ranks do "
                                                "not hold",
                                                base.name, base.shape.root, n));
  std::vector<std::string>& algorithms = plan.algorithms;
  algorithms = req.algorithms.empty() ? algorithms_for(base.shape.op) : req.algorithms;
  if (req.algorithms.empty() && nccl_has_algorithms(base.shape.op)) algorithms.push_back("nccl");
  refuse_repeats("--algorithms", algorithms);
  for (const auto& a : algorithms)
    if (a != "nccl" && !find_algorithm(base.shape.op, a))
      throw InputError("--algorithms",
                       fmt::format("no algorithm \"{}\" for {}", a, name_of(base.shape.op)));
  // Algorithms named with --algorithms must apply; of the default (all of the
  // collective's), those the planner refuses here are left out, and the reports say why:
  // nvls without a sharp NVSwitch, or under the ideal model. Each is judged at every rank
  // count's first size; NCCL's pick, which changes with size, at every point.
  if (req.algorithms.empty())
    std::erase_if(algorithms, [&](const std::string& a) {
      const auto why = refusal(s, base, plan, a, a == "nccl");
      if (why) plan.left_out.push_back(a + ": " + *why);
      return why.has_value();
    });
  if (algorithms.empty())
    throw InputError("--algorithms", fmt::format("no algorithm runs {} here: {}", base.name,
                                                 fmt::join(plan.left_out, "; ")));
  return plan;
}

bool SweepPlan::others_on_nccl_protocols() const {
  const auto nccl = [](const std::string& a) { return a == "nccl"; };
  return (about.algorithm == "nccl" || std::any_of(algorithms.begin(), algorithms.end(), nccl)) &&
         !std::all_of(algorithms.begin(), algorithms.end(), nccl);
}

SweepRow run_sweep_point(const Scenario& s, const SweepPlan& plan, std::size_t k) {
  const SweepPoint p = plan.point(k);
  const CollectiveSpec& base = s.collectives.at(plan.collective);
  Scenario one = s;  // the collective alone on the scenario's network
  CollectiveSpec c = point_collective(base, plan.own_ranks, p.algorithm, p.ranks, p.bytes);
  if (p.algorithm != "nccl" && plan.others_on_nccl_protocols())
    c.protocol = base.protocol.empty() || base.algorithm == "nccl" ? "auto" : base.protocol;
  if (p.algorithm != "nccl") c.nccl_filter = {};
  one.collectives = {c};
  const ScenarioResult r = run_scenario(one, SimulationOptions{.record_ops = false});
  const auto& o = r.outcomes[0];
  const bool over = s.network.model == NetworkModelKind::Ideal &&
                    link_floor_s(one.topology, r.sim.links) > o.ops_time_s * (1 + 1e-9);
  return {static_cast<int>(c.ranks.size()),
          p.algorithm,
          c.bytes,
          c.shape.count,
          o.time_s,
          o.algbw_Bps,
          o.busbw_Bps,
          false,
          r.labels[0] + std::string(o.held_by == HeldBy::NcclModel ? held_label(o.held_by) : ""),
          o.ops_time_s,
          over};
}

std::vector<SweepRow> run_sweep_points(const Scenario& s, const SweepPlan& plan,
                                       std::span<const std::size_t> points, int threads,
                                       const SweepProgress& progress) {
  if (points.empty()) return {};  // an MPI rank beyond the points, a shard of none
  std::vector<std::optional<SweepRow>> rows(points.size());
  std::vector<std::exception_ptr> errors(points.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex progress_mutex;
  std::size_t done = 0;
  // Points are taken in order, so when one fails every earlier one has been taken
  // and finishes: the earliest error is the one a single thread would have met.
  auto work = [&] {
    for (std::size_t i; !failed && (i = next++) < points.size();) {
      try {
        rows[i] = run_sweep_point(s, plan, points[i]);
      } catch (...) {
        errors[i] = std::current_exception();
        failed = true;
        continue;
      }
      if (!progress) continue;
      std::lock_guard lock(progress_mutex);
      progress(++done, points.size());
    }
  };
  const std::size_t helpers =
      std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), points.size()) - 1;
  {
    std::vector<std::jthread> pool;
    for (std::size_t t = 0; t < helpers; ++t) pool.emplace_back(with_stop_token(work));
    work();
  }  // joined
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<SweepRow> out;
  out.reserve(rows.size());
  for (auto& r : rows) out.push_back(std::move(*r));
  return out;
}

namespace {

// The fastest row at each size of rank count plan.rank_counts[ri] (ties to the earlier
// algorithm); empty where no algorithm counts (only "nccl", left out).
std::vector<std::optional<std::size_t>> fastest_rows(const SweepPlan& plan,
                                                     const std::vector<SweepRow>& rows,
                                                     std::size_t ri, bool with_nccl) {
  const auto& algorithms = plan.algorithms;
  const std::size_t per_alg = plan.sizes.size(), first_row = ri * algorithms.size() * per_alg;
  std::vector<std::optional<std::size_t>> best(per_alg);
  for (std::size_t k = 0; k < per_alg; ++k)
    for (std::size_t a = 0; a < algorithms.size(); ++a) {
      const std::size_t i = first_row + a * per_alg + k;
      if ((with_nccl || algorithms[a] != "nccl") && !rows[i].over_link_rate &&
          (!best[k] || rows[i].time_s < rows[*best[k]].time_s))
        best[k] = i;
    }
  return best;
}

}  // namespace

std::vector<Crossover> sweep_crossovers(const SweepPlan& plan, const std::vector<SweepRow>& rows,
                                        std::size_t ri, bool with_nccl) {
  const std::size_t per_alg = plan.sizes.size(), first_row = ri * plan.algorithms.size() * per_alg;
  const auto best = fastest_rows(plan, rows, ri, with_nccl);
  std::vector<Crossover> out;
  for (std::size_t k = 1; k < per_alg; ++k) {
    if (!best[k - 1] || !best[k]) continue;
    const SweepRow& lo = rows[*best[k - 1]];
    const SweepRow& hi = rows[*best[k]];
    if (lo.algorithm == hi.algorithm) continue;
    const std::size_t a = (*best[k - 1] - first_row) / per_alg,
                      b = (*best[k] - first_row) / per_alg;
    const auto& ra0 = rows[first_row + a * per_alg + k - 1];
    const auto& ra1 = rows[first_row + a * per_alg + k];
    const auto& rb0 = rows[first_row + b * per_alg + k - 1];
    const auto& rb1 = rows[first_row + b * per_alg + k];
    out.push_back({plan.rank_counts[ri], lo.algorithm, hi.algorithm, lo.bytes, hi.bytes,
                   crossing(static_cast<double>(lo.bytes), static_cast<double>(hi.bytes),
                            ra0.time_s, ra1.time_s, rb0.time_s, rb1.time_s)});
  }
  return out;
}

SweepResult finish_sweep(SweepPlan plan, std::vector<SweepRow> rows) {
  SweepResult out;
  out.plan = std::move(plan);
  out.rows = std::move(rows);
  if (out.rows.size() != out.plan.points())
    throw std::logic_error(
        fmt::format("finish_sweep: {} rows for {} points", out.rows.size(), out.plan.points()));
  const auto& algorithms = out.plan.algorithms;
  const std::size_t per_alg = out.plan.sizes.size();
  const auto nccl = std::find(algorithms.begin(), algorithms.end(), "nccl");
  const std::size_t nccl_index = static_cast<std::size_t>(nccl - algorithms.begin());
  for (std::size_t ri = 0; ri < out.plan.rank_counts.size(); ++ri) {
    const int n = out.plan.rank_counts[ri];
    const std::size_t first_row = ri * algorithms.size() * per_alg;
    // Winners per size (NCCL's pick is compared with them, not one of them).
    const auto best = fastest_rows(out.plan, out.rows, ri, false);
    for (std::size_t k = 0; k < per_alg; ++k) {
      if (!best[k]) continue;
      out.rows[*best[k]].winner = true;
      if (nccl == algorithms.end()) continue;
      const SweepRow& pick = out.rows[first_row + nccl_index * per_alg + k];
      const SweepRow& b = out.rows[*best[k]];
      // On the links, as the others ran: where NCCL's estimate holds the pick, the same
      // algorithm among the others would otherwise look faster than NCCL's pick of it.
      out.nccl.push_back(
          {n, pick.bytes, on_the_links(pick.plan), b.plan, pick.ops_time_s, b.time_s});
    }
    for (auto& x : sweep_crossovers(out.plan, out.rows, ri, false))
      out.crossovers.push_back(std::move(x));
  }
  return out;
}

SweepResult run_sweep(const Scenario& s, const SweepRequest& req, const SweepProgress& progress,
                      int threads) {
  SweepPlan plan = plan_sweep(s, req);
  std::vector<std::size_t> all(plan.points());
  std::iota(all.begin(), all.end(), std::size_t{0});
  std::vector<SweepRow> rows = run_sweep_points(s, plan, all, threads, progress);
  return finish_sweep(std::move(plan), std::move(rows));
}

const MeasuredPoint* measured_at(const SweepResult& r, int ranks, std::int64_t bytes) {
  for (const auto& m : r.measured)
    if (m.ranks == ranks && m.bytes == bytes) return &m;
  return nullptr;
}

std::string sweep_table(const SweepResult& r) {
  const SweepAbout& about = r.plan.about;
  const std::string root = std::to_string(about.root);
  const std::string& redop = about.redop;
  std::string out = fmt::format("# collsim sweep {}: {} on {} ({}), network {} (alpha {})\n",
                                about.scenario, about.op, about.topology, about.gpus, about.network,
                                format_duration(to_seconds(about.alpha)));
  out +=
      "# time in microseconds; algbw, busbw in GB/s (1 GB = 1e9 bytes); * marks the fastest at "
      "that size\n";
  for (const auto& why : r.plan.left_out) out += fmt::format("# left out: {}\n", why);
  // Said, as the plan column says per row: such points differ from a run without a protocol.
  if (r.plan.others_on_nccl_protocols())
    out +=
        "# as NCCL runs them, every algorithm runs on NCCL's protocols, each at its fastest of "
        "LL, LL128 and Simple (or the scenario's protocol): faster or slower than collsim run "
        "of it without a protocol\n";
  if (std::any_of(r.rows.begin(), r.rows.end(),
                  [](const SweepRow& row) { return row.over_link_rate; }))
    out +=
        "# ! marks a time below what its busiest link needs for its bytes at full rate: the ideal "
        "model gives every transfer its links to itself (flow and packet share them); never the "
        "fastest\n";
  int ranks = -1;
  std::string algorithm;
  for (const auto& row : r.rows) {
    if (row.ranks != ranks || row.algorithm != algorithm) {
      ranks = row.ranks;
      algorithm = row.algorithm;
      out += fmt::format(
          "#\n# ranks {}, algorithm {}\n# {:>12} {:>12} {:>9} {:>6} {:>5} {:>12} {:>9} {:>9}\n",
          ranks, algorithm, "size", "count", "type", "redop", "root", "time", "algbw", "busbw");
    }
    out += fmt::format("  {:>12} {:>12} {:>9} {:>6} {:>5} {:>12.2f} {:>9.2f} {:>9.2f} {}\n",
                       row.bytes, row.count, about.dtype, redop, root, row.time_s * 1e6,
                       row.algbw_Bps / 1e9, row.busbw_Bps / 1e9,
                       row.winner           ? "*"
                       : row.over_link_rate ? "!"
                                            : "");
  }
  out += "#\n";
  // Columns as wide as their longest plan ("nccl: ring/LL128/24ch (NCCL's estimate)").
  std::size_t wn = 28, wb = 34;
  for (const auto& x : r.nccl) {
    wn = std::max(wn, x.nccl_plan.size());
    wb = std::max(wb, x.best_plan.size());
  }
  if (!r.nccl.empty())
    out += fmt::format(
        "# NCCL's pick against the fastest simulated plan, both on the links (without NCCL's "
        "estimate)\n# {:>5} {:>12} {:<{}} {:>12} {:<{}} {:>12} {:>8}\n",
        "ranks", "size", "nccl picks", wn, "time", "fastest", wb, "time", "nccl +%");
  for (const auto& x : r.nccl)
    out += fmt::format("  {:>5} {:>12} {:<{}} {:>12.2f} {:<{}} {:>12.2f} {:>8.1f}\n", x.ranks,
                       x.bytes, x.nccl_plan, wn, x.nccl_s * 1e6, x.best_plan, wb, x.best_s * 1e6,
                       x.best_s > 0 ? (x.nccl_s / x.best_s - 1) * 100 : 0.0);
  if (!r.nccl.empty()) out += "#\n";
  const bool ranked = std::any_of(r.plan.algorithms.begin(), r.plan.algorithms.end(),
                                  [](const std::string& a) { return a != "nccl"; });
  if (!ranked)
    out += "# no crossover: only NCCL's pick ran, and its rows are compared, never ranked\n";
  else if (r.crossovers.empty())
    out += "# no crossover: one algorithm wins at every size\n";
  for (const auto& x : r.crossovers)
    out += fmt::format("# ranks {}: {} -> {} at {} (between {} and {})\n", x.ranks, x.from, x.to,
                       format_bytes(static_cast<std::int64_t>(std::llround(x.estimate))),
                       format_bytes(x.below), format_bytes(x.above));
  return out;
}

void write_sweep_csv(std::ostream& out, const SweepResult& r) {
  // plan: what ran at that point (NCCL's pick changes with size: "nccl: ring/LL/24ch").
  // measured_us only with a measured log, so that sweeps without one read as before.
  const bool measured = !r.measured.empty();
  out << "ranks,algorithm,size,count,type,time_us,algbw_GBps,busbw_GBps,winner,plan,"
         "over_link_rate"
      << (measured ? ",measured_us\n" : "\n");
  for (const auto& row : r.rows) {
    out << fmt::format("{},{},{},{},{},{:.6f},{:.6f},{:.6f},{},{},{}", row.ranks,
                       csv_field(row.algorithm), row.bytes, row.count, r.plan.about.dtype,
                       row.time_s * 1e6, row.algbw_Bps / 1e9, row.busbw_Bps / 1e9,
                       row.winner ? 1 : 0, csv_field(row.plan), row.over_link_rate ? 1 : 0);
    if (!measured)
      out << "\n";
    else if (const MeasuredPoint* m = measured_at(r, row.ranks, row.bytes))
      out << fmt::format(",{:.6f}\n", m->time_s * 1e6);
    else
      out << ",\n";
  }
}

nlohmann::json sweep_json(const SweepResult& r) {
  nlohmann::json rows = nlohmann::json::array(), xs = nlohmann::json::array();
  for (const auto& row : r.rows)
    rows.push_back({{"ranks", row.ranks},
                    {"algorithm", row.algorithm},
                    {"bytes", row.bytes},
                    {"count", row.count},
                    {"time_s", row.time_s},
                    {"algbw_GBps", row.algbw_Bps / 1e9},
                    {"busbw_GBps", row.busbw_Bps / 1e9},
                    {"winner", row.winner},
                    {"over_link_rate", row.over_link_rate},
                    {"plan", row.plan}});
  if (!r.measured.empty())  // null where the log has no such size
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
      const MeasuredPoint* m = measured_at(r, r.rows[i].ranks, r.rows[i].bytes);
      rows[i]["measured_us"] = m ? nlohmann::json(m->time_s * 1e6) : nlohmann::json(nullptr);
    }
  for (const auto& x : r.crossovers)
    xs.push_back({{"ranks", x.ranks},
                  {"from", x.from},
                  {"to", x.to},
                  {"below_bytes", x.below},
                  {"above_bytes", x.above},
                  {"estimate_bytes", x.estimate}});
  nlohmann::json nccl = nlohmann::json::array();
  for (const auto& x : r.nccl)
    nccl.push_back({{"ranks", x.ranks},
                    {"bytes", x.bytes},
                    {"nccl_plan", x.nccl_plan},
                    {"nccl_time_s", x.nccl_s},
                    {"fastest_plan", x.best_plan},
                    {"fastest_time_s", x.best_s}});
  return {{"scenario", r.plan.about.scenario},
          {"op", r.plan.about.op},
          {"rows", rows},
          {"crossovers", xs},
          {"nccl_vs_fastest", nccl},
          {"left_out", r.plan.left_out}};
}

// write_sweep_html: sim/report/sweep_html.cpp.

}  // namespace collsim
