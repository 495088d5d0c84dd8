// Benchmark: one collective on K GPUs under a chosen network model. Prints
// schedule generation, routing/indexing and event-loop rates, wall and CPU time and
// peak memory. One run per process, so peak memory belongs to that run alone:
//   collsim-bench --ranks 1024                                  (ring, switch, ideal)
//   collsim-bench --ranks 1024 --model flow --topology cluster  (128 nodes x 8, rail-optimized)
//   collsim-bench --ranks 256 --model flow --topology cluster --op all_to_all --algorithm direct
//   collsim-bench --ranks 4096 --model flow --topology cluster3  (three tiers: 16 pods of 256)
//   collsim-bench --ranks 4096 --model flow --topology cluster --spines 1 --symmetry  (folded)
//   collsim-bench --ranks 4096 --model flow --topology cluster --dmodk --symmetry  (4 spines)
//   collsim-bench --ranks 64 --model packet --bytes 256MiB
//
// --targets runs every figure of the scale targets (issue 15) in one go, each case in
// a child process of its own (its peak RSS is that child's), next to the floor
// (tools/floor/floor.cpp, the least work any simulator must do; built as the
// collsim-floor target when that file is there, or given with --floor):
//   collsim-bench --targets [--floor PATH] [--repeat 3] [--k100k]
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <streambuf>

#include "core/json_view.h"
#include "core/memory.h"
#include "core/units.h"
#include "huge_pages.h"
#include "network/flow_model.h"
#include "network/packet_model.h"
#include "report/run_use_case.h"
#include "scenario/scenario.h"
#include "schedule/algorithms.h"
#include "simulate/run_workload.h"
#include "simulate/simulator.h"
#include "simulate/streamed.h"
#include "simulate/symmetric.h"
#include "topology/presets.h"

namespace {

using namespace collsim;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds of this process: on a shared machine, steadier than the wall clock.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is KiB on Linux
}

struct Case {
  int ranks = 1024;
  std::string size = "1GiB", model = "ideal", topology = "switch", op = "all_reduce",
              algorithm = "ring", packet = "64KiB";
  double bandwidth = 450e9;  // switch topology's links, bytes/s
  bool stream = false;       // generate and simulate at once (simulate/streamed.h)
  bool one_thread = false;   // streamed: the generator on the simulator's thread
  bool fold = false;         // one group of alike ranks for all (simulate/symmetric.h)
  int spines = 4;            // cluster topologies' spine switches
  bool dmodk = false;        // D-mod-k routing over them (else ECMP)
  // > 0: not a ring but Meta's Llama 3 405B step (TP 8, PP 16, 1F1B, flow) with this many
  // replicas, as `collsim run` runs it (folded by its replicas where that pays).
  int llama_dp = 0;
  // > 0: not one ring but this many independent ring all-reduces of 4 KiB on a 4-GPU switch
  // (`model`), read from scenario text, planned, run and reported as `collsim run` does
  // (`json`: its --format json document), the output thrown away.
  int independent = 0;
  bool json = false;
};

// What one run measured; plain data, so a child process can hand it over a pipe.
struct Figures {
  double simulated_s = 0, gen_s = 0, check_s = 0, load_s = 0, loop_s = 0, cpu_s = 0, peak_mib = 0,
         schedule_bytes = 0;
  std::uint64_t transfers = 0, events = 0, packet_hops = 0, resolves = 0, peak_held = 0,
                played = 0;  // folded: the representatives
  int steps = 0;
  char topology[64] = {};
};

Topology make_topology(const Case& c) {
  if (c.topology == "cluster" || c.topology == "cluster3") {
    ClusterParams p;
    p.nodes = c.ranks / 8;
    p.spines = c.spines;
    if (c.topology == "cluster3") {
      p.pod_nodes = 32;
      p.cores = 8;
    }
    return make_cluster_topology(p);
  }
  return make_switch_topology(c.ranks, c.bandwidth, 0);
}

// One case set up: its topology, network model and algorithm, and each way to run it.
class CaseRun {
 public:
  explicit CaseRun(const Case& c)
      : c_(c),
        cpu0_(cpu_seconds()),
        topo_(make_topology(c)),
        router_(topo_, c.dmodk ? RoutingPolicy::DestinationModK : RoutingPolicy::Ecmp) {
    params_.model = *network_model_named(c.model);
    params_.routing = router_policy();
    params_.alpha = from_seconds(5e-6);
    params_.packet_bytes = *parse_size(c.packet);
    model_ = make_network_model(params_, topo_, router_);
    shape_.op = *collective_from_name(c.op);
    shape_.ranks = c.ranks;
    shape_.count = *parse_size(c.size) / 4;
    for (int r = 0; r < c.ranks; ++r) gpus_.push_back(topo_.gpu_of_rank(r));
    entry_ = find_algorithm(shape_.op, c.algorithm);
    if (!entry_) throw std::invalid_argument("no algorithm " + c.algorithm + " for " + c.op);
  }

  Figures run() { return c_.fold ? folded() : c_.stream ? streamed() : stored(); }

  RoutingPolicy router_policy() const {
    return c_.dmodk ? RoutingPolicy::DestinationModK : RoutingPolicy::Ecmp;
  }

 private:
  // As collsim run folds it: the representatives, played over canonical links.
  Figures folded() {
    const auto t_loop = Clock::now();
    std::string why = "the algorithm has no fold for this shape";
    std::optional<QuotientSchedule> own = entry_->quotient && !entry_->quotient_stream
                                              ? entry_->quotient(shape_, {})
                                              : std::nullopt;  // made as played, as run does
    std::optional<FoldedRun> run = simulate_folded(topo_, router_, *model_, params_.model,
                                                   collective(), *entry_, shape_, {}, own, why);
    if (!run) throw std::invalid_argument("not folded: " + why);
    Figures f = from_streamed(run->result, seconds_since(t_loop));
    f.played = run->played;
    return f;
  }

  // Generation and simulation interleave: all of it is the event loop.
  Figures streamed() {
    const auto t_loop = Clock::now();
    const StreamedResult r = simulate_streamed(
        topo_, router_, *model_, collective(), [&] { return entry_->generate(shape_, {}); },
        c_.one_thread ? GenerateOn::CallerThread : GenerateOn::OwnThread);
    return from_streamed(r, seconds_since(t_loop));
  }

  Figures stored() {
    Figures f;
    const auto t_gen = Clock::now();
    const Schedule schedule = entry_->generate(shape_, {});
    f.gen_s = seconds_since(t_gen);
    // What every command does before simulating; timed apart (not in "wall (gen + sim)").
    const auto t_check = Clock::now();
    if (const std::string e = check_schedule(schedule); !e.empty())
      throw std::logic_error("invalid schedule: " + e);
    f.check_s = seconds_since(t_check);

    std::vector<CollectiveTask> tasks{{"bench", &schedule, gpus_, {}, nullptr}};
    Simulator sim(topo_, router_, *model_, SimulationOptions{.record_ops = false});
    const auto t_load = Clock::now();
    sim.load(tasks);
    f.load_s = seconds_since(t_load);
    const auto t_loop = Clock::now();
    const SimulationResult result = sim.run_loaded();
    f.loop_s = seconds_since(t_loop);

    f.simulated_s = to_seconds(result.tasks[0].end);
    f.transfers = result.transfers;
    f.events = result.events;
    f.steps = schedule.num_steps;
    f.schedule_bytes = static_cast<double>(schedule.memory_bytes());
    return finish(f);
  }

  StreamedCollective collective() const { return {gpus_, nullptr}; }

  Figures from_streamed(const StreamedResult& r, double loop_s) {
    Figures f;
    f.loop_s = loop_s;
    f.simulated_s = to_seconds(r.end);
    f.transfers = r.transfers;
    f.events = r.events;
    f.steps = r.steps;
    f.schedule_bytes = static_cast<double>(r.held_bytes);
    f.peak_held = r.peak_held;
    return finish(f);
  }

  Figures finish(Figures f) const {
    if (auto* flow = dynamic_cast<FlowModel*>(model_.get())) f.resolves = flow->resolves();
    if (auto* pm = dynamic_cast<PacketModel*>(model_.get())) f.packet_hops = pm->packet_hops();
    fmt::format_to_n(f.topology, sizeof(f.topology) - 1, "{}", topo_.name);
    f.cpu_s = cpu_seconds() - cpu0_;
    f.peak_mib = peak_rss_mib();
    return f;
  }

  const Case& c_;
  double cpu0_;
  Topology topo_;
  Router router_;
  NetworkParams params_;
  std::unique_ptr<NetworkModel> model_;
  CollectiveShape shape_;
  std::vector<NodeId> gpus_;
  const AlgorithmEntry* entry_ = nullptr;
};

// The scenario tools/llama3_405b_check.py writes (kernels at 50% of peak): 16 x dp servers
// of 8 H100s on a rail-optimised fat tree, Meta's published parallelism.
Figures run_llama_step(const Case& c) {
  const double cpu0 = cpu_seconds();
  const std::string text = fmt::format(
      R"({{"topology": {{"preset": "cluster", "nodes": {}, "gpus_per_node": 8, "nvlink": "450GB/s",
                        "nic": "400Gbps"}},
          "network": {{"model": "flow"}},
          "workload": {{"model": "llama3-405b", "gpu": "h100", "mfu": 0.5, "bucket": "256MiB",
                        "tokens_per_gpu": 1024,
                        "parallelism": {{"tp": 8, "pp": 16, "dp": {}, "micro_batches": 16,
                                         "pipeline": "1f1b", "sequence_parallel": true,
                                         "zero": 1, "recompute": "none"}}}}}})",
      16 * c.llama_dp, c.llama_dp);
  const Scenario s = parse_scenario(parse_json_text(text, "llama3-405b.json"), ".");
  const auto t0 = Clock::now();
  const WorkloadRun run = run_workloads(s, StepFold::Pays);
  Figures f;
  f.loop_s = seconds_since(t0);
  f.simulated_s = run.step.step_s;
  f.transfers = run.step.sim.transfers;
  f.events = run.step.sim.events;
  fmt::format_to_n(f.topology, sizeof(f.topology) - 1, "{}", run.fold_note);
  f.cpu_s = cpu_seconds() - cpu0;
  f.peak_mib = peak_rss_mib();
  return f;
}

// Writes nothing anywhere: the reports are made, their bytes dropped.
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int ch) override { return ch; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

Figures run_independent(const Case& c) {
  const double cpu0 = cpu_seconds();
  const auto t0 = Clock::now();
  std::string text = fmt::format(
      R"({{"topology": {{"preset": "switch", "gpus": 4, "bandwidth": "450GB/s"}},
          "network": {{"model": "{}"}}, "collectives": [)",
      c.model);
  for (int i = 0; i < c.independent; ++i)
    text += fmt::format(R"({}{{"name": "c{}", "op": "all_reduce", "bytes": "4KiB", )"
                        R"("algorithm": "ring", "after": []}})",
                        i ? ", " : "", i);
  text += "]}";
  const Scenario s = parse_scenario(parse_json_text(text, "independent.json"), ".");
  const RunRecord record = run_use_case(s, {});
  NullBuffer null;
  std::ostream out(&null);
  if (c.json)
    write_run_document(out, s, record);
  else
    out << run_table(s, record);
  Figures f;
  f.loop_s = seconds_since(t0);
  f.simulated_s = record.result->outcomes.back().end_s;
  f.transfers = record.result->sim.transfers;
  f.events = record.result->sim.events;
  f.cpu_s = cpu_seconds() - cpu0;
  f.peak_mib = peak_rss_mib();
  return f;
}

Figures run_case(const Case& c) {
  if (c.independent > 0) return run_independent(c);
  return c.llama_dp > 0 ? run_llama_step(c) : CaseRun(c).run();
}

void print_single(const Case& c, const Figures& f, double baseline_mib) {
  const double transfers = static_cast<double>(f.transfers);
  const double sim_s = f.load_s + f.loop_s;
  fmt::print("{} {} {} float32, K={} on {} ({} transfers, {} steps), {} model\n", c.algorithm, c.op,
             c.size, c.ranks, f.topology, f.transfers, f.steps, c.model);
  fmt::print("  simulated time    {:.6f} ms\n", f.simulated_s * 1e3);
  if (c.stream || c.fold) {
    fmt::print("  generate + simulate, {}  {:.3f} s  ({:.2f} M transfers/s, {:.2f} M events/s)\n",
               c.fold ? "folded" : "streamed", f.loop_s, transfers / f.loop_s / 1e6,
               static_cast<double>(f.events) / f.loop_s / 1e6);
    if (c.fold)
      fmt::print("  ops played        {} (one group of alike ranks; at most {} held)\n", f.played,
                 f.peak_held);
    else
      fmt::print("  ops held at most  {} ({:.1f} MiB with their successor lists)\n", f.peak_held,
                 f.schedule_bytes / (1 << 20));
    fmt::print("  CPU               {:.3f} s\n", f.cpu_s);
    fmt::print("  peak RSS          {:.1f} MiB\n", f.peak_mib);
    return;
  }
  fmt::print("  generate          {:.3f} s  ({:.2f} M transfers/s)\n", f.gen_s,
             transfers / f.gen_s / 1e6);
  fmt::print("  check_schedule    {:.3f} s  ({:.2f} M transfers/s)\n", f.check_s,
             transfers / f.check_s / 1e6);
  fmt::print("  route + index     {:.3f} s  ({:.2f} M transfers/s)\n", f.load_s,
             transfers / f.load_s / 1e6);
  fmt::print("  event loop        {:.3f} s  ({:.2f} M transfers/s, {:.2f} M events/s)\n", f.loop_s,
             transfers / f.loop_s / 1e6, static_cast<double>(f.events) / f.loop_s / 1e6);
  if (c.model == "flow") fmt::print("  rate solves       {}\n", f.resolves);
  if (c.model == "packet")
    fmt::print("  packet-hops       {} ({:.2f} M/s in the event loop)\n", f.packet_hops,
               static_cast<double>(f.packet_hops) / f.loop_s / 1e6);
  fmt::print("  simulate (both)   {:.3f} s  ({:.2f} M transfers/s)\n", sim_s,
             transfers / sim_s / 1e6);
  fmt::print("  wall (gen + sim)  {:.3f} s\n", f.gen_s + sim_s);
  fmt::print("  CPU               {:.3f} s\n", f.cpu_s);
  fmt::print("  schedule memory   {:.1f} bytes/transfer\n", f.schedule_bytes / transfers);
  fmt::print("  peak RSS          {:.1f} MiB ({:.1f} bytes/transfer above start)\n", f.peak_mib,
             (f.peak_mib - baseline_mib) * 1024 * 1024 / transfers);
}

// ---- --targets: every case in a child process ----

struct Child {
  double wall_s = 0, cpu_s = 0, peak_mib = 0;  // from wait4: the child's own
  bool ok = false;
};

Child wait_child(pid_t pid, Clock::time_point t0) {
  int status = 0;
  rusage u{};
  wait4(pid, &status, 0, &u);
  Child c;
  c.wall_s = seconds_since(t0);
  c.cpu_s = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
            static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  c.peak_mib = static_cast<double>(u.ru_maxrss) / 1024.0;
  c.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return c;
}

// Runs the case in a child; its figures come back over a pipe.
std::optional<std::pair<Figures, Child>> run_in_child(const Case& c) {
  int fd[2];
  if (pipe(fd) != 0) return std::nullopt;
  std::fflush(stdout);  // the child must not inherit (and repeat) buffered output
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    int rc = 0;
    try {
      const Figures f = run_case(c);
      rc = write(fd[1], &f, sizeof f) == static_cast<ssize_t>(sizeof f) ? 0 : 1;
    } catch (const std::exception& e) {
      fmt::print(stderr, "  failed: {}\n", e.what());
      rc = 1;
    }
    _exit(rc);
  }
  close(fd[1]);
  Figures f;
  const bool got = read(fd[0], &f, sizeof f) == static_cast<ssize_t>(sizeof f);
  close(fd[0]);
  const Child child = wait_child(pid, t0);
  if (!got || !child.ok) return std::nullopt;
  return std::make_pair(f, child);
}

struct FloorRun {
  double simulated_s = 0;
  Child child;
};

// The floor program on the same ring: K, bytes, α, bandwidth.
std::optional<FloorRun> run_floor(const std::string& path, const Case& c) {
  int fd[2];
  if (pipe(fd) != 0) return std::nullopt;
  // Arguments and environment made here: the forked child only calls execve. The floor
  // runs as it would from a shell, not on the heap setting of our restart.
  std::string program = path, ranks = std::to_string(c.ranks),
              bytes = std::to_string(*parse_size(c.size)), alpha = "5e-6",
              bandwidth = fmt::format("{}", c.bandwidth);
  char* args[] = {program.data(), ranks.data(),     bytes.data(),
                  alpha.data(),   bandwidth.data(), nullptr};
  std::vector<std::string> env = environment_before_restart();
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::fflush(stdout);  // the child must not inherit (and repeat) buffered output
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], STDOUT_FILENO);
    close(fd[0]);
    close(fd[1]);
    execve(program.c_str(), args, envp.data());
    _exit(127);
  }
  close(fd[1]);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd[0]);
  FloorRun r;
  r.child = wait_child(pid, t0);
  const auto at = out.find("sim_s=");
  if (!r.child.ok || at == std::string::npos) return std::nullopt;
  r.simulated_s = std::stod(out.substr(at + 6));
  return r;
}

template <class T>
T median(std::vector<T> v, auto key) {
  std::sort(v.begin(), v.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
  return v[v.size() / 2];
}

// Bytes the machine can still give (MemAvailable), to skip runs that cannot fit.
double available_bytes() {
  return static_cast<double>(collsim::memory_available());
}

// A stored ring all-reduce costs about this much per transfer at peak (measured at
// K=4096: schedule, successor graph, per-op route and counters); the floor about 20 (643 MB
// for 33.5 M transfers).
constexpr double kStoredBytesPerTransfer = 120;
constexpr double kFloorBytesPerTransfer = 20;

struct Target {
  std::string what;
  Case c;
  double max_wall_s = 0;  // 0: no time target (report only)
  bool with_floor = false;
  bool once = false;  // too long to repeat
};

// The scale targets of the performance issue, each with its limit where it has one.
std::vector<Target> scale_targets(bool with_100k) {
  Case ideal{.ranks = 4096};
  Case flow_small{.ranks = 1024, .size = "1KiB", .model = "flow", .bandwidth = 25e9};
  // 20.6 M packet-hops (0.4 s): a rate, not the first events' warm-up (256 MiB, 1.3 M hops in
  // 0.03 s, read 31-48 M/s from run to run where this reads 52-53 M/s).
  Case packet{.ranks = 64, .size = "4GiB", .model = "packet", .topology = "cluster"};
  Case ideal_streamed = ideal;
  ideal_streamed.stream = true;
  std::vector<Target> targets{
      {"ideal ring 1GiB switch K=4096, stored schedule", ideal, 0, true},
      {"ideal ring 1GiB switch K=4096, streamed (<= 1.2x floor wall, < floor memory)",
       ideal_streamed, 0, true},
      // Flat cost per transfer: the floor itself slows from K=4096 (its arrays leave the
      // caches), so both run once, side by side.
      {"ideal ring 1GiB switch K=16384, streamed (<= 1.2x floor wall, < floor memory)",
       Case{.ranks = 16384, .stream = true}, 0, true, true},
      {"flow ring 1KiB switch 25GB/s K=1024 (< 0.45 s)", flow_small, 0.45, false},
  };
  for (int k : {1024, 2048, 4096})
    targets.push_back({fmt::format("flow ring 1GiB cluster K={} (4 spines, ECMP), streamed", k),
                       Case{.ranks = k, .model = "flow", .topology = "cluster", .stream = true},
                       0.0, false});
  // The cluster preset's own spine: its turns by a leaf's servers map it onto itself, so
  // collsim run folds it (ECMP over 4 spines sends the turns of a transfer different ways).
  for (int k : {1024, 2048, 4096})
    targets.push_back(
        {fmt::format("flow ring 1GiB cluster K={} (1 spine), folded as collsim run "
                     "folds it{}",
                     k, k == 4096 ? " (< 10 s)" : ""),
         Case{.ranks = k, .model = "flow", .topology = "cluster", .fold = true, .spines = 1},
         k == 4096 ? 10.0 : 0.0, false});
  // Four spines under D-mod-k: a leaf's servers and the next leaf's route alike, so it folds.
  for (int k : {1024, 2048, 4096})
    targets.push_back(
        {fmt::format("flow ring 1GiB cluster K={} (4 spines, D-mod-k), folded{}", k,
                     k == 4096 ? " (< 10 s)" : ""),
         Case{.ranks = k, .model = "flow", .topology = "cluster", .fold = true, .dmodk = true},
         k == 4096 ? 10.0 : 0.0, false});
  // 1,073,600,000 bytes split into 100,000 equal chunks: a turn of one rank folds it.
  targets.push_back(
      {"ideal ring 1073600000 B switch K=100000, folded as collsim run folds it "
       "(< 5 s)",
       Case{.ranks = 100000, .size = "1073600000", .fold = true}, 5.0, false});
  // 1 GiB of float32 does not: its chunks (2,685 and 2,684 elements) repeat every 3,125
  // ranks, and that turn's 6.25e8 representatives are played as they are made.
  targets.push_back({"ideal ring 1GiB switch K=100000, as collsim run folds it (< 600 s)",
                     Case{.ranks = 100000, .fold = true}, 600.0, false, true});
  targets.push_back({"packet ring 4GiB cluster K=64 (>= 40 M packet-hops/s)", packet, 0, false});
  // Meta's 16,384-GPU configuration; the whole step takes 80-120 s and 4 GB here.
  targets.push_back(
      {"Llama 3 405B step, 16384 GPUs (TP 8, PP 16, DP 128, 1F1B, flow), as "
       "collsim run runs it (< 60 s, < 4 GB)",
       Case{.llama_dp = 128}, 60.0, false});
  // Many small collectives: the scenario read, planned, run and reported (< 3 s).
  for (const char* model : {"ideal", "flow"})
    for (bool json : {false, true})
      targets.push_back(
          {fmt::format("100000 independent 4KiB all-reduces, 4-GPU switch, {}, as collsim run{} "
                       "(< 3 s)",
                       model, json ? " --format json" : ""),
           Case{.model = model, .independent = 100000, .json = json}, 3.0, false});
  // 2e10 transfers: over an hour on two cores, so once, and only when asked.
  if (with_100k)
    targets.push_back({"ideal ring 1GiB switch K=100000, streamed (finishes; run once)",
                       Case{.ranks = 100000, .stream = true}, 0, false, true});
  return targets;
}

// What one target's median run did, and whether it met its limit.
void print_target_run(const Target& t, const Figures& f, const Child& child) {
  if (t.c.independent > 0) {  // whole runs of a scenario: read, plan, run, report
    fmt::print("  {} transfers, {} events; all done at {:.3f} us simulated\n", f.transfers,
               f.events, f.simulated_s * 1e6);
    fmt::print(
        "  wall {:.3f} s (read, plan, run, report: {:.3f}), CPU {:.3f} s; peak RSS {:.1f} MiB\n",
        child.wall_s, f.loop_s, child.cpu_s, child.peak_mib);
    fmt::print("  target < {} s: {} by wall, {} by CPU\n", t.max_wall_s,
               child.wall_s < t.max_wall_s ? "met" : "missed",
               child.cpu_s < t.max_wall_s ? "met" : "missed");
    return;
  }
  if (t.c.llama_dp > 0) {  // a training step: its time, how it ran, and the whole process
    fmt::print("  step {:.3f} s simulated, {} transfers, {} events played; {}\n", f.simulated_s,
               f.transfers, f.events, f.topology[0] ? f.topology : "not folded");
    fmt::print("  wall {:.3f} s (the step {:.3f}), CPU {:.3f} s; peak RSS {:.1f} MiB\n",
               child.wall_s, f.loop_s, child.cpu_s, child.peak_mib);
    fmt::print("  target < {} s and < 4 GB: {} by wall, {} by memory\n", t.max_wall_s,
               child.wall_s < t.max_wall_s ? "met" : "missed",
               child.peak_mib * 1048576.0 < 4e9 ? "met" : "missed");
    return;
  }
  fmt::print("  simulated {:.6f} ms, {} transfers, {} events{}\n", f.simulated_s * 1e3, f.transfers,
             f.events,
             t.c.fold     ? fmt::format(", {} ops played", f.played)
             : t.c.stream ? fmt::format(", at most {} ops held", f.peak_held)
                          : "");
  if (t.c.stream || t.c.fold)
    fmt::print("  wall {:.3f} s (generate and simulate, {}, {:.3f}), CPU {:.3f} s\n", child.wall_s,
               t.c.fold ? "folded" : "streamed", f.loop_s, child.cpu_s);
  else
    fmt::print(
        "  wall {:.3f} s (generate {:.3f}, check {:.3f}, route+index {:.3f}, event loop "
        "{:.3f}), CPU {:.3f} s\n",
        child.wall_s, f.gen_s, f.check_s, f.load_s, f.loop_s, child.cpu_s);
  fmt::print("  events/s {:.2f} M in the loop, {:.2f} M transfers/s overall; peak RSS {:.1f} MiB\n",
             static_cast<double>(f.events) / f.loop_s / 1e6,
             static_cast<double>(f.transfers) / child.wall_s / 1e6, child.peak_mib);
  if (t.c.model == "packet")
    fmt::print("  packet-hops/s {:.2f} M in the loop ({:.2f} M over the CPU time)\n",
               static_cast<double>(f.packet_hops) / f.loop_s / 1e6,
               static_cast<double>(f.packet_hops) / child.cpu_s / 1e6);
  if (t.max_wall_s > 0)
    fmt::print("  target < {} s: {} by wall, {} by CPU\n", t.max_wall_s,
               child.wall_s < t.max_wall_s ? "met" : "missed",
               child.cpu_s < t.max_wall_s ? "met" : "missed");
}

// The floor on the same case, `repeat` times, and collsim's ratios to its median.
void print_floor_ratio(const std::string& floor_path, const Case& c, int repeat,
                       const Child& child) {
  if (floor_path.empty()) {
    fmt::print("  floor: not built (tools/floor/floor.cpp); pass --floor\n");
    return;
  }
  const double transfers = 2.0 * (c.ranks - 1) * c.ranks;
  if (transfers * kFloorBytesPerTransfer > 0.8 * available_bytes()) {
    fmt::print("  floor: skipped, it needs ~{:.0f} GB, {:.0f} GB available\n",
               transfers * kFloorBytesPerTransfer / 1e9, available_bytes() / 1e9);
    return;
  }
  std::vector<FloorRun> floors;
  for (int i = 0; i < repeat; ++i)
    if (auto r = run_floor(floor_path, c)) floors.push_back(*r);
  if (floors.empty()) {
    fmt::print("  floor: {} did not run\n", floor_path);
    return;
  }
  const FloorRun fl = median(floors, [](const FloorRun& r) { return r.child.wall_s; });
  fmt::print("  floor: simulated {:.6f} ms, wall {:.3f} s, CPU {:.3f} s, peak RSS {:.1f} MiB\n",
             fl.simulated_s * 1e3, fl.child.wall_s, fl.child.cpu_s, fl.child.peak_mib);
  fmt::print("  collsim / floor: wall {:.2f}x, CPU {:.2f}x, memory {:.2f}x (targets 1.2x, < 1x)\n",
             child.wall_s / fl.child.wall_s, child.cpu_s / fl.child.cpu_s,
             child.peak_mib / fl.child.peak_mib);
}

int run_targets(const std::string& floor_path, int repeat, bool with_100k,
                const std::string& match) {
  fmt::print("median of {} run(s) each; wall and CPU are whole child processes (setup included)\n",
             repeat);
  // Per way of running the flow cluster (streamed, folded): (K, CPU seconds).
  std::map<std::string, std::vector<std::pair<int, double>>> flow_growth;
  for (const Target& t : scale_targets(with_100k)) {
    if (t.what.find(match) == std::string::npos) continue;
    fmt::print("\n{}\n", t.what);
    const double ops = 2.0 * (t.c.ranks - 1) * t.c.ranks;
    if (!t.c.stream && !t.c.fold && ops * kStoredBytesPerTransfer > 0.8 * available_bytes()) {
      fmt::print(
          "  skipped: a stored schedule needs ~{:.0f} GB, {:.0f} GB available "
          "(--stream runs it)\n",
          ops * kStoredBytesPerTransfer / 1e9, available_bytes() / 1e9);
      continue;
    }
    std::vector<std::pair<Figures, Child>> runs;
    for (int i = 0; i < (t.once ? 1 : repeat); ++i)
      if (auto r = run_in_child(t.c)) runs.push_back(*r);
    if (runs.empty()) {
      fmt::print("  failed\n");
      continue;
    }
    const auto [f, child] = median(runs, [](const auto& r) { return r.second.wall_s; });
    print_target_run(t, f, child);
    if (t.c.model == "flow" && t.c.topology == "cluster")
      flow_growth[t.c.dmodk  ? "folded (4 spines, D-mod-k)"
                  : t.c.fold ? "folded (1 spine)"
                             : "streamed (4 spines, ECMP)"]
          .emplace_back(t.c.ranks, child.cpu_s);
    if (t.with_floor) print_floor_ratio(floor_path, t.c, t.once ? 1 : repeat, child);
  }
  if (!with_100k && match.empty())
    fmt::print(
        "\nideal ring 1GiB switch K=100000, streamed: not run (add --k100k: 2e10 "
        "transfers: over an hour on two cores)\n");
  for (const auto& [how, growth] : flow_growth) {
    if (growth.size() < 2) continue;
    const auto [k0, t0] = growth.front();
    const auto [k1, t1] = growth.back();
    fmt::print(
        "\nflow on cluster, {}: CPU time grows as K^{:.2f} from K={} to K={} (target "
        "<= K^1.3)\n",
        how, std::log(t1 / t0) / std::log(static_cast<double>(k1) / k0), k0, k1);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  collsim::restart_with_huge_pages(argv);  // as the collsim command runs
  CLI::App app{"collsim-bench: simulate one collective and report how fast the simulator ran"};
  Case c;
  bool targets = false;
  int repeat = 3;
  bool with_100k = false;
#ifdef COLLSIM_FLOOR
  std::string floor_path = COLLSIM_FLOOR;
#else
  std::string floor_path;
#endif
  app.add_option("--ranks", c.ranks, "Number of GPUs")->capture_default_str();
  app.add_option("--bytes", c.size, "Collective size (nccl-tests meaning)")->capture_default_str();
  app.add_option("--model", c.model, "ideal, flow or packet")
      ->check(CLI::IsMember({"ideal", "flow", "packet"}))
      ->capture_default_str();
  app.add_option("--topology", c.topology,
                 "switch (450 GB/s), cluster (8 GPUs per node, rail-optimized, --spines) or "
                 "cluster3 (the same in pods of 32 nodes, --spines each, 8 cores)")
      ->capture_default_str();
  app.add_option("--bandwidth", c.bandwidth, "Switch topology link bandwidth, bytes/s")
      ->capture_default_str();
  app.add_option("--op", c.op, "Collective")->capture_default_str();
  app.add_option("--algorithm", c.algorithm, "Algorithm")->capture_default_str();
  app.add_option("--packet", c.packet, "Packet size for the packet model")->capture_default_str();
  app.add_flag("--stream", c.stream,
               "Generate and simulate at once, holding only the ops in flight (no per-op record)");
  app.add_option("--spines", c.spines, "Spine switches of the cluster topologies")
      ->capture_default_str();
  app.add_flag("--dmodk", c.dmodk, "D-mod-k routing over the cluster's spines (else ECMP)");
  app.add_flag("--symmetry", c.fold,
               "Fold: play one group of alike ranks for all, as collsim run --symmetry");
  app.add_flag("--one-thread", c.one_thread,
               "--stream: generate on the simulator's thread instead of a thread of its own");
  app.add_flag("--targets", targets, "Run every scale target, each in a child process");
  app.add_flag("--k100k", with_100k, "--targets: also the K=100000 streamed ring (once)");
  std::string match;
  app.add_option("--match", match, "--targets: only those whose title holds this text");
  app.add_option("--floor", floor_path, "The floor program (tools/floor/floor.cpp, built)");
  app.add_option("--repeat", repeat, "--targets: runs per case (the median is printed)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (targets) return run_targets(floor_path, repeat, with_100k, match);
  const double baseline_mib = peak_rss_mib();
  try {
    print_single(c, run_case(c), baseline_mib);
  } catch (const std::exception& e) {  // a case it cannot run (a fold refused): said, not aborted
    std::cerr << "collsim-bench: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
