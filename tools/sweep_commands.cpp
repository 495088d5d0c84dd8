#include "sweep_commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/json_view.h"
#include "core/units.h"
#include "mpi_world.h"
#include "progress_bar.h"
#include "report/output_dir.h"
#include "scenario/scenario.h"
#include "sweep/sweep.h"
#include "sweep/sweep_shard.h"
#include "validate/compare/nccl_tests_log.h"  // read_input_file, read_nccl_tests_log

namespace collsim {

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t a = 0; a < text.size();) {
    std::size_t b = text.find(',', a);
    if (b == std::string::npos) b = text.size();
    if (b > a) out.push_back(text.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

SweepRequest request_of(const SweepArgs& args) {
  SweepRequest req;
  req.collective = args.collective;
  req.sizes = parse_sizes(args.sizes, args.step);
  req.algorithms = split_commas(args.algorithms);
  for (const auto& text : split_commas(args.ranks)) {
    const std::string_view n = trim(text);  // "4, 8" as --sizes takes it
    int count = 0;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), count);
    if (ec != std::errc() || end != n.data() + n.size())  // all of it: not "4x", not "4.5"
      throw InputError("--ranks",
                       "expected rank counts like 8,64,512, got \"" + std::string(n) + "\"");
    req.rank_counts.push_back(count);
  }
  return req;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The log's out-of-place rows as measured points of the sweep (none without a log). The
// log must be of the swept collective, on one of the sweep's rank counts.
std::vector<MeasuredPoint> measured_points(const std::string& path, const SweepPlan& plan) {
  if (path.empty()) return {};
  const NcclTestsLog log = read_nccl_tests_log(path);
  const SweepAbout& about = plan.about;
  if (name_of(log.op) != about.op)
    throw InputError("--measured",
                     fmt::format("{} measured {} (from {}), but the sweep's collective \"{}\" "
                                 "is {}; pick one with --collective",
                                 path, name_of(log.op), log.op_source, about.collective, about.op));
  const auto& counts = plan.rank_counts;
  if (std::find(counts.begin(), counts.end(), log.ranks) == counts.end())
    throw InputError("--measured", fmt::format("{} ran on {} GPUs, a rank count the sweep does "
                                               "not have; add it with --ranks",
                                               path, log.ranks));
  std::vector<MeasuredPoint> out;
  for (const auto& row : log.rows)
    out.push_back(
        {log.ranks, row.bytes, row.out_of_place.time_us * 1e-6, row.out_of_place.busbw_GBps * 1e9});
  return out;
}

// The reports, as one process writes them: files first, so that nothing is printed
// as if all went well when they cannot be written.
void write_sweep(const SweepResult& result, const std::string& format, const std::string& out_dir) {
  if (!out_dir.empty()) {
    OutputDir out(out_dir);
    write_sweep_csv(out.open("sweep.csv"), result);
    out.open("sweep.json") << sweep_json(result).dump(2) << "\n";
    write_sweep_html(out.open("sweep.html"), result);
    out.commit();
  }
  if (format == "csv")
    write_sweep_csv(std::cout, result);
  else if (format == "json")
    std::cout << sweep_json(result).dump(2) << "\n";
  else
    std::cout << sweep_table(result);
}

// What this process computed: its share of the points (all of them, or of its shard).
struct SweepShare {
  SweepPlan plan;
  std::string digest;  // of the scenario file
  std::optional<Shard> shard;
  std::vector<std::size_t> points;
  std::vector<SweepRow> rows;
  std::vector<MeasuredPoint> measured;
};

SweepShare compute_share(const SweepArgs& args, const MpiWorld& world) {
  SweepShare s;
  if (!args.shard.empty()) s.shard = parse_shard(args.shard);
  if (s.shard && args.out_dir.empty())
    throw InputError("--shard", "needs --out DIR, the folder for the shard's file");
  const Scenario scenario = load_scenario(args.scenario);
  s.plan = plan_sweep(scenario, request_of(args));
  s.measured = measured_points(args.measured, s.plan);  // before the points: fail early
  s.digest = text_digest(file_bytes(args.scenario));
  std::vector<std::size_t> todo(s.plan.points());
  std::iota(todo.begin(), todo.end(), std::size_t{0});
  if (s.shard) todo = shard_points(todo.size(), *s.shard);
  // Ranks take turns, as shards do, so that each gets small and large sizes alike.
  for (std::size_t i = static_cast<std::size_t>(world.rank()); i < todo.size();
       i += static_cast<std::size_t>(world.size()))
    s.points.push_back(todo[i]);
  const int jobs =
      args.jobs > 0 ? args.jobs : static_cast<int>(std::thread::hardware_concurrency());
  ProgressBar bar(world.rank() == 0);
  s.rows = run_sweep_points(scenario, s.plan, s.points, jobs, std::ref(bar));
  return s;
}

// The shard's file, or the whole sweep's reports, from every point's row.
void write_outputs(const SweepArgs& args, SweepPlan plan, const std::string& digest,
                   std::optional<Shard> shard, std::vector<std::pair<std::size_t, SweepRow>> rows,
                   std::vector<MeasuredPoint> measured) {
  if (!shard) {
    SweepResult result = assemble_sweep(std::move(plan), std::move(rows), "sweep");
    result.measured = std::move(measured);
    write_sweep(result, args.format, args.out_dir);
    return;
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SweepRow> ordered;
  for (auto& r : rows) ordered.push_back(std::move(r.second));
  const std::string name = shard_file_name(*shard);
  OutputDir out(args.out_dir);
  out.open(name) << shard_json(plan, digest, *shard, ordered).dump(1) << "\n";
  out.commit();
  std::cout << fmt::format("# shard {}/{}: {} of the sweep's {} points, written to {}\n",
                           shard->index, shard->count, ordered.size(), plan.points(),
                           (std::filesystem::path(args.out_dir) / name).string());
}

std::vector<std::pair<std::size_t, SweepRow>> paired(const SweepShare& s) {
  std::vector<std::pair<std::size_t, SweepRow>> out;
  for (std::size_t i = 0; i < s.points.size(); ++i) out.emplace_back(s.points[i], s.rows[i]);
  return out;
}

// An error as main() prints it, and its exit status: MPI ranks report theirs
// through rank 0, so that a failure is printed once.
struct Failure {
  int status;
  std::string message;
};

Failure failure_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const InputError& x) {
    return {2, std::string("collsim: error: ") + x.what()};
  } catch (const std::exception& x) {
    return {3, std::string("collsim: internal error: ") + x.what()};
  }
}

// Rank 0 of several: every rank's rows (or its error), then the outputs.
int finish_on_rank_0(const SweepArgs& args, const std::optional<SweepShare>& mine,
                     const std::vector<std::string>& messages) {
  std::vector<std::pair<std::size_t, SweepRow>> rows;
  try {
    for (std::size_t r = 0; r < messages.size(); ++r) {
      const nlohmann::json m = nlohmann::json::parse(messages[r]);
      if (m.contains("error")) {
        std::cerr << m["error"].get<std::string>() << (r ? fmt::format(" (on MPI rank {})", r) : "")
                  << "\n";
        return m["status"].get<int>();
      }
      // Ranks on other machines read their own copy of the scenario: the same one?
      if (m["digest"] != mine->digest || m["sweep"] != sweep_plan_json(mine->plan))
        throw InputError(fmt::format("MPI rank {}", r),
                         fmt::format("read another scenario than rank 0 (digest {}, not {}), "
                                     "or planned another sweep from it",
                                     m["digest"].get<std::string>(), mine->digest));
      for (auto& row : rows_from_json(mine->plan, m["rows"], fmt::format("MPI rank {}", r)))
        rows.push_back(std::move(row));
    }
    write_outputs(args, mine->plan, mine->digest, mine->shard, std::move(rows), mine->measured);
    return 0;
  } catch (...) {
    const Failure f = failure_of(std::current_exception());
    std::cerr << f.message << "\n";
    return f.status;
  }
}

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args) {
  auto* sweep = app.add_subcommand(
      "sweep", "Run a scenario's collective across sizes, algorithms and rank counts");
  sweep->add_option("scenario", args.scenario, "Scenario JSON file")->required();
  sweep->add_option("--collective", args.collective, "Which collective (default: the first)");
  sweep->add_option("--sizes", args.sizes, "A..B range or a comma list of sizes")
      ->capture_default_str();
  sweep->add_option("--step", args.step, "Factor between sizes in a range")->capture_default_str();
  sweep->add_option("--algorithms", args.algorithms, "Comma list (default: every applicable one)");
  sweep->add_option("--ranks", args.ranks, "Comma list of rank counts (default: the collective's)");
  auto* format = sweep->add_option("--format", args.format, "Output on stdout")
                     ->check(CLI::IsMember({"text", "csv", "json"}))
                     ->capture_default_str();
  sweep->add_option("--out", args.out_dir,
                    "Also write sweep.csv, sweep.json and sweep.html here (with --shard: the "
                    "shard's file)");
  sweep
      ->add_option("-j,--jobs", args.jobs,
                   "Threads simulating points at once (0: one per core); the output does not "
                   "depend on it")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  sweep
      ->add_option("--shard", args.shard,
                   "i/n: simulate only shard i of n (1 <= i <= n, e.g. a Slurm array task) and "
                   "write sweep-shard-i-of-n.json into --out; collsim merge joins the shards")
      ->excludes(format);
  sweep
      ->add_option("--measured", args.measured,
                   "An nccl-tests log of the same collective: its out-of-place times drawn as a "
                   "\"measured\" line in sweep.html and a measured_us column in sweep.csv/json")
      ->excludes("--shard");
  return sweep;
}

CLI::App* add_merge_command(CLI::App& app, MergeArgs& args) {
  auto* merge = app.add_subcommand(
      "merge", "Join the shard files of a sweep --shard i/n into the whole sweep's reports");
  merge->add_option("parts", args.parts, "Every shard's sweep-shard-i-of-n.json")
      ->required()
      ->check(CLI::ExistingFile);
  merge->add_option("--format", args.format, "Output on stdout")
      ->check(CLI::IsMember({"text", "csv", "json"}))
      ->capture_default_str();
  merge->add_option("--out", args.out_dir, "Also write sweep.csv, sweep.json and sweep.html here");
  merge->add_option("--measured", args.measured,
                    "An nccl-tests log of the same collective, drawn and listed as in sweep");
  return merge;
}

int sweep_command(const SweepArgs& args) {
  MpiWorld world;  // first: every rank must reach the collective calls below
  if (world.size() == 1) {
    SweepShare s = compute_share(args, world);
    write_outputs(args, std::move(s.plan), s.digest, s.shard, paired(s), std::move(s.measured));
    return 0;
  }
  // Several ranks: each sends rank 0 its rows or its error; rank 0 writes everything.
  std::optional<SweepShare> share;
  std::string message;
  try {
    share = compute_share(args, world);
    message = nlohmann::json{{"rows", rows_json(share->points, share->rows)},
                             {"digest", share->digest},
                             {"sweep", sweep_plan_json(share->plan)}}
                  .dump();
  } catch (...) {
    const Failure f = failure_of(std::current_exception());
    message = nlohmann::json{{"error", f.message}, {"status", f.status}}.dump();
  }
  const std::vector<std::string> messages = world.gather(message);
  const int status = world.rank() == 0 ? finish_on_rank_0(args, share, messages) : 0;
  return world.broadcast(status);
}

int merge_command(const MergeArgs& args) {
  std::vector<ShardFile> files;
  for (const auto& p : args.parts)
    files.push_back({p, parse_json_text(read_input_file(p, kMaxShardFileBytes, "a shard file"), p)});
  SweepResult result = merge_shards(files);
  result.measured = measured_points(args.measured, result.plan);
  write_sweep(result, args.format, args.out_dir);
  return 0;
}

}  // namespace collsim
