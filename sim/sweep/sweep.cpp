#include "sweep/sweep.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/units.h"
#include "nccl/nccl_model.h"
#include "plan/plan.h"
#include "simulate/run_scenario.h"

namespace collsim {

std::vector<std::int64_t> parse_sizes(const std::string& text, const std::string& step) {
  std::vector<std::int64_t> out;
  auto size_of = [](const std::string& s) {
    auto v = parse_size(s);
    if (!v || *v <= 0)
      throw InputError("--sizes", fmt::format("expected a size like \"1KiB\", got \"{}\"", s));
    return *v;
  };
  if (auto dots = text.find(".."); dots != std::string::npos) {
    const std::int64_t lo = size_of(text.substr(0, dots)), hi = size_of(text.substr(dots + 2));
    if (step.size() < 2 || step[0] != 'x')
      throw InputError("--step", "expected a factor like \"x2\"");
    const double factor = std::stod(step.substr(1));
    if (!(factor > 1)) throw InputError("--step", "the factor must be more than 1");
    if (lo > hi) throw InputError("--sizes", "the first size must not exceed the last");
    for (double v = static_cast<double>(lo); v <= hi * (1 + 1e-12); v *= factor)
      out.push_back(std::llround(v));
  } else {
    for (std::size_t a = 0; a <= text.size();) {
      std::size_t b = text.find(',', a);
      if (b == std::string::npos) b = text.size();
      out.push_back(size_of(text.substr(a, b - a)));
      a = b + 1;
    }
  }
  return out;
}

namespace {

// Where a's and b's times cross between two sizes, treating each time as a line in size.
double crossing(double x0, double x1, double a0, double a1, double b0, double b1) {
  const double d0 = a0 - b0, d1 = a1 - b1;
  if (d0 == d1) return (x0 + x1) / 2;
  return x0 + (x1 - x0) * d0 / (d0 - d1);
}

}  // namespace

SweepResult run_sweep(const Scenario& s, const SweepRequest& req,
                      const std::function<void(std::size_t, std::size_t)>& progress) {
  SweepResult out;
  for (const auto& c : s.collectives)
    if (req.collective.empty() ? &c == &s.collectives.front() : c.name == req.collective)
      out.spec = &c;
  if (!out.spec)
    throw InputError("--collective",
                     "no collective named \"" + req.collective + "\" in the scenario");
  const CollectiveSpec& base = *out.spec;
  if (base.shape.op == CollectiveOp::Barrier)
    throw InputError("--collective", "\"" + base.name +
                                         "\" is a barrier: it has no size to sweep; pick another "
                                         "with --collective");
  std::vector<int> rank_counts =
      req.rank_counts.empty() ? std::vector<int>{base.shape.ranks} : req.rank_counts;
  for (int n : rank_counts)
    if (n < 1 || n > s.topology.num_ranks())
      throw InputError(
          "--ranks", fmt::format("{} ranks; the topology has {} GPUs", n, s.topology.num_ranks()));
  std::vector<std::string> algorithms =
      req.algorithms.empty() ? algorithms_for(base.shape.op) : req.algorithms;
  if (req.algorithms.empty() && nccl_has_algorithms(base.shape.op)) algorithms.push_back("nccl");
  for (const auto& a : algorithms)
    if (a != "nccl" && !find_algorithm(base.shape.op, a))
      throw InputError("--algorithms",
                       fmt::format("no algorithm \"{}\" for {}", a, name_of(base.shape.op)));
  // Algorithms named with --algorithms must apply; of the default (all of the
  // collective's), those the planner refuses here are left out (nvls without a sharp
  // NVSwitch, or under the ideal model), judged at the first rank count and size.
  if (req.algorithms.empty())
    std::erase_if(algorithms, [&](const std::string& a) {
      if (a == "nccl") return false;
      Scenario one = s;
      CollectiveSpec c = base;
      c.algorithm = a;
      c.after.clear();
      if (!req.rank_counts.empty()) {
        c.ranks.resize(rank_counts.front());
        for (int i = 0; i < rank_counts.front(); ++i) c.ranks[i] = i;
      }
      c.shape.ranks = static_cast<int>(c.ranks.size());
      c.shape.count = req.sizes.front() / element_size(base.shape.dtype);
      c.bytes = c.shape.count * element_size(base.shape.dtype);
      c.options = find_algorithm(base.shape.op, a)->own(base.options);
      if (!req.rank_counts.empty()) c.options = c.options.for_other_ranks();
      one.collectives = {c};
      try {
        make_plan(one);
        return false;
      } catch (const InputError&) {
        return true;
      }
    });

  const bool with_nccl =
      std::find(algorithms.begin(), algorithms.end(), "nccl") != algorithms.end();
  const std::size_t total = rank_counts.size() * algorithms.size() * req.sizes.size();
  const int esize = element_size(base.shape.dtype);
  for (int n : rank_counts) {
    const std::size_t first_row = out.rows.size();
    for (const auto& a : algorithms) {
      for (std::int64_t bytes : req.sizes) {
        Scenario one = s;  // the collective alone on the scenario's network
        CollectiveSpec c = base;
        c.algorithm = a;
        c.after.clear();
        if (!req.rank_counts.empty()) {
          c.ranks.resize(n);
          for (int i = 0; i < n; ++i) c.ranks[i] = i;
        }
        c.shape.ranks = static_cast<int>(c.ranks.size());
        c.shape.count = bytes / esize;  // like nccl-tests: count = size / type size
        c.bytes = c.shape.count * esize;
        // The options this algorithm takes, as the scenario gave them; the planner
        // derives the rest (hierarchical levels from the hosts of these ranks).
        c.options = a == "nccl" ? AlgorithmOptions{} : find_algorithm(base.shape.op, a)->own(base.options);
        if (!req.rank_counts.empty()) c.options = c.options.for_other_ranks();
        // Beside NCCL's pick the others pay protocol costs too: each its fastest protocol.
        if (a != "nccl" && (with_nccl || base.algorithm == "nccl"))
          c.protocol = base.protocol.empty() || base.algorithm == "nccl" ? "auto" : base.protocol;
        if (a != "nccl") c.nccl_filter = {};
        one.collectives = {c};
        const ScenarioResult r = run_scenario(one, SimulationOptions{.record_ops = false});
        const auto& o = r.outcomes[0];
        out.rows.push_back({static_cast<int>(c.ranks.size()), a, c.bytes, c.shape.count, o.time_s,
                            o.algbw_Bps, o.busbw_Bps, false, r.labels[0]});
        if (progress) progress(out.rows.size(), total);
      }
    }
    // Winners per size, then where they change.
    const std::size_t per_alg = req.sizes.size();
    std::vector<std::size_t> best(
        per_alg);  // row index of the fastest at each size; ties to the earlier
    const auto nccl = std::find(algorithms.begin(), algorithms.end(), "nccl");
    const std::size_t nccl_index = static_cast<std::size_t>(nccl - algorithms.begin());
    for (std::size_t k = 0; k < per_alg; ++k) {
      std::optional<std::size_t> b;
      for (std::size_t a = 0; a < algorithms.size(); ++a) {
        const std::size_t i = first_row + a * per_alg + k;
        if (a != nccl_index && (!b || out.rows[i].time_s < out.rows[*b].time_s)) b = i;
      }
      best[k] = b.value_or(first_row + k);
      out.rows[best[k]].winner = b.has_value();
      if (nccl == algorithms.end() || !b) continue;
      const SweepRow& pick = out.rows[first_row + nccl_index * per_alg + k];
      out.nccl.push_back(
          {n, pick.bytes, pick.plan, out.rows[*b].plan, pick.time_s, out.rows[*b].time_s});
    }
    for (std::size_t k = 1; k < per_alg; ++k) {
      const SweepRow& lo = out.rows[best[k - 1]];
      const SweepRow& hi = out.rows[best[k]];
      if (lo.algorithm == hi.algorithm) continue;
      const std::size_t a = (best[k - 1] - first_row) / per_alg,
                        b = (best[k] - first_row) / per_alg;
      const auto& ra0 = out.rows[first_row + a * per_alg + k - 1];
      const auto& ra1 = out.rows[first_row + a * per_alg + k];
      const auto& rb0 = out.rows[first_row + b * per_alg + k - 1];
      const auto& rb1 = out.rows[first_row + b * per_alg + k];
      out.crossovers.push_back(
          {n, lo.algorithm, hi.algorithm, lo.bytes, hi.bytes,
           crossing(static_cast<double>(lo.bytes), static_cast<double>(hi.bytes), ra0.time_s,
                    ra1.time_s, rb0.time_s, rb1.time_s)});
    }
  }
  return out;
}

std::string sweep_table(const Scenario& s, const SweepResult& r) {
  const auto& c = *r.spec;
  const std::string root = is_rooted(c.shape.op) ? std::to_string(c.shape.root) : "-1";
  const std::string redop =
      is_reducing(c.shape.op) ? std::string(name_of(c.shape.reduce_op)) : "none";
  std::string out =
      fmt::format("# collsim sweep {}: {} on {} ({}), network {} (alpha {})\n", s.name,
                  name_of(c.shape.op), s.topology.name, s.topology.num_ranks(), s.network.model,
                  format_duration(to_seconds(s.network.alpha)));
  out +=
      "# time in microseconds; algbw, busbw in GB/s (1 GB = 1e9 bytes); * marks the fastest at "
      "that size\n";
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
                       row.bytes, row.count, name_of(c.shape.dtype), redop, root, row.time_s * 1e6,
                       row.algbw_Bps / 1e9, row.busbw_Bps / 1e9, row.winner ? "*" : "");
  }
  out += "#\n";
  if (!r.nccl.empty())
    out += fmt::format("# NCCL's pick (simulated) against the fastest simulated plan\n# {:>5} {:>12} {:<28} {:>12} {:<34} {:>12} {:>8}\n",
                       "ranks", "size", "nccl picks", "time", "fastest", "time", "nccl +%");
  for (const auto& x : r.nccl)
    out += fmt::format("  {:>5} {:>12} {:<28} {:>12.2f} {:<34} {:>12.2f} {:>8.1f}\n", x.ranks,
                       x.bytes, x.nccl_plan, x.nccl_s * 1e6, x.best_plan, x.best_s * 1e6,
                       x.best_s > 0 ? (x.nccl_s / x.best_s - 1) * 100 : 0.0);
  if (!r.nccl.empty()) out += "#\n";
  if (r.crossovers.empty()) out += "# no crossover: one algorithm wins at every size\n";
  for (const auto& x : r.crossovers)
    out += fmt::format("# ranks {}: {} -> {} at {} (between {} and {})\n", x.ranks, x.from, x.to,
                       format_bytes(static_cast<std::int64_t>(std::llround(x.estimate))),
                       format_bytes(x.below), format_bytes(x.above));
  return out;
}

void write_sweep_csv(std::ostream& out, const Scenario&, const SweepResult& r) {
  out << "ranks,algorithm,size,count,type,time_us,algbw_GBps,busbw_GBps,winner\n";
  for (const auto& row : r.rows)
    out << fmt::format("{},{},{},{},{},{:.6f},{:.6f},{:.6f},{}\n", row.ranks, row.algorithm,
                       row.bytes, row.count, name_of(r.spec->shape.dtype), row.time_s * 1e6,
                       row.algbw_Bps / 1e9, row.busbw_Bps / 1e9, row.winner ? 1 : 0);
}

nlohmann::json sweep_json(const Scenario& s, const SweepResult& r) {
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
                    {"plan", row.plan}});
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
  return {{"scenario", s.name},
          {"op", name_of(r.spec->shape.op)},
          {"rows", rows},
          {"crossovers", xs},
          {"nccl_vs_fastest", nccl}};
}

// write_sweep_html: sim/report/sweep_html.cpp.

}  // namespace collsim
