// Benchmark: one collective on K GPUs under a chosen network model. Prints
// schedule generation, routing/indexing and event-loop rates, wall time and peak
// memory. One run per process, so peak memory belongs to that run alone:
//   collsim-bench --ranks 1024                                  (ring, switch, ideal)
//   collsim-bench --ranks 1024 --model flow --topology cluster  (128 nodes x 8, rail-optimized)
//   collsim-bench --ranks 256 --model flow --topology cluster --op all_to_all --algorithm direct
//   collsim-bench --ranks 4096 --model flow --topology cluster3  (three tiers: 16 pods of 256)
//   --bytes 64MiB collsim-bench --ranks 64 --model packet --bytes 256MiB
#include <fmt/format.h>
#include <sys/resource.h>
#include <CLI/CLI.hpp>
#include <chrono>

#include "core/units.h"
#include "network/flow_model.h"
#include "network/packet_model.h"
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
  CLI::App app{"collsim-bench: simulate one collective and report how fast the simulator ran"};
  int ranks = 1024;
  std::string size = "1GiB", model_name = "ideal", topology = "switch", op_name = "all_reduce",
              algorithm = "ring";
  std::string packet = "64KiB";
  app.add_option("--ranks", ranks, "Number of GPUs")->capture_default_str();
  app.add_option("--bytes", size, "Collective size (nccl-tests meaning)")->capture_default_str();
  app.add_option("--model", model_name, "ideal, flow or packet")->capture_default_str();
  app.add_option("--topology", topology,
                 "switch (450 GB/s), cluster (8 GPUs per node, rail-optimized, 4 spines) or "
                 "cluster3 (the same in pods of 32 nodes, 4 spines each, 8 cores)")
      ->capture_default_str();
  app.add_option("--op", op_name, "Collective")->capture_default_str();
  app.add_option("--algorithm", algorithm, "Algorithm")->capture_default_str();
  app.add_option("--packet", packet, "Packet size for the packet model")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const double baseline_mib = peak_rss_mib();
  Topology topo;
  if (topology == "cluster" || topology == "cluster3") {
    ClusterParams p;
    p.nodes = ranks / 8;
    p.spines = 4;
    if (topology == "cluster3") {
      p.pod_nodes = 32;
      p.cores = 8;
    }
    topo = make_cluster_topology(p);
  } else {
    topo = make_switch_topology(ranks, 450e9, 0);
  }
  Router router(topo);
  NetworkParams params;
  params.model = model_name;
  params.alpha = from_seconds(5e-6);
  params.packet_bytes = *parse_size(packet);
  auto model = make_network_model(params, topo, router);

  CollectiveShape shape;
  shape.op = *collective_from_name(op_name);
  shape.ranks = ranks;
  shape.count = *parse_size(size) / 4;

  const auto t_gen = Clock::now();
  const Schedule schedule = find_algorithm(shape.op, algorithm)->generate(shape, {});
  const double gen_s = seconds_since(t_gen);

  std::vector<NodeId> gpus;
  for (int r = 0; r < ranks; ++r) gpus.push_back(topo.gpu_of_rank(r));
  std::vector<CollectiveTask> tasks{{"bench", &schedule, gpus, {}, nullptr}};
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
  fmt::print("{} {} {} float32, K={} on {} ({} transfers, {} steps), {} model\n", algorithm,
             op_name, size, ranks, topo.name, result.transfers, schedule.num_steps, model_name);
  fmt::print("  simulated time    {:.6f} ms\n", to_seconds(result.tasks[0].end) * 1e3);
  fmt::print("  generate          {:.3f} s  ({:.2f} M transfers/s)\n", gen_s,
             transfers / gen_s / 1e6);
  fmt::print("  route + index     {:.3f} s  ({:.2f} M transfers/s)\n", load_s,
             transfers / load_s / 1e6);
  fmt::print("  event loop        {:.3f} s  ({:.2f} M transfers/s, {:.2f} M events/s)\n", loop_s,
             transfers / loop_s / 1e6, static_cast<double>(result.events) / loop_s / 1e6);
  if (auto* flow = dynamic_cast<FlowModel*>(model.get()))
    fmt::print("  rate solves       {}\n", flow->resolves());
  if (auto* pm = dynamic_cast<PacketModel*>(model.get()))
    fmt::print("  packet-hops       {} ({:.2f} M/s in the event loop)\n", pm->packet_hops(),
               static_cast<double>(pm->packet_hops()) / loop_s / 1e6);
  fmt::print("  simulate (both)   {:.3f} s  ({:.2f} M transfers/s)\n", sim_s,
             transfers / sim_s / 1e6);
  fmt::print("  wall (gen + sim)  {:.3f} s\n", gen_s + sim_s);
  fmt::print("  schedule memory   {:.1f} bytes/transfer\n",
             static_cast<double>(schedule.memory_bytes()) / transfers);
  fmt::print("  peak RSS          {:.1f} MiB ({:.1f} bytes/transfer above start)\n", peak,
             (peak - baseline_mib) * 1024 * 1024 / transfers);
  return 0;
}
