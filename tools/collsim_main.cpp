// The collsim command line.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/json_view.h"
#include "huge_pages.h"
#include "nccl_commands.h"
#include "plan/plan_report.h"
#include "progress_bar.h"
#include "replay/trace.h"
#include "report/output_dir.h"
#include "report/reports.h"
#include "report/run_use_case.h"
#include "report/topology_drawing.h"
#include "report/workload_sweep_html.h"
#include "scenario/scenario.h"
#include "scenario/schema.h"
#include "schedule/layout.h"
#include "simulate/run_scenario.h"
#include "simulate/simulated_plan.h"
#include "sweep/sweep.h"
#include "sweep/workload_sweep.h"
#include "sweep_commands.h"
#include "topology/summary.h"
#include "topology/topology_json.h"
#include "validate/compare/compare.h"
#include "validate/measure/calibrate.h"
#include "validate/measure/measure.h"
#include "validate/measure/validation_error.h"

namespace {

using namespace collsim;

struct RunArgs {
  std::string scenario;
  std::string format = "text";
  std::string out_dir;
  std::size_t trace_transfers = kTraceTransfers;
  bool trace_gzip = false;
  bool stream = false;
  bool symmetry = false;
};

// Every command but run times collectives alone: a workload-only scenario is refused.
Scenario load_collectives(const std::string& file) {
  Scenario s = load_scenario(file);
  require_collectives(s);
  return s;
}

// The command line as started, for a restart on huge pages once a run is known to be large.
char** g_argv = nullptr;

// Whether a run allocates enough for huge pages to pay for the restart (about 7 ms of a
// 25 ms run of a 1,024-GPU scenario's small collective): a training step, a schedule
// that could reach 2^18 ops, or many collectives.
bool worth_huge_pages(const Scenario& s) {
  if (!s.workloads.empty() || s.collectives.size() > 4096) return true;
  return std::any_of(s.collectives.begin(), s.collectives.end(),
                     [](const CollectiveSpec& c) { return schedule_ops_bound(c) >= (1 << 18); });
}

// A scenario file this large holds thousands of collectives (67 to 120 bytes each) or a long
// workload: the run restarts on huge pages before reading it, not after (100,000
// collectives took a second to read, twice over).
bool large_scenario_file(const std::string& path) {
  constexpr std::uintmax_t kLarge = std::uintmax_t{256} << 10;
  std::error_code error;
  const std::uintmax_t bytes = std::filesystem::file_size(path, error);
  return !error && bytes >= kLarge;
}

int run_command(const RunArgs& args) {
  if (large_scenario_file(args.scenario)) restart_with_huge_pages(g_argv);
  const Scenario scenario = load_scenario(args.scenario);
  if (worth_huge_pages(scenario)) restart_with_huge_pages(g_argv);
  RunRequest request;
  if (!args.out_dir.empty()) request.out = args.out_dir;
  request.stream = args.stream;
  request.fold = args.symmetry;
  request.files = {.trace_transfers = args.trace_transfers, .trace_gzip = args.trace_gzip};
  const RunRecord record = run_use_case(scenario, request);
  if (args.format == "json")
    write_run_document(std::cout, scenario, record);
  else
    std::cout << run_table(scenario, record);
  return 0;
}

struct WorkloadSweepArgs {
  std::string scenario;
  std::vector<std::string> sets;
  bool splits = false;
  std::string format = "text";
  std::string out_dir;
};

int workload_sweep_command(const WorkloadSweepArgs& args) {
  WorkloadSweepOptions options = workload_sweep_options(args.sets, args.splits);
  ProgressBar bar(true);
  options.progress = [&bar](std::size_t done, std::size_t total) { bar(done, total); };
  const auto doc = read_json_file(args.scenario, args.scenario);
  const WorkloadSweep sweep =
      sweep_workload(doc, std::filesystem::path(args.scenario).parent_path(), options);
  const auto print = [&] {
    if (args.format == "csv")
      std::cout << workload_sweep_csv(sweep);
    else if (args.format == "json")
      std::cout << workload_sweep_json(sweep).dump(2) << "\n";
    else
      std::cout << workload_sweep_table(sweep);
  };
  // Every point refused (a misspelt --set path, say): the output says why, in the format
  // asked for, no file is written, and the exit status is bad input's.
  if (every_point_refused(sweep)) print();
  require_a_point_ran(sweep, options);
  // Files first: if they cannot be written, nothing is printed as if all went well.
  if (!args.out_dir.empty()) {
    OutputDir out(args.out_dir);
    out.open("workload_sweep.csv") << workload_sweep_csv(sweep);
    out.open("workload_sweep.json") << workload_sweep_json(sweep).dump(2) << "\n";
    write_workload_sweep_html(out.open("workload_sweep.html"), sweep);
    out.commit();
  }
  print();
  return 0;
}

struct TraceArgs {
  std::string scenario;
  std::string collective;
  std::string values = "auto";
};

int trace_command(const TraceArgs& args) {
  const Scenario scenario = load_collectives(args.scenario);
  const Plan plan = make_plan(scenario);
  const PlannedCollective* chosen = &plan.collectives.front();
  if (!args.collective.empty()) {
    chosen = plan.find(args.collective);
    if (!chosen) {
      std::vector<std::string> names;
      for (const auto& c : plan.collectives) names.push_back(c.spec.name);
      const auto near = nearest_word(args.collective, names);
      throw InputError(
          "--collective",
          fmt::format("no collective named \"{}\" in the scenario; {}", args.collective,
                      near ? fmt::format("did you mean \"{}\"?", *near)
                           : "it has " + fmt::format("{}", fmt::join(names, ", "))));
    }
  }
  const CollectiveSpec& spec = chosen->spec;
  const Schedule& schedule = *chosen->schedule;
  const bool barrier = spec.shape.op == CollectiveOp::Barrier;
  if (replay_elements(schedule) > kMaxReplayedElements)
    throw InputError(spec.json_path,
                     fmt::format("too large to replay here: {} elements in all buffers of all "
                                 "ranks (at most {}); trace it at a smaller \"bytes\"",
                                 replay_elements(schedule), kMaxReplayedElements));
  // Element tables while they are readable: 10^rank digits show who contributed while
  // they fit an int64 (18 ranks); beyond, or for large buffers, a line per step.
  bool tables = true, symbolic = args.values == "symbolic";
  if (args.values == "auto") {
    tables = spec.shape.ranks <= 18;
    symbolic = !powers_fit(spec.shape);  // a product of 10^r passes int64 from 7 ranks
    for (int r = 0; tables && r < spec.shape.ranks; ++r)
      for (auto n : data_buffer_sizes(spec.shape, r)) tables = tables && n <= kMaxTracedElements;
    tables = tables && printed_values(schedule, symbolic ? TraceValues::Symbolic
                                                         : TraceValues::Powers) <= kMaxTracedValues;
  }
  std::string text;
  try {
    text = tables || barrier
               ? format_trace(schedule, symbolic ? TraceValues::Symbolic : TraceValues::Powers)
               : format_step_summary(schedule);
  } catch (const std::invalid_argument& e) {
    throw InputError(spec.json_path, e.what());
  }
  // Proved before anything is printed: a stopped trace prints nothing.
  const std::string verification = format_verification(schedule);
  std::cout << fmt::format("# {}: {} {} on {} ranks, {}, {} steps, schedule {}\n", spec.name,
                           chosen->label(), name_of(spec.shape.op), spec.shape.ranks,
                           barrier ? "messages without data"
                                   : fmt::format("{} elements of {} per rank", spec.shape.count,
                                                 name_of(spec.shape.dtype)),
                           schedule.num_steps, digest_text(chosen->digest));
  if (!barrier && tables)
    std::cout << (symbolic ? "# inputs: element i of rank a, b, c, ... is a<i>, b<i>, ...\n"
                           : "# inputs: every element of rank r is 10^r\n");
  std::cout << text << "\n" << verification;
  return 0;
}

struct PlanArgs {
  std::string scenario;
  std::string format = "text";
};

// What every other command will run: each collective with its choices settled.
int plan_command(const PlanArgs& args) {
  const Scenario scenario = load_collectives(args.scenario);
  const Plan plan = plan_as_run(scenario);
  if (args.format == "json")
    std::cout << plan_json(scenario, plan).dump(2) << "\n";
  else
    std::cout << plan_table(scenario, plan);
  return 0;
}

struct TopoArgs {
  std::string topology;
  bool dot = false;
  bool svg = false;
  bool json = false;
  std::string format = "text";
};

// A topology by bundled name, file, scenario file, or inline JSON ({"preset": "cluster", ...}).
int topo_command(const TopoArgs& args) {
  const Topology t = load_topology_argument(args.topology, std::filesystem::current_path());
  if (args.dot)
    write_graphviz(std::cout, t);
  else if (args.svg)
    write_topology_svg(std::cout, t);
  else if (args.json)
    std::cout << topology_to_json(t).dump(2) << "\n";
  else if (args.format == "json")
    std::cout << topology_summary_json(t).dump(2) << "\n";
  else
    std::cout << topology_summary(t);
  return 0;
}

std::string self_executable() {
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

// What validate and calibrate share: where to run and how often.
struct MeasureArgs {
  MeasureArgs(int default_iters, int default_warmup)
      : iters(default_iters), warmup(default_warmup) {}
  std::string backend = "shm";
  int iters, warmup;
  int rounds = 4;
  double quantile = 0.5;
  double timeout = 60;
  bool no_pin = false;
};

RunOptions run_options(const MeasureArgs& args) {
  RunOptions opt;
  opt.pin = !args.no_pin;
  opt.backend = *backend_from_name(args.backend);  // CLI11 checked the name
  opt.iterations = args.iters;
  opt.warmup = args.warmup;
  opt.rounds = args.rounds;
  opt.quantile = args.quantile;
  opt.timeout_s = args.timeout;
  opt.executable = self_executable();
  // Fault injection, for the tests of the cleanup paths.
  if (const char* k = std::getenv("COLLSIM_VALIDATE_KILL_RANK")) opt.kill_rank = std::atoi(k);
  if (const char* f = std::getenv("COLLSIM_VALIDATE_FAIL_RANK")) opt.fail_rank = std::atoi(f);
  return opt;
}

struct ValidateArgs {
  std::string scenario;
  MeasureArgs run{5, 1};
  std::string out_dir;
};

int validate_command(const ValidateArgs& args) {
  const Scenario scenario = load_collectives(args.scenario);
  const Plan plan = make_plan(scenario);
  check_real_runs(plan, run_options(args.run));  // before any folder is made
  // The folder is checked before the measurement, which a bad --out would throw away.
  std::optional<OutputDir> out;
  if (!args.out_dir.empty()) {
    out.emplace(args.out_dir);
    out->check_replaceable({"measured.json", "timeline.json"});
  }
  const MeasuredScenario m = measure_scenario(plan, run_options(args.run));
  std::cerr << "collsim: " << m.pinning.note << "\n";
  if (out) {
    out->open("measured.json") << measured_json(scenario, m).dump(2) << "\n";
    write_measured_trace(out->open("timeline.json"), scenario, m);
    out->commit();
  }
  std::cout << measured_table(m);
  int status = 0;
  for (const auto& c : m.collectives)
    if (c.m.wrong) {  // a wrong result is a failure, not a footnote
      std::cerr << fmt::format(
          "collsim: validation failed: collective \"{}\": {} of {} output elements differ from "
          "the replayer's\n",
          c.spec.name, c.m.wrong, c.m.checked);
      status = 1;
    }
  return status;
}

struct CalibrateArgs {
  std::string backend = "shm";
  std::string sizes = "256B..64MiB";
  std::string step = "x2";
  std::string reduce = "float32.sum,float64.sum";
  MeasureArgs run{20, 3};
  int ranks = 2;
  std::string out = "calibration.json";
};

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    if (comma > at) out.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

int calibrate_command(const CalibrateArgs& args) {
  const CalibrateRequest request{parse_sizes(args.sizes, args.step), args.ranks,
                                 split_list(args.reduce)};
  // Checked before the measurement, which a bad --out would throw away.
  const std::string file = std::filesystem::path(args.out).filename().string();
  OutputDir dir(std::filesystem::absolute(args.out).parent_path());
  dir.check_replaceable({file});
  const Calibration c = calibrate(request, run_options(args.run));
  dir.open(file) << calibration_json(c).dump(2) << "\n";
  dir.commit();
  std::cout << calibration_report(c) << "# wrote " << args.out << "\n";
  if (c.pinning.shared || !c.pinning.pinned)
    std::cerr << "collsim: warning: " << c.pinning.note << "\n";
  for (const auto& s : c.sweeps)
    if (s.poor)
      std::cerr << fmt::format(
          "collsim: warning: the {} curve fits poorly (largest residual {:.1f}% at {} bytes, "
          "iterations spread up to {:.0f}% p10-p90): the machine was busy (load average {:.2f}); "
          "calibrate again when it is quiet, or with more --iters\n",
          s.name, s.max_residual_pct, s.worst_bytes, s.max_spread_pct, c.load_after);
  return 0;
}

struct CompareArgs {
  std::string scenario;
  std::string measured;
  std::string calibration;
  std::string out_dir;
};

// Whether `path` holds a JSON object (validate's measured.json) rather than text, as an
// nccl-tests log is: its first character that is not blank. `sweep --measured` takes a log,
// and so does `compare --measured`: what the file is cannot be mistaken, as a log never
// starts with "{" (its first lines are "#" comments or the test's output).
bool holds_json_object(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c))
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return c == '{';
  return true;  // empty or unreadable: the JSON reader says why
}

int compare_command(const CompareArgs& args) {
  Scenario scenario = load_collectives(args.scenario);
  if (!args.calibration.empty())
    apply_calibration(scenario, read_json_file(args.calibration, "--calibration"),
                      args.calibration);
  const nlohmann::json measured = read_json_file(args.measured, "--measured");
  // The measured collectives ran one at a time: simulate them the same way.
  for (std::size_t i = 0; i < scenario.collectives.size(); ++i)
    scenario.collectives[i].after =
        i ? std::vector<int>{static_cast<int>(i - 1)} : std::vector<int>{};
  const ScenarioResult sim = run_scenario(scenario);
  Comparison c;
  try {
    c = compare_runs(scenario, sim, measured);
  } catch (const nlohmann::json::exception& e) {
    throw InputError("--measured",
                     fmt::format("not a measured.json of collsim validate ({})", e.what()));
  }
  if (!args.out_dir.empty()) {
    OutputDir out(args.out_dir);
    write_comparison_csv(out.open("compare.csv"), c);
    write_comparison_trace(out.open("compare_timeline.json"), scenario, sim, measured);
    out.commit();
  }
  std::cout << comparison_table(c);
  return 0;
}

}  // namespace

namespace {

void add_run_options(CLI::App* cmd, MeasureArgs& run) {
  cmd->add_flag("--no-pin", run.no_pin,
                "Leave ranks where the scheduler puts them (default: rank r bound to the r-th "
                "allowed CPU, as mpirun --bind-to core)");
  cmd->add_option("--backend", run.backend, "shm (processes over shared memory) or cuda-ipc")
      ->check(CLI::IsMember({"shm", "cuda-ipc"}))
      ->capture_default_str();
  cmd->add_option("--iters", run.iters, "Measured iterations (per size for calibrate)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--warmup", run.warmup, "Warm-up iterations (in every round)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--rounds", run.rounds,
                  "Split the iterations over this many rounds, each running every schedule in "
                  "turn, so that a slow spell of the machine falls on a few iterations of each")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--quantile", run.quantile,
                  "The iteration that stands for each collective or sweep point: this quantile "
                  "of the iteration times (0.5, the median; on a shared machine a lower one, "
                  "as timeit's minimum, leaves out most of the neighbours' interference)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--timeout", run.timeout,
                  "Seconds an iteration may take before the run is stopped (counted once every "
                  "rank has started; they have at least 60 s to start)")
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            double seconds = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
            if (ec != std::errc() || end != text.data() + text.size() ||
                !(seconds > 0 && seconds <= 86400))
              return "expected seconds more than 0 and at most a day (86400), got " + text;
            return {};
          },
          "SECONDS"))
      ->capture_default_str();
}

}  // namespace

namespace {

// Ctrl-C or SIGTERM asks the run to stop: it unwinds (removing its --out staging) and
// exits 128 + the signal. A second signal takes the default action at once.
volatile std::sig_atomic_t stop_signal = 0;

void on_stop_signal(int signal) {
  stop_signal = signal;
  request_interrupt();
  std::signal(signal, SIG_DFL);
}

// On a terminal, a long run says it is working: a line on stderr after 5 s, then every
// 10 s, with the events simulated so far (core/interrupt.h). Nothing when stderr is a
// file or a pipe, so scripted runs print exactly what they printed before.
class ProgressLines {
 public:
  ProgressLines() {
    if (::isatty(STDERR_FILENO)) thread_ = std::thread([this] { report(); });
  }
  ~ProgressLines() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void report() {
    const auto start = std::chrono::steady_clock::now();
    auto next = start + std::chrono::seconds(5);
    std::unique_lock lock(mutex_);
    while (!wake_.wait_until(lock, next, [this] { return done_; })) {
      const auto seconds =
          std::chrono::duration_cast<std::chrono::seconds>(next - start).count();
      std::cerr << fmt::format("collsim: still working after {} s ({:.1f} M events simulated so far; "
                               "Ctrl-C stops)\n",
                               seconds, static_cast<double>(progress()) / 1e6);
      next += std::chrono::seconds(10);
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

void install_stop_handlers() {
  for (int signal : {SIGINT, SIGTERM}) {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, nullptr);
  }
}

CLI::App* add_run_command(CLI::App& app, RunArgs& args) {
  auto* cmd = app.add_subcommand("run", "Simulate a scenario and print one row per collective");
  cmd->add_option("scenario", args.scenario, "Scenario JSON file")->required();
  cmd->add_option("--format", args.format, "Output on stdout")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  auto* out = cmd->add_option("--out", args.out_dir,
                              "Also write result.json, CSVs, timeline.json and report.html here");
  cmd->add_option("--trace-transfers", args.trace_transfers,
                  "timeline.json: one slice per transfer up to this many; beyond, per rank "
                  "time bins of how busy it was")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
      ->capture_default_str()
      ->needs(out);  // it shapes a file: without one it was silently unused
  cmd->add_flag("--stream", args.stream,
                "Generate each collective while simulating it, holding only the ops in flight; "
                "run does so by itself for large schedules when the figures are the same; "
                "collectives that may overlap are held whole and played together; --out plays "
                "the run twice, handing each op to the files as it retires; a training step runs "
                "whole (its tasks played together, each task's ops held only while it runs), never "
                "folded");
  cmd->add_flag(
      "--symmetry", args.symmetry,
      "Time each collective whose ranks are interchangeable (a ring on a switch, or "
      "on the rails of a cluster) by its representatives' ops: the same times and counters, "
      "no schedule digest; the rest are streamed, as with --stream; collectives not with "
      "--out; a training step is folded by its data-parallel replicas where they are alike "
      "(its files too; run does so by itself for large steps), and says whether it was");
  cmd->add_flag("--trace-gzip", args.trace_gzip,
                "Write timeline.json.gz (gzip; Perfetto opens it) instead of timeline.json; "
                "done anyway past 32 MiB")
      ->needs(out);
  return cmd;
}

CLI::App* add_trace_command(CLI::App& app, TraceArgs& args) {
  auto* cmd = app.add_subcommand(
      "trace", "Replay a collective on real buffers and print every rank after every step");
  cmd->add_option("scenario", args.scenario, "Scenario JSON file")->required();
  cmd->add_option("--collective", args.collective, "Which collective (default: the first)");
  cmd->add_option("--values", args.values,
                  "Inputs: 10^rank (powers), a0, b0, ... (symbolic), or auto: powers up to "
                  "18 ranks (a product: 6, then symbolic) and 256 elements, a line per step "
                  "beyond")
      ->check(CLI::IsMember({"auto", "powers", "symbolic"}))
      ->capture_default_str();
  return cmd;
}

CLI::App* add_plan_command(CLI::App& app, PlanArgs& args) {
  auto* cmd = app.add_subcommand(
      "plan",
      "Show what run, trace and validate will execute: every choice settled, per collective");
  cmd->add_option("scenario", args.scenario, "Scenario JSON file")->required();
  cmd->add_option("--format", args.format, "Output on stdout")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return cmd;
}

CLI::App* add_workload_sweep_command(CLI::App& app, WorkloadSweepArgs& args) {
  auto* cmd = app.add_subcommand(
      "workload-sweep", "Run a scenario's training step across settings or parallel splits");
  cmd->add_option("scenario", args.scenario, "Scenario JSON file with a workload")->required();
  cmd->add_option("--set", args.sets,
                  "PATH=V1,V2,...: a scenario field through values (repeatable), e.g. "
                  "workload.bucket=10MB,25MB or topology.nodes=1,2,4; a value with a comma "
                  "in it as JSON: 'workload.nccl_algo=\"ring,tree\",ring'");
  cmd->add_flag("--splits", args.splits,
                "Also every dp x tp x pp of the job's GPUs (tp a power of two within a node), "
                "the global batch kept (micro-batches follow dp), with the least activation "
                "recomputation that fits");
  cmd->add_option("--out", args.out_dir,
                  "Write workload_sweep.csv, workload_sweep.json and workload_sweep.html here");
  cmd->add_option("--format", args.format, "Output on stdout")
      ->check(CLI::IsMember({"text", "csv", "json"}))
      ->capture_default_str();
  return cmd;
}

CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args) {
  auto* cmd = app.add_subcommand("validate",
                                 "Run the scenario's collectives for real and check their results");
  cmd->add_option("scenario", args.scenario, "Scenario JSON file")->required();
  add_run_options(cmd, args.run);
  cmd->add_option("--out", args.out_dir, "Write measured.json and timeline.json here");
  return cmd;
}

CLI::App* add_calibrate_command(CLI::App& app, CalibrateArgs& args, NcclCalibrateArgs& nccl) {
  auto* cmd =
      app.add_subcommand("calibrate",
                         "Measure the cost model (bandwidth by size, concurrency, reductions, "
                         "per-op overhead) and write a calibration file, or fit it to "
                         "nccl-tests logs (--nccl-tests)");
  add_run_options(cmd, args.run);
  cmd->add_option("--reduce", args.reduce, "Reductions to sweep, \"dtype.op\" comma list")
      ->capture_default_str();
  cmd->add_option("--ranks", args.ranks,
                  "Ranks: pairs (r, r + ranks/2) measured at once; 2 is point to point")
      ->check(CLI::Range(2, 4096))
      ->capture_default_str();
  cmd->add_option("--sizes", args.sizes, "A..B range or a comma list")->capture_default_str();
  cmd->add_option("--step", args.step, "Factor between sizes")->capture_default_str();
  cmd->add_option("--out", args.out, "Calibration JSON to write")->capture_default_str();
  add_nccl_calibrate_options(cmd, nccl);
  return cmd;
}

CLI::App* add_compare_command(CLI::App& app, CompareArgs& args, NcclCompareArgs& nccl) {
  auto* cmd =
      app.add_subcommand("compare", "Simulated against measured, per collective and per step");
  cmd->add_option("scenario", args.scenario, "Scenario JSON file")->required();
  cmd->add_option("--measured", args.measured,
                  "measured.json from collsim validate, or an nccl-tests log (as --nccl-tests)");
  cmd->add_option("--calibration", args.calibration, "Calibration JSON to simulate with");
  cmd->add_option("--out", args.out_dir, "Write compare.csv and compare_timeline.json here");
  add_nccl_compare_options(cmd, nccl);
  cmd->get_option("--measured")->excludes("--nccl-tests");
  return cmd;
}

CLI::App* add_topo_command(CLI::App& app, TopoArgs& args) {
  auto* cmd = app.add_subcommand(
      "topo",
      "Summarise a topology (counts, per-GPU injection, switch tiers and their oversubscription, "
      "bisection bandwidth), or draw it");
  cmd->add_option("topology", args.topology,
                  "Bundled name (dgx-h100), topology or scenario file, or inline JSON like "
                  "'{\"preset\": \"cluster\", \"nodes\": 4}'")
      ->required();
  cmd->add_option("--format", args.format, "The summary as text, or JSON in bytes/s")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_flag("--dot", args.dot,
                "Print Graphviz, a box per host and per rail (render with: dot -Tsvg)");
  cmd->add_flag("--svg", args.svg,
                "Print a drawing as SVG (no Graphviz needed): node by node for a few servers, "
                "grouped by server group and switch tier for a cluster");
  cmd->add_flag("--json", args.json, "Print the topology as an explicit node/link JSON file");
  cmd->get_option("--dot")->excludes("--svg")->excludes("--json");
  cmd->get_option("--svg")->excludes("--json");
  return cmd;
}

struct SchemaArgs {
  std::string which = "scenario";
  bool markdown = false;
};

CLI::App* add_schema_command(CLI::App& app, SchemaArgs& args) {
  auto* cmd = app.add_subcommand(
      "schema",
      "Print the JSON Schema of scenario or topology files, written from the fields the "
      "loader reads (scenarios/schema/ holds its output)");
  cmd->add_option("which", args.which, "scenario or topology")
      ->check(CLI::IsMember({"scenario", "topology"}))
      ->capture_default_str();
  cmd->add_flag("--markdown", args.markdown,
                "Print both as a Markdown reference instead, a table per object (docs/schema.md)");
  return cmd;
}

int schema_command(const SchemaArgs& args) {
  std::cout << (args.markdown              ? schema_reference()
                : args.which == "topology" ? topology_schema()
                                           : scenario_schema());
  return 0;
}

// Every command's arguments and the subcommand that fills them: CLI11 writes into these
// members while parsing, so the struct stays where it was made.
struct Commands {
  RunArgs run_args;
  TraceArgs trace_args;
  PlanArgs plan_args;
  SweepArgs sweep_args;
  MergeArgs merge_args;
  WorkloadSweepArgs wsweep_args;
  ValidateArgs validate_args;
  CalibrateArgs calibrate_args;
  NcclCalibrateArgs nccl_calibrate_args;
  CompareArgs compare_args;
  NcclCompareArgs nccl_compare_args;
  TopoArgs topo_args;
  SchemaArgs schema_args;
  CLI::App *run, *trace, *plan, *sweep, *merge, *workload_sweep, *validate, *calibrate, *compare,
      *topo, *schema;

  explicit Commands(CLI::App& app)
      : run(add_run_command(app, run_args)),
        trace(add_trace_command(app, trace_args)),
        plan(add_plan_command(app, plan_args)),
        sweep(add_sweep_command(app, sweep_args)),
        merge(add_merge_command(app, merge_args)),
        workload_sweep(add_workload_sweep_command(app, wsweep_args)),
        validate(add_validate_command(app, validate_args)),
        calibrate(add_calibrate_command(app, calibrate_args, nccl_calibrate_args)),
        compare(add_compare_command(app, compare_args, nccl_compare_args)),
        topo(add_topo_command(app, topo_args)),
        schema(add_schema_command(app, schema_args)) {}
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;
};

// compare, with a measured.json or an nccl-tests log.
int compare_or_nccl_compare(const Commands& c) {
  CompareArgs compare = c.compare_args;
  NcclCompareArgs nccl = c.nccl_compare_args;
  if (compare.measured.empty() && nccl.log.empty())
    throw InputError("compare",
                     "say what to compare with: --measured measured.json (from "
                     "collsim validate) or --nccl-tests LOG");
  // An nccl-tests log given to --measured, as `sweep --measured` takes one; its errors name
  // the flag the user gave.
  const bool log_as_measured = !compare.measured.empty() && !holds_json_object(compare.measured);
  if (log_as_measured) nccl.log = std::exchange(compare.measured, {});
  if (!nccl.log.empty()) {
    try {
      return nccl_compare_command(compare.scenario, nccl.log, compare.calibration, compare.out_dir,
                                  nccl);
    } catch (const InputError& e) {
      if (!log_as_measured || e.where() != "--nccl-tests") throw;
      throw InputError("--measured", e.message());
    }
  }
  check_no_nccl_compare_options(c.compare);
  return compare_command(compare);
}

// Runs the one command the command line named.
int run_named_command(const Commands& c) {
  if (*c.run) return run_command(c.run_args);
  if (*c.trace) return trace_command(c.trace_args);
  if (*c.plan) return plan_command(c.plan_args);
  if (*c.topo) return topo_command(c.topo_args);
  if (*c.schema) return schema_command(c.schema_args);
  if (*c.sweep) return sweep_command(c.sweep_args);
  if (*c.workload_sweep) return workload_sweep_command(c.wsweep_args);
  if (*c.merge) return merge_command(c.merge_args);
  if (*c.validate) return validate_command(c.validate_args);
  if (*c.calibrate && !c.nccl_calibrate_args.logs.empty())
    return nccl_calibrate_command(c.nccl_calibrate_args, c.calibrate, c.calibrate_args.out,
                                  c.calibrate_args.ranks);
  if (*c.calibrate) {
    check_no_nccl_calibrate_options(c.calibrate);
    return calibrate_command(c.calibrate_args);
  }
  if (*c.compare) return compare_or_nccl_compare(c);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A rank process of a real run (any backend), started by `collsim validate`/`calibrate`.
  if (argc == 4 && std::string(argv[1]) == "__rank")
    return collsim::rank_main(argv[2], std::atoi(argv[3]));

  // `run` restarts only for a large run: before reading a large file, or once it has read
  // its scenario (run_command).
  g_argv = argv;
  if (argc < 2 || std::string(argv[1]) != "run") collsim::restart_with_huge_pages(argv);

  CLI::App app{"collsim: a discrete-event simulator of collective communication on GPU clusters"};
  app.set_version_flag("--version", std::string("collsim ") + COLLSIM_VERSION);
  app.require_subcommand(1);
  Commands commands(app);  // not const: parsing writes into it
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version: printed as CLI11 prints them
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, as every other refusal: what the option parser says names the option.
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-')
      std::cerr << "collsim: error: no command \"" << argv[1] << "\" (collsim --help lists them)\n";
    else
      std::cerr << "collsim: error: " << e.what()
                << (app.get_subcommands().empty() ? " (collsim --help lists them)" : "") << "\n";
    return 2;
  }
  // An empty --out ('' from an unset shell variable) wrote nothing and exited 0.
  for (const CLI::App* sub : app.get_subcommands())
    if (const CLI::Option* out = sub->get_option_no_throw("--out");
        out && out->count() > 0 && out->results().front().empty()) {
      std::cerr << "collsim: error: --out: an empty path; name the folder (or file) to write\n";
      return 2;
    }
  install_stop_handlers();
  try {
    const ProgressLines progress_lines;
    return run_named_command(commands);
  } catch (const Interrupted&) {
    std::cerr << "collsim: interrupted; nothing written\n";
    return 128 + (stop_signal ? static_cast<int>(stop_signal) : SIGINT);
  } catch (const InputError& e) {
    std::cerr << "collsim: error: " << e.what() << "\n";
    return 2;
  } catch (const ValidationError& e) {
    std::cerr << "collsim: validation failed: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    // The bounds checked before a run let a stored schedule grow to gigabytes, which a
    // smaller machine or a memory limit (ulimit -v) may not give: said as such, not as a bug.
    std::cerr << "collsim: error: out of memory: the run needed more memory than this machine "
                 "or its limits give; use fewer ranks, segments or sizes, or --stream (run) to "
                 "hold only the ops in flight\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "collsim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
