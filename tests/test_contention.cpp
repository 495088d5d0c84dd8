// Issue figures that need contention and real cluster topologies, from the
// bundled scenarios, under the flow model; and the packet model.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "helpers.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"

using namespace collsim;
using namespace collsim::test;

namespace {

ScenarioResult run_bundled(const std::string& name) {
  // fmt rather than string concatenation: GCC 12 misreads the latter with -Warray-bounds.
  return run_scenario(load_scenario(fmt::format("{}/scenarios/{}.json", COLLSIM_SOURCE_DIR, name)));
}

std::int64_t bytes_on(const Scenario& s, const ScenarioResult& r, LinkKind kind) {
  std::int64_t total = 0;
  for (LinkId l = 0; l < static_cast<LinkId>(s.topology.links().size()); ++l)
    if (s.topology.link(l).kind == kind) total += r.sim.links.bytes(l);
  return total;
}

}  // namespace

TEST_CASE(
    "hierarchical beats the one-channel ring by about 4.8x on 8 nodes x 8 GPUs (1 GiB, NVLink 450, "
    "NIC 50 GB/s), and a ring per rail beats both") {
  const auto r = run_bundled("hierarchical-vs-flat");
  const double ratio = r.outcomes[0].time_s / r.outcomes[1].time_s;
  CHECK(ratio == Approx(4.8).epsilon(0.02));
  // The closed form: flat crosses a NIC every step; hierarchical is the sum of its levels.
  const double N = 1 << 30, a = 5e-6;
  CHECK(r.outcomes[0].time_s == Approx(2 * 63 * (a + N / 64 / 50e9)).epsilon(1e-6));
  CHECK(r.outcomes[1].time_s ==
        Approx(2 * 7 * (a + N / (8 * 450e9)) + 2 * 7 * (a + N / 8 / (8 * 50e9))).epsilon(1e-6));
  // The ring with a channel per rail (NCCL's way): 8 rings of 64 on an eighth of the data
  // each, every NIC carrying one: each step at 50 GB/s on N / 8 / 64 bytes.
  CHECK(r.outcomes[2].time_s == Approx(2 * 63 * (a + N / 8 / 64 / 50e9)).epsilon(1e-6));
  CHECK(r.outcomes[2].time_s < r.outcomes[1].time_s);
}

TEST_CASE("a 2:1 oversubscribed spine halves cross-rail throughput, 1:1 does not") {
  const auto one = run_bundled("oversubscribed-spine-1to1");
  const auto two = run_bundled("oversubscribed-spine-2to1");
  // All-spine traffic: NIC-bound at 1:1 (the full 50 GB/s), uplink-bound at 2:1.
  CHECK(one.outcomes[0].algbw_Bps == Approx(50e9).epsilon(0.01));
  CHECK(two.outcomes[0].time_s / one.outcomes[0].time_s == Approx(2.0).epsilon(0.01));
  // The all-to-all also sends 2/9 of its bytes inside nodes or within a rail, so it loses less.
  const double a2a = two.outcomes[1].time_s / one.outcomes[1].time_s;
  CHECK(a2a > 1.5);
  CHECK(a2a < 2.0);
}

TEST_CASE("MoE: one expert taking 25% instead of 12.5% of the tokens about doubles the exchange") {
  const auto r = run_bundled("moe-all-to-all");
  CHECK(r.outcomes[2].time_s / r.outcomes[0].time_s == Approx(2.0).epsilon(0.05));
}

TEST_CASE("parameter server: the server's link time grows linearly with K, the ring's does not") {
  const auto r = run_bundled("parameter-server-scaling");
  // Rows: ps K=4, ring K=4, ps K=8, ring K=8, ps K=16, ring K=16. The server moves (K-1) N each
  // way.
  const double N = 64 << 20;
  for (int i = 0, K = 4; i < 3; ++i, K *= 2)
    CHECK(r.outcomes[2 * i].time_s == Approx(2 * (5e-6 + (K - 1) * N / 25e9)).epsilon(1e-6));
  CHECK(r.outcomes[4].time_s / r.outcomes[0].time_s == Approx(5.0).epsilon(0.01));  // (16-1)/(4-1)
  CHECK(r.outcomes[5].time_s / r.outcomes[1].time_s < 1.35);  // ring: 2(K-1)/K
}

TEST_CASE("placement: the scattered ring takes as long but moves 8x the bytes over NICs") {
  const Scenario s = load_scenario(fmt::format("{}/scenarios/placement.json", COLLSIM_SOURCE_DIR));
  Scenario packed = s, scattered = s;
  packed.collectives.resize(1);
  scattered.collectives.erase(scattered.collectives.begin());
  scattered.collectives[0].after.clear();
  const auto rp = run_scenario(packed), rs = run_scenario(scattered);
  CHECK(rp.outcomes[0].time_s == Approx(rs.outcomes[0].time_s).epsilon(1e-6));
  // GPU-NIC (PCIe) links: packed crosses 8 of them each step, scattered 64.
  CHECK(bytes_on(scattered, rs, LinkKind::Pcie) == 8 * bytes_on(packed, rp, LinkKind::Pcie));
  CHECK(bytes_on(scattered, rs, LinkKind::NvLink) == 0);
}

TEST_CASE(
    "packet model: within one packet time per hop of the ideal model where nothing contends") {
  for (std::int64_t packet : {4096, 65536}) {
    for (int K : {2, 4, 8}) {
      const Topology topo = make_switch_topology(K, 100e9, from_seconds(2e-7));
      const Schedule s =
          generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, K, 1 << 20));
      Router router(topo);
      NetworkParams p;
      p.model = collsim::NetworkModelKind::Packet;
      p.alpha = from_seconds(3e-6);
      p.packet_bytes = packet;
      auto net = make_network_model(p, topo, router);
      std::vector<NodeId> gpus;
      for (int r = 0; r < K; ++r) gpus.push_back(topo.gpu_of_rank(r));
      Simulator sim(topo, router, *net);
      const auto pr = sim.run({{"x", &s, gpus, {}, nullptr}});
      const double ideal = simulated_seconds(s, topo, 3e-6, "ideal");
      const double packet_time = packet / 100e9;
      const int hops = 1;  // each transfer: 2 links, so one extra packet time per step
      const double got = to_seconds(pr.tasks[0].end);
      INFO("K=" << K << " packet=" << packet);
      CHECK(got >= ideal - 1e-12);
      CHECK(got <= ideal + s.num_steps * hops * packet_time * (1 + 1e-9) + 1e-12);
    }
  }
}

TEST_CASE(
    "packet model: two transfers through one link queue behind each other, cut-through saves the "
    "hop") {
  Topology topo = make_switch_topology(3, 10e9, from_seconds(1e-6));
  CollectiveShape shape = shape_of(CollectiveOp::AllToAll, 3, 0);
  shape.matrix = std::make_shared<std::vector<std::int64_t>>(
      std::vector<std::int64_t>{0, 250'000, 250'000, 0, 0, 0, 0, 0, 0});
  const Schedule s = generate(CollectiveOp::AllToAll, "direct", shape);
  auto run = [&](bool cut_through) {
    Router router(topo);
    NetworkParams p;
    p.model = collsim::NetworkModelKind::Packet;
    p.packet_bytes = 100'000;
    p.cut_through = cut_through;
    auto net = make_network_model(p, topo, router);
    Simulator sim(topo, router, *net);
    return to_seconds(sim.run({{"x", &s, {0, 1, 2}, {}, nullptr}}).tasks[0].end);
  };
  // gpu0's link sends 2 MB (20 packets) back to back: 0.2 ms; the last packet then
  // crosses the switch link (10 us) and two latencies.
  CHECK(run(false) == Approx(2e6 / 10e9 + 100'000 / 10e9 + 2e-6).epsilon(1e-9));
  CHECK(run(true) < run(false));
}
