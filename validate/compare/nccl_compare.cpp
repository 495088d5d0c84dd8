#include "validate/compare/nccl_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/csv.h"
#include "core/error.h"
#include "core/units.h"
#include "report/reports.h"
#include "schedule/algorithms.h"
#include "simulate/run_scenario.h"

namespace collsim {
namespace {

constexpr std::int64_t kKiB = 1024, kMiB = 1024 * 1024;
constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();

std::string range_label(std::int64_t lo, std::int64_t hi) {
  if (lo == 0) return fmt::format("below {}", format_bytes(hi + 1));
  if (hi == kNoLimit) return fmt::format("above {}", format_bytes(lo - 1));
  return fmt::format("{} to {}", format_bytes(lo), format_bytes(hi));
}

void check_log_matches(const CollectiveSpec& base, const NcclTestsLog& log) {
  if (log.op != base.shape.op)
    throw InputError(
        "--nccl-tests",
        fmt::format("{} measured {} (from {}); the scenario's collective \"{}\" is "
                    "{}: pick another with --collective{}",
                    log.file, name_of(log.op), log.op_source, base.name, name_of(base.shape.op),
                    log.op_from == OpSource::FileName
                        ? fmt::format(", or, if the log measured {}, say so in its file "
                                      "name: it has no \"# Collective test starting\" line "
                                      "to tell",
                                      name_of(base.shape.op))
                        : ""));
  if (log.ranks != static_cast<int>(base.ranks.size()))
    throw InputError("--nccl-tests",
                     fmt::format("{} ran on {} GPUs (from {}); the scenario's collective \"{}\" "
                                 "has {} ranks: give it {} (\"ranks\") or compare a log of {}",
                                 log.file, log.ranks, log.ranks_source, base.name,
                                 base.ranks.size(), log.ranks, base.ranks.size()));
}

}  // namespace

const CollectiveSpec& pick_collective(const Scenario& s, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& c : s.collectives) {
    if (c.name == name) return c;
    names.push_back(c.name);
  }
  if (name.empty() && s.collectives.size() == 1) return s.collectives.front();
  throw InputError("--collective",
                   name.empty() ? fmt::format("the scenario has {} collectives ({}): name one",
                                              names.size(), fmt::join(names, ", "))
                                : fmt::format("no collective named \"{}\" in the scenario ({})",
                                              name, fmt::join(names, ", ")));
}

CollectiveSpec sized_like(const CollectiveSpec& base, const NcclTestsRow& row) {
  CollectiveSpec c = base;
  c.after.clear();
  c.shape.dtype = nccl_tests_dtype(row.type).value_or(base.shape.dtype);
  if (auto op = nccl_tests_reduce_op(row.redop)) c.shape.reduce_op = *op;
  if (is_rooted(c.shape.op) && row.root >= 0 && row.root < c.shape.ranks) c.shape.root = row.root;
  const int esize = element_size(c.shape.dtype);
  c.shape.count = row.bytes / esize;  // like nccl-tests: count = size / type size
  c.bytes = c.shape.count * esize;
  return c;
}

SizedRun simulate_alone(const Scenario& s, const CollectiveSpec& c) {
  Scenario one = s;
  one.collectives = {c};
  one.collectives[0].after.clear();
  const ScenarioResult r = run_scenario(one, SimulationOptions{.record_ops = false});
  SizedRun out;
  out.time_s = r.outcomes[0].time_s;
  out.busbw_Bps = r.outcomes[0].busbw_Bps;
  const Schedule& sched = *r.schedules[0];
  for (const Op& op : sched.ops)
    if (!op.is_local()) out.transfer_bytes = std::max(out.transfer_bytes, sched.bytes(op));
  out.plan = r.labels[0];
  out.algorithm = r.resolved[0].algorithm;
  out.held_by = r.outcomes[0].held_by;
  out.plan += held_label(out.held_by);
  return out;
}

namespace {

// Mean of |error_pct| over the rows `keep` takes; their number in *count.
template <class Keep>
double mape_where(const std::vector<NcclCompareRow>& rows, Keep keep, int* count) {
  double sum = 0;
  int n = 0;
  for (const auto& r : rows)
    if (keep(r)) {
      sum += std::fabs(r.error_pct);
      ++n;
    }
  if (count) *count = n;
  return n ? sum / n : 0;
}

}  // namespace

double mape_between(const std::vector<NcclCompareRow>& rows, std::int64_t lo, std::int64_t hi,
                    int* count) {
  return mape_where(
      rows, [&](const NcclCompareRow& r) { return r.bytes >= lo && r.bytes <= hi; }, count);
}

NcclComparison compare_nccl_log(const Scenario& s, const CollectiveSpec& base,
                                const NcclTestsLog& log, std::int64_t min_bytes,
                                std::int64_t max_bytes) {
  check_log_matches(base, log);
  Scenario launched = s;
  if (!s.launch) set_launch(launched, launch_of(log));
  NcclComparison out;
  out.launch = *launched.launch;
  out.scenario = s.name;
  out.collective = base.name;
  out.algorithm = base.algorithm;
  out.nccl_filtered = !base.nccl_filter.algorithms.empty();
  out.nccl_proto_filtered = !base.nccl_filter.protocols.empty();
  out.op = base.shape.op;
  out.ranks = log.ranks;
  out.log = std::make_shared<const NcclTestsLog>(log);
  out.device_mismatch = device_mismatch(log, s.topology);
  out.calibrations = s.calibrations;
  for (const NcclTestsRow& row : log.rows) {
    if (row.bytes < min_bytes || row.bytes > max_bytes) continue;
    const CollectiveSpec c = sized_like(base, row);
    if (c.bytes == 0) {  // nothing to time (the parser refuses a size timed at 0)
      ++out.zero_byte_rows;
      continue;
    }
    const SizedRun run = simulate_alone(launched, c);
    const double measured = row.out_of_place.time_us * 1e-6;
    out.rows.push_back({row.bytes, run.time_s, measured, (run.time_s - measured) / measured * 100,
                        run.busbw_Bps / 1e9, row.out_of_place.busbw_GBps, run.plan, run.held_by,
                        row.in_place ? row.in_place->time_us * 1e-6 : 0, row.disturbed(),
                        row.wrong()});
  }
  if (out.rows.empty()) {
    const bool all_sizes = min_bytes <= 0 && max_bytes >= kNoLimit;
    if (all_sizes)  // every row moved no bytes (all-gather, reduce-scatter at the smallest)
      throw InputError(log.file, "no size to compare: every row is of zero bytes");
    throw InputError("--sizes", fmt::format("no size of {} in the range asked for", log.file));
  }
  out.mape_pct = mape_between(out.rows, 0, kNoLimit);
  const std::pair<std::int64_t, std::int64_t> ranges[] = {
      {0, 64 * kKiB - 1}, {64 * kKiB, 4 * kMiB}, {4 * kMiB + 1, kNoLimit}};
  for (const auto& [lo, hi] : ranges) {
    SizeRangeError e{range_label(lo, hi), lo, hi};
    e.mape_pct = mape_between(out.rows, lo, hi, &e.sizes);
    if (e.sizes) out.ranges.push_back(e);
  }
  out.steady_mape_pct = mape_where(
      out.rows, [](const NcclCompareRow& r) { return !r.disturbed && r.wrong == 0; },
      &out.steady_sizes);
  return out;
}

namespace {

// What the log says NCCL was held to (`env`'s `value`), and, where the scenario's collective
// still lets NCCL pick from all (`open`), the field that would hold it alike.
std::string held_line(std::string_view env, const std::string& value, std::string_view field,
                      bool open) {
  if (value.empty()) return "";
  return fmt::format("# the log ran with {}={}{}\n", env, value,
                     open ? fmt::format("; the scenario's collective lets NCCL pick from all "
                                        "(set \"{}\" to compare like with like)",
                                        field)
                          : "");
}

}  // namespace

std::string nccl_comparison_table(const NcclComparison& c) {
  const NcclTestsLog& log = *c.log;
  std::string out = fmt::format(
      "# collsim compare {}: \"{}\" ({} {}, {} ranks) against nccl-tests log {} ({} on {} GPUs, "
      "{}GPU count from {}{})\n",
      c.scenario, c.collective, name_of(c.op), c.algorithm, c.ranks, log.file, name_of(log.op),
      log.ranks,
      log.op_from == OpSource::Header ? "" : fmt::format("collective from {}, ", log.op_source),
      log.ranks_source, log.nccl_version.empty() ? "" : ", NCCL " + log.nccl_version);
  out += fmt::format("# launch: {}, from {}\n", c.launch.describe(), c.launch.source);
  for (const std::string& file : c.calibrations) out += "# calibration: " + file + "\n";
  for (const std::string& note : log.notes) out += "# note: " + note + "\n";
  if (!c.device_mismatch.empty())
    out += "# warning: " + c.device_mismatch + ": the comparison is of two machines\n";
  out +=
      held_line("NCCL_ALGO", log.nccl_algo, "nccl_algo", c.algorithm == "nccl" && !c.nccl_filtered);
  out += held_line("NCCL_PROTO", log.nccl_proto, "nccl_proto",
                   c.algorithm == "nccl" && !c.nccl_proto_filtered);
  out +=
      "# measured: the log's out-of-place columns; error = (simulated - measured) / measured;\n"
      "# simulated: what ran at that size; (NCCL's estimate): NCCL's own model of its pick\n"
      "# outlasted the ops on the links and stands; (host issue): the launch mode's floor\n";
  out += fmt::format("# {:>12} {:>14} {:>14} {:>9} {:>12} {:>12}  {}\n", "bytes", "simulated us",
                     "measured us", "error", "sim busbw", "meas busbw", "simulated");
  for (const auto& r : c.rows)
    out += fmt::format(
        "  {:>12} {:>14.2f} {:>14.2f} {:>8.1f}% {:>12.2f} {:>12.2f}  {}{}{}\n", r.bytes,
        r.simulated_s * 1e6, r.measured_s * 1e6, r.error_pct, r.simulated_busbw_GBps,
        r.measured_busbw_GBps, r.plan,
        r.disturbed ? fmt::format(" [disturbed: in place {:.2f} us]", r.in_place_s * 1e6) : "",
        r.wrong > 0 ? fmt::format(" [failed nccl-tests' check: {} wrong]", r.wrong) : "");
  out += fmt::format("# MAPE {:.1f}% over {} sizes ({} to {}), out-of-place times\n", c.mape_pct,
                     c.rows.size(), format_bytes(c.rows.front().bytes),
                     format_bytes(c.rows.back().bytes));
  for (const auto& e : c.ranges)
    out += fmt::format("#   {}: {:.1f}% ({} sizes)\n", e.label, e.mape_pct, e.sizes);
  const auto disturbed = std::count_if(c.rows.begin(), c.rows.end(),
                                       [](const NcclCompareRow& r) { return r.disturbed; });
  const auto failed = std::count_if(c.rows.begin(), c.rows.end(),
                                    [](const NcclCompareRow& r) { return r.wrong > 0; });
  if (c.steady_sizes == 0)
    out += fmt::format(
        "#   no MAPE over undisturbed sizes: none has out-of-place and in-place times that agree "
        "within {:.0f}%{}\n",
        (kColumnsAgree - 1) * 100, failed > 0 ? " and passed nccl-tests' check" : "");
  else if (c.steady_sizes < static_cast<int>(c.rows.size()))
    out += fmt::format(
        "#   {:.1f}% over the {} sizes whose out-of-place and in-place times agree within "
        "{:.0f}%{}; {} disturbed (the two times of one size measure the same kernels){}\n",
        c.steady_mape_pct, c.steady_sizes, (kColumnsAgree - 1) * 100,
        failed > 0 ? " and that passed nccl-tests' check" : "", disturbed,
        failed > 0 ? fmt::format(", {} failed the check", failed) : "");
  if (c.zero_byte_rows > 0)
    out += fmt::format("# {} zero-byte row{} left out (nothing to time)\n", c.zero_byte_rows,
                       c.zero_byte_rows == 1 ? "" : "s");
  return out;
}

void write_nccl_comparison_csv(std::ostream& out, const NcclComparison& c) {
  out << "bytes,simulated_us,measured_us,error_pct,simulated_busbw_GBps,measured_busbw_GBps,"
         "simulated_plan,disturbed,wrong\n";
  for (const auto& r : c.rows)
    out << fmt::format("{},{:.6f},{:.6f},{:.4f},{:.6f},{:.6f},{},{},{}\n", r.bytes,
                       r.simulated_s * 1e6, r.measured_s * 1e6, r.error_pct, r.simulated_busbw_GBps,
                       r.measured_busbw_GBps, csv_field(r.plan), r.disturbed ? 1 : 0, r.wrong);
}

nlohmann::json nccl_comparison_json(const NcclComparison& c) {
  const NcclTestsLog& log = *c.log;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows)
    rows.push_back(
        {{"bytes", r.bytes},
         {"simulated_s", r.simulated_s},
         {"measured_s", r.measured_s},
         {"error_pct", r.error_pct},
         {"simulated_busbw_GBps", r.simulated_busbw_GBps},
         {"measured_busbw_GBps", r.measured_busbw_GBps},
         {"simulated_plan", r.plan},
         {"held_by", held_json(r.held_by)},
         {"in_place_s", r.in_place_s > 0 ? nlohmann::json(r.in_place_s) : nlohmann::json()},
         {"disturbed", r.disturbed},
         {"wrong", r.wrong}});
  nlohmann::json ranges = nlohmann::json::array();
  for (const auto& e : c.ranges)
    ranges.push_back(
        {{"label", e.label},
         {"min_bytes", e.min_bytes},
         {"max_bytes", e.max_bytes == kNoLimit ? nlohmann::json() : nlohmann::json(e.max_bytes)},
         {"sizes", e.sizes},
         {"mape_pct", e.mape_pct}});
  return {{"scenario", c.scenario},
          {"collective", c.collective},
          {"op", name_of(c.op)},
          {"algorithm", c.algorithm},
          {"launch",
           {{"gpus_per_process", c.launch.gpus_per_process},
            {"issue_per_gpu_s", to_seconds(c.launch.issue_per_gpu)},
            {"from", c.launch.source}}},
          {"ranks", c.ranks},
          {"log",
           {{"file", log.file},
            {"op", name_of(log.op)},
            {"op_from", log.op_source},
            {"gpus", log.ranks},
            {"gpus_from", log.ranks_source},
            {"nccl_version", log.nccl_version},
            {"notes", log.notes},
            {"device", log.device}}},
          {"device_mismatch", c.device_mismatch},
          {"measured_column", "out_of_place"},
          {"rows", rows},
          {"mape_pct", c.mape_pct},
          {"ranges", ranges},
          {"steady",
           {{"columns_agree_within", kColumnsAgree},
            {"sizes", c.steady_sizes},
            // null: no size undisturbed, no error to average (0 would read as a perfect fit)
            {"mape_pct", c.steady_sizes > 0 ? nlohmann::json(c.steady_mape_pct) : nullptr}}},
          {"zero_byte_rows_left_out", c.zero_byte_rows},
          {"calibrations", c.calibrations}};
}

NcclComparison compare_with_nccl_log(const Scenario& s, const NcclCompareRequest& request) {
  require_collectives(s);
  const CollectiveSpec& base = pick_collective(s, request.collective);
  // The scenario's collective only where the log says nothing: compare_nccl_log refuses a
  // log of another collective or GPU count.
  const NcclTestsLog log =
      read_nccl_tests_log(request.log, {.op_otherwise = base.shape.op,
                                        .ranks = request.ranks,
                                        .ranks_otherwise = static_cast<int>(base.ranks.size())});
  const auto [lo, hi] = parse_size_range(request.sizes.empty() ? ":" : request.sizes, "--sizes");
  return compare_nccl_log(s, base, log, lo, hi);
}

std::pair<std::int64_t, std::int64_t> parse_size_range(const std::string& text,
                                                       const std::string& where) {
  const auto colon = text.find(':');
  if (colon == std::string::npos)
    throw InputError(where, fmt::format("expected MIN:MAX like \"1KiB:8GB\" (either side may be "
                                        "left out), got \"{}\"",
                                        text));
  auto side = [&](const std::string& s, std::int64_t dflt) -> std::int64_t {
    if (s.empty()) return dflt;
    const auto v = parse_size(s);
    if (!v || *v < 0)
      throw InputError(where,
                       fmt::format("expected a size like \"1KiB\" or \"8GB\", got \"{}\"", s));
    return *v;
  };
  const std::int64_t lo = side(text.substr(0, colon), 0);
  const std::int64_t hi = side(text.substr(colon + 1), kNoLimit);
  if (lo > hi) throw InputError(where, "MIN must not exceed MAX");
  return {lo, hi};
}

}  // namespace collsim
