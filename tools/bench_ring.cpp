// Benchmark: ring all-reduce on K GPUs behind one switch, ideal α-β model.
// Prints schedule generation and simulation rates, wall time and peak memory.
// One K per process, so peak memory belongs to that K alone:
//   collsim-bench --ranks 1024 ; collsim-bench --ranks 4096
#include <CLI/CLI.hpp>
#include <chrono>
#include <fmt/format.h>
#include <sys/resource.h>

#include "schedule/algorithms.h"
#include "simulate/simulator.h"
#include "topology/presets.h"

namespace {

using namespace collsim;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"collsim-bench: ring all-reduce on the ideal model"};
  int ranks = 1024;
  std::string size = "1GiB";
  app.add_option("--ranks", ranks, "Number of GPUs")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const double baseline_mib = peak_rss_mib();
  const Topology topo = make_switch_topology(ranks, 450e9, 0);
  Router router(topo);
  NetworkParams params;
  params.alpha = from_seconds(5e-6);
  auto model = make_network_model(params, topo, router);

  CollectiveShape shape;
  shape.ranks = ranks;
  shape.count = (std::int64_t{1} << 30) / 4;

  const auto t_gen = Clock::now();
  const Schedule schedule = find_algorithm(CollectiveOp::AllReduce, "ring")->generate(shape, {});
  const double gen_s = seconds_since(t_gen);

  std::vector<NodeId> gpus;
  for (int r = 0; r < ranks; ++r) gpus.push_back(topo.gpu_of_rank(r));
  std::vector<CollectiveTask> tasks{{"ring", &schedule, gpus, {}}};
  Simulator sim(topo, router, *model, SimulationOptions{.record_ops = false});
  const auto t_load = Clock::now();
  sim.load(tasks);
  const double load_s = seconds_since(t_load);
  const auto t_loop = Clock::now();
  const SimulationResult result = sim.run_loaded();
  const double loop_s = seconds_since(t_loop);
  const double sim_s = load_s + loop_s;

  const double transfers = static_cast<double>(result.transfers);
  const double peak = peak_rss_mib();
  fmt::print("ring all-reduce 1 GiB float32, K={} ({} transfers, {} steps), ideal model\n", ranks,
             result.transfers, schedule.num_steps);
  fmt::print("  simulated time    {:.6f} ms\n", to_seconds(result.tasks[0].end) * 1e3);
  fmt::print("  generate          {:.3f} s  ({:.2f} M transfers/s)\n", gen_s, transfers / gen_s / 1e6);
  fmt::print("  route + index     {:.3f} s  ({:.2f} M transfers/s)\n", load_s, transfers / load_s / 1e6);
  fmt::print("  event loop        {:.3f} s  ({:.2f} M transfers/s, {:.2f} M events/s)\n", loop_s,
             transfers / loop_s / 1e6, static_cast<double>(result.events) / loop_s / 1e6);
  fmt::print("  simulate (both)   {:.3f} s  ({:.2f} M transfers/s)\n", sim_s, transfers / sim_s / 1e6);
  fmt::print("  wall (gen + sim)  {:.3f} s\n", gen_s + sim_s);
  fmt::print("  schedule memory   {:.1f} bytes/transfer\n", static_cast<double>(schedule.memory_bytes()) / transfers);
  fmt::print("  peak RSS          {:.1f} MiB ({:.1f} bytes/transfer above start)\n", peak,
             (peak - baseline_mib) * 1024 * 1024 / transfers);
  return 0;
}
