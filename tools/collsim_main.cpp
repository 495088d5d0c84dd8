// The collsim command line.
#include <CLI/CLI.hpp>
#include <chrono>
#include <unistd.h>
#include <fmt/format.h>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "report/output_dir.h"
#include "replay/trace.h"
#include "report/html_report.h"
#include "report/reports.h"
#include "sweep/sweep.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "core/json_view.h"
#include "topology/summary.h"
#include "topology/topology_json.h"

namespace {

using namespace collsim;

struct RunArgs {
  std::string scenario;
  std::string format = "text";
  std::string out_dir;
};

int run_command(const RunArgs& args) {
  const Scenario scenario = load_scenario(args.scenario);
  SimulationOptions options;
  options.record_ops = !args.out_dir.empty();  // the timeline is the only per-op output
  const ScenarioResult result = run_scenario(scenario, options);
  const TrafficReport traffic = analyse_traffic(scenario, result);

  // Files first: if they cannot be written, nothing is printed as if all went well.
  if (!args.out_dir.empty()) {
    OutputDir out(args.out_dir);
    out.open("result.json") << result_json(scenario, result, traffic).dump(2) << "\n";
    write_links_csv(out.open("links.csv"), scenario, traffic);
    write_ranks_csv(out.open("ranks.csv"), traffic);
    write_steps_csv(out.open("steps.csv"), scenario, result, traffic);
    write_utilisation_csv(out.open("utilisation.csv"), scenario, traffic);
    write_chrome_trace(out.open("timeline.json"), scenario, result, traffic);
    write_html_report(out.open("report.html"), scenario, result, traffic);
    out.commit();
  }
  if (args.format == "json")
    std::cout << result_json(scenario, result, traffic).dump(2) << "\n";
  else
    std::cout << summary_table(scenario, result, traffic);
  return 0;
}

struct TraceArgs {
  std::string scenario;
  std::string collective;
  std::string values = "powers";
};

int trace_command(const TraceArgs& args) {
  const Scenario scenario = load_scenario(args.scenario);
  const CollectiveSpec* chosen = &scenario.collectives.front();
  if (!args.collective.empty()) {
    chosen = nullptr;
    for (const auto& c : scenario.collectives)
      if (c.name == args.collective) chosen = &c;
    if (!chosen) throw InputError("--collective", "no collective named \"" + args.collective + "\" in the scenario");
  }
  const Schedule schedule = generate_schedule(*chosen);
  std::string text;
  try {
    text = format_trace(schedule, args.values == "symbolic" ? TraceValues::Symbolic : TraceValues::Powers);
  } catch (const std::invalid_argument& e) {
    throw InputError(chosen->json_path, e.what());
  }
  std::cout << fmt::format("# {}: {} {} on {} ranks, {} elements of {} per rank, {} steps\n", chosen->name,
                           chosen->algorithm, name_of(chosen->shape.op), chosen->shape.ranks, chosen->shape.count,
                           name_of(chosen->shape.dtype), schedule.num_steps);
  std::cout << (args.values == "symbolic" ? "# inputs: element i of rank a, b, c, ... is a<i>, b<i>, ...\n"
                                          : "# inputs: every element of rank r is 10^r\n");
  std::cout << text << "\n" << format_verification(schedule);
  return 0;
}

struct TopoArgs {
  std::string topology;
  bool dot = false;
  bool json = false;
};

// A topology by bundled name, file, or inline JSON ({"preset": "cluster", ...}).
int topo_command(const TopoArgs& args) {
  nlohmann::json spec = args.topology;
  if (!args.topology.empty() && args.topology.front() == '{') spec = parse_json_text(args.topology, "topology");
  const Topology t = load_topology(JsonView(spec, "topology"), std::filesystem::current_path());
  if (args.dot)
    write_graphviz(std::cout, t);
  else if (args.json)
    std::cout << topology_to_json(t).dump(2) << "\n";
  else
    std::cout << topology_summary(t);
  return 0;
}

struct SweepArgs {
  std::string scenario;
  std::string collective;
  std::string sizes = "1KiB..1GiB";
  std::string step = "x2";
  std::string algorithms;
  std::string ranks;
  std::string format = "text";
  std::string out_dir;
};

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

int sweep_command(const SweepArgs& args) {
  const Scenario scenario = load_scenario(args.scenario);
  SweepRequest req;
  req.collective = args.collective;
  req.sizes = parse_sizes(args.sizes, args.step);
  req.algorithms = split_commas(args.algorithms);
  for (const auto& n : split_commas(args.ranks)) {
    try {
      req.rank_counts.push_back(std::stoi(n));
    } catch (const std::exception&) {
      throw InputError("--ranks", "expected rank counts like 8,64,512, got \"" + n + "\"");
    }
  }
  // A progress bar only for people watching a terminal, and only once it is worth one.
  const bool tty = isatty(STDERR_FILENO);
  const auto started = std::chrono::steady_clock::now();
  bool drew = false;
  auto progress = [&](std::size_t done, std::size_t total) {
    if (!tty || std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) return;
    const int width = 40, filled = static_cast<int>(width * done / total);
    std::cerr << fmt::format("\r[{}{}] {}/{}", std::string(filled, '#'), std::string(width - filled, ' '), done, total)
              << std::flush;
    drew = true;
  };
  const SweepResult result = run_sweep(scenario, req, progress);
  if (drew) std::cerr << "\r" << std::string(60, ' ') << "\r" << std::flush;
  if (!args.out_dir.empty()) {
    OutputDir out(args.out_dir);
    write_sweep_csv(out.open("sweep.csv"), scenario, result);
    out.open("sweep.json") << sweep_json(scenario, result).dump(2) << "\n";
    write_sweep_html(out.open("sweep.html"), scenario, result);
    out.commit();
  }
  if (args.format == "csv")
    write_sweep_csv(std::cout, scenario, result);
  else if (args.format == "json")
    std::cout << sweep_json(scenario, result).dump(2) << "\n";
  else
    std::cout << sweep_table(scenario, result);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"collsim: a discrete-event simulator of collective communication on GPU clusters"};
  app.set_version_flag("--version", std::string("collsim ") + COLLSIM_VERSION);
  app.require_subcommand(1);

  RunArgs run_args;
  auto* run = app.add_subcommand("run", "Simulate a scenario and print one row per collective");
  run->add_option("scenario", run_args.scenario, "Scenario JSON file")->required();
  run->add_option("--format", run_args.format, "Output on stdout")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  run->add_option("--out", run_args.out_dir, "Also write result.json, links.csv and timeline.json here");

  TraceArgs trace_args;
  auto* trace = app.add_subcommand("trace", "Replay a collective on real buffers and print every rank after every step");
  trace->add_option("scenario", trace_args.scenario, "Scenario JSON file")->required();
  trace->add_option("--collective", trace_args.collective, "Which collective (default: the first)");
  trace->add_option("--values", trace_args.values, "Inputs: 10^rank (powers) or a0, b0, ... (symbolic)")
      ->check(CLI::IsMember({"powers", "symbolic"}))
      ->capture_default_str();

  SweepArgs sweep_args;
  auto* sweep = app.add_subcommand("sweep", "Run a scenario's collective across sizes, algorithms and rank counts");
  sweep->add_option("scenario", sweep_args.scenario, "Scenario JSON file")->required();
  sweep->add_option("--collective", sweep_args.collective, "Which collective (default: the first)");
  sweep->add_option("--sizes", sweep_args.sizes, "A..B range or a comma list of sizes")->capture_default_str();
  sweep->add_option("--step", sweep_args.step, "Factor between sizes in a range")->capture_default_str();
  sweep->add_option("--algorithms", sweep_args.algorithms, "Comma list (default: every applicable one)");
  sweep->add_option("--ranks", sweep_args.ranks, "Comma list of rank counts (default: the collective's)");
  sweep->add_option("--format", sweep_args.format, "Output on stdout")
      ->check(CLI::IsMember({"text", "csv", "json"}))
      ->capture_default_str();
  sweep->add_option("--out", sweep_args.out_dir, "Also write sweep.csv, sweep.json and sweep.html here");

  TopoArgs topo_args;
  auto* topo = app.add_subcommand("topo", "Summarise a topology (counts, injection and bisection bandwidth), or draw it");
  topo->add_option("topology", topo_args.topology,
                   "Bundled name (dgx-h100), file, or inline JSON like '{\"preset\": \"cluster\", \"nodes\": 4}'")
      ->required();
  topo->add_flag("--dot", topo_args.dot, "Print Graphviz (render with: dot -Tsvg)");
  topo->add_flag("--json", topo_args.json, "Print the topology as an explicit node/link JSON file");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (*run) return run_command(run_args);
    if (*trace) return trace_command(trace_args);
    if (*topo) return topo_command(topo_args);
    if (*sweep) return sweep_command(sweep_args);
  } catch (const InputError& e) {
    std::cerr << "collsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "collsim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
