// The flow model: agreement with the ideal model where nothing contends, and
// contention where it should show.
#include <catch2/catch.hpp>

#include "core/interrupt.h"
#include "helpers.h"
#include "network/due_queue.h"

using namespace collsim;
using namespace collsim::test;

TEST_CASE("flow equals ideal exactly on uncontended schedules") {
  struct Case {
    CollectiveOp op;
    const char* algorithm;
    int segments;
  };
  const Case cases[] = {{CollectiveOp::AllReduce, "ring", 1},
                        {CollectiveOp::ReduceScatter, "ring", 1},
                        {CollectiveOp::AllGather, "ring", 1},
                        {CollectiveOp::AllReduce, "binomial_tree", 1},
                        {CollectiveOp::AllReduce, "halving_doubling", 1},
                        {CollectiveOp::Broadcast, "ring", 5}};
  for (const auto& c : cases) {
    for (int K : {2, 3, 5, 8, 16}) {
      // On a ring of links only neighbour traffic is free of contention: trees and
      // halving-doubling send over several hops that overlap there.
      std::vector<Topology> topologies{make_switch_topology(K, 100e9, from_seconds(3e-7))};
      if (std::string(c.algorithm) == "ring") topologies.push_back(make_ring_topology(K, 50e9, 0));
      for (const Topology& topo : topologies) {
        AlgorithmOptions opt;
        opt.segments = c.segments;
        const Schedule s = generate(c.op, c.algorithm, shape_of(c.op, K, 10007), opt);
        const auto ideal = simulate(s, topo, 2e-6, "ideal");
        const auto flow = simulate(s, topo, 2e-6, "flow");
        INFO(c.algorithm << " " << name_of(c.op) << " K=" << K << " on " << topo.name);
        CHECK(flow.tasks[0].end == ideal.tasks[0].end);
        CHECK(flow.links.bytes_per_link() == ideal.links.bytes_per_link());
        CHECK(flow.links.busy_per_link() == ideal.links.busy_per_link());
      }
    }
  }
}

TEST_CASE("docs/models.md: naive all-reduce under flow takes 2 (alpha + (K-1) N / beta)") {
  for (int K : {2, 4, 8, 16}) {
    const std::int64_t bytes = 1'000'000;
    const Schedule s =
        generate(CollectiveOp::AllReduce, "naive", shape_of(CollectiveOp::AllReduce, K, bytes / 4));
    const double t = simulated_seconds(s, make_switch_topology(K, 25e9, 0), 5e-6, "flow");
    INFO("K=" << K);
    CHECK(t == Approx(2 * (5e-6 + (K - 1) * bytes / 25e9)).epsilon(1e-9));
  }
}

TEST_CASE(
    "docs/models.md ranking at K=8, 5 us, 25 GB/s under flow: naive at 1-10 KB, tree at 100 KB, "
    "ring "
    "from 1 MB") {
  const Topology topo = make_switch_topology(8, 25e9, 0);
  auto fastest = [&](std::int64_t bytes) {
    std::string best;
    double best_t = 1e9;
    for (const char* a : {"ring", "binomial_tree", "naive"}) {
      const double t = simulated_seconds(
          generate(CollectiveOp::AllReduce, a, shape_of(CollectiveOp::AllReduce, 8, bytes / 4)),
          topo, 5e-6, "flow");
      if (t < best_t) {
        best_t = t;
        best = a;
      }
    }
    return best;
  };
  CHECK(fastest(1000) == "naive");
  CHECK(fastest(10'000) == "naive");
  CHECK(fastest(100'000) == "binomial_tree");
  CHECK(fastest(1'000'000) == "ring");
  CHECK(fastest(10'000'000) == "ring");
}

namespace flow_model_test {

// Two transfers from gpu0: 1 MB to gpu1 and 3 MB to gpu2, through gpu0's one 10 GB/s link.
Schedule two_flows_from_gpu0() {
  CollectiveShape shape = shape_of(CollectiveOp::AllToAll, 3, 0);
  shape.matrix = std::make_shared<std::vector<std::int64_t>>(
      std::vector<std::int64_t>{0, 250'000, 750'000, 0, 0, 0, 0, 0, 0});
  return generate(CollectiveOp::AllToAll, "direct", shape);
}

}  // namespace flow_model_test

TEST_CASE("flows sharing a link split it, and speed up when one leaves") {
  const Topology topo = make_switch_topology(3, 10e9, 0);
  const auto r = simulate(flow_model_test::two_flows_from_gpu0(), topo, 0, "flow");
  // Both at 5 GB/s until the 1 MB one ends at 0.2 ms (1 MB moved of the 3 MB too), then 2 MB at 10
  // GB/s.
  CHECK(to_seconds(r.tasks[0].end) == Approx(0.2e-3 + 0.2e-3).epsilon(1e-9));
  CHECK(r.links.peak_in_flight(0) == 2);
  CHECK(to_seconds(r.links.busy(0)) == Approx(0.4e-3).epsilon(1e-9));
}

TEST_CASE("latency is propagation: a rank's next send on a slow link does not wait for it",
          "[flow][latency]") {
  // A directed ring g0 -> g1 -> g2 -> g3 -> g0 whose links into g2 and g0 take 10 us,
  // the others nothing; 4 bytes, so only latency counts. A chunk crosses a slow link every
  // other hop: the ring all-reduce's 6 steps carry data 3 times over a slow link (30 us).
  // Were latency occupancy, g1 and g3 would wait 10 us after each of their 6 sends: 60 us.
  for (const char* model : {"ideal", "flow"}) {
    INFO(model);
    const nlohmann::json doc = {
        {"topology",
         {{"nodes",
           {{{"name", "g0"}, {"kind", "gpu"}, {"rank", 0}},
            {{"name", "g1"}, {"kind", "gpu"}, {"rank", 1}},
            {{"name", "g2"}, {"kind", "gpu"}, {"rank", 2}},
            {{"name", "g3"}, {"kind", "gpu"}, {"rank", 3}}}},
          {"links",
           {{{"src", "g0"}, {"dst", "g1"}, {"bandwidth", "100GB/s"}, {"kind", "nvlink"}, {"duplex", false}},
            {{"src", "g1"}, {"dst", "g2"}, {"bandwidth", "100GB/s"}, {"kind", "nvlink"}, {"latency", "10us"},
             {"duplex", false}},
            {{"src", "g2"}, {"dst", "g3"}, {"bandwidth", "100GB/s"}, {"kind", "nvlink"}, {"duplex", false}},
            {{"src", "g3"}, {"dst", "g0"}, {"bandwidth", "100GB/s"}, {"kind", "nvlink"}, {"latency", "10us"},
             {"duplex", false}}}}}},
        {"network", {{"model", model}}},
        {"collectives",
         {{{"name", "ar"}, {"op", "all_reduce"}, {"algorithm", "ring"}, {"bytes", 16}}}}};
    const double t = run_scenario(parse_scenario(doc, ".")).outcomes[0].time_s;
    CHECK(t == Approx(30e-6).epsilon(0.01));
  }
}

TEST_CASE(
    "the flow model's due queue gives an instant's flows in their order, stale ones dropped") {
  DueQueue q;
  // Pushed out of order, ties at 20 and 30, a stale entry (version 0) at 10 alone. An
  // entry's order (the flow model's: its transfer's id) is here its slot backwards, so
  // neither the order pushed nor the slots decide.
  const auto entry = [](std::int32_t slot, std::uint32_t version) {
    return DueQueue::Entry{slot, version, static_cast<std::uint64_t>(100 - slot)};
  };
  q.push(30, entry(7, 1));
  q.push(20, entry(5, 1));
  q.push(10, entry(9, 0));
  q.push(20, entry(2, 1));
  q.push(30, entry(1, 1));
  q.push(20, entry(4, 1));
  auto live = [](DueQueue::Entry e) { return e.version == 1; };
  REQUIRE(q.drop_stale(live));
  CHECK(q.earliest() == 20);  // the bucket at 10 held only a stale entry
  std::vector<DueQueue::Entry> due;
  q.take_earliest(due);
  REQUIRE(due.size() == 3);
  CHECK((due[0].slot == 5 && due[1].slot == 4 && due[2].slot == 2));
  // A time seen before, once its bucket is gone, starts a new one behind the heap's top.
  q.push(25, entry(3, 1));
  q.push(20, entry(6, 1));
  REQUIRE(q.drop_stale(live));
  CHECK(q.earliest() == 20);
  q.take_earliest(due);
  CHECK((due.size() == 1 && due[0].slot == 6));
  q.take_earliest(due);
  CHECK((due.size() == 1 && due[0].slot == 3));
  q.take_earliest(due);
  CHECK((due.size() == 2 && due[0].slot == 7 && due[1].slot == 1));
  CHECK(q.empty());
  CHECK_FALSE(q.drop_stale(live));
}

namespace flow_model_test {

// Runs `tasks` (collective tasks on `topo`) under `model`: each task's seconds.
std::vector<double> task_seconds(const Topology& topo, const std::string& model,
                                 std::vector<CollectiveTask> tasks) {
  Router router(topo);
  NetworkParams p;
  p.model = *network_model_named(model);
  auto net = make_network_model(p, topo, router);
  Simulator sim(topo, router, *net);
  const auto r = sim.run(std::move(tasks));
  std::vector<double> out;
  for (const auto& t : r.tasks) out.push_back(to_seconds(t.end - t.start));
  return out;
}

}  // namespace flow_model_test

TEST_CASE(
    "a transfer's ceiling holds it under every model and leaves the rest of a link to others") {
  // Two one-transfer broadcasts meet on GPU 1's link in (100 GB/s): 0 -> 1 striped over one
  // channel of 20 GB/s (CostModel::stripe), 2 -> 1 with no ceiling. Under flow the capped
  // one takes its 20 and the other the remaining 80 (max-min without the ceiling would give
  // each 50). Ideal holds the capped one to 20. Under packet its sender makes its packets at
  // 20: the link's first-come queue then serves both in proportion to what arrives (100 of
  // 120 for the free one while both send), and the capped one ends when its last packets,
  // which find the queue empty again, are stored and forwarded over its two links.
  const Topology topo = make_switch_topology(3, 100e9, 0);
  const std::int64_t bytes = 8'000'000;
  const Schedule s =
      generate(CollectiveOp::Broadcast, "ring", shape_of(CollectiveOp::Broadcast, 2, bytes / 4));
  REQUIRE(s.ops.size() == 1);
  auto capped = std::make_shared<CostModel>();
  capped->stripe = {.min_channels = 1, .max_channels = 1, .min_part = 1, .max_part = bytes};
  capped->stripe.channel_Bps.fill(20e9);
  const std::vector<NodeId> from0 = {topo.gpu_of_rank(0), topo.gpu_of_rank(1)},
                            from2 = {topo.gpu_of_rank(2), topo.gpu_of_rank(1)};
  for (const std::string model : {"flow", "ideal", "packet"}) {
    INFO(model);
    const auto t = flow_model_test::task_seconds(
        topo, model, {{"capped", &s, from0, {}, capped}, {"free", &s, from2, {}, nullptr}});
    if (model == "packet") {
      CHECK(t[0] >= bytes / 20e9);
      CHECK(t[0] <= bytes / 20e9 + 2 * 65536 / 100e9 + 1e-12);  // 64 KiB packets
      CHECK(t[1] == Approx(bytes / (100e9 * 100 / 120)).epsilon(0.02));
      continue;
    }
    CHECK(t[0] == Approx(bytes / 20e9).epsilon(1e-9));
    CHECK(t[1] == Approx(bytes / (model == "flow" ? 80e9 : 100e9)).epsilon(1e-9));
  }
  // Under packet, trains sharing a first link take turns a packet each, and a paced sender's
  // packets join between them: on GPU 0's link out the capped one takes its 20 and a free
  // one the remaining 80, as under flow.
  const std::vector<NodeId> to2 = {topo.gpu_of_rank(0), topo.gpu_of_rank(2)};
  const auto shared = flow_model_test::task_seconds(
      topo, "packet", {{"free", &s, to2, {}, nullptr}, {"capped", &s, from0, {}, capped}});
  CHECK(shared[0] == Approx(bytes / 80e9).epsilon(0.01));
  CHECK(shared[1] == Approx(bytes / 20e9).epsilon(0.01));
  // Seven free trains beside it leave the capped one 12.5 of its 20 until they end (640 us,
  // 8 MB of its 32 sent); held back, it does not then catch up faster than its ceiling: the
  // rest takes 24 MB / 20 GB/s, not a burst at the link's 100 first.
  const Topology nine = make_switch_topology(9, 100e9, 0);
  const Schedule big = generate(CollectiveOp::Broadcast, "ring",
                                shape_of(CollectiveOp::Broadcast, 2, 4 * bytes / 4));
  std::vector<CollectiveTask> tasks;
  const std::vector<std::string> names = {"f2", "f3", "f4", "f5", "f6", "f7", "f8"};
  for (int i = 0; i < 7; ++i)
    tasks.push_back({names[i], &s, {nine.gpu_of_rank(0), nine.gpu_of_rank(2 + i)}, {}, nullptr});
  tasks.push_back({"capped", &big, {nine.gpu_of_rank(0), nine.gpu_of_rank(1)}, {}, capped});
  const auto held = flow_model_test::task_seconds(nine, "packet", tasks);
  CHECK(held[0] == Approx(bytes / 12.5e9).epsilon(0.05));  // each of the 8 a turn in 8
  CHECK(held[7] >= bytes / 12.5e9 + 3 * bytes / 20e9 - 2 * 65536 / 20e9);
  // One packet is held to the ceiling too: made at 20 GB/s before the path's two links
  // store and forward it at 100.
  const std::int64_t small = 50'000;
  const Schedule one =
      generate(CollectiveOp::Broadcast, "ring", shape_of(CollectiveOp::Broadcast, 2, small / 4));
  for (const std::string model : {"flow", "ideal", "packet"}) {
    INFO(model);
    const double made = small / 20e9;
    CHECK(flow_model_test::task_seconds(topo, model, {{"capped", &one, from0, {}, capped}})[0] ==
          Approx(model == "packet" ? made + 2 * small / 100e9 : made).epsilon(1e-6));
  }
}

TEST_CASE("a stop request reaches a flow run at its next rate change, not 32,768 events later") {
  // Each resolve of a big run can take milliseconds: Ctrl-C waited for the engine's poll.
  const Topology topo = make_switch_topology(3, 10e9, 0);
  const Schedule s = flow_model_test::two_flows_from_gpu0();
  request_interrupt();
  CHECK_THROWS_AS(simulate(s, topo, 0, "flow"), Interrupted);
  clear_interrupt();
  CHECK(to_seconds(simulate(s, topo, 0, "flow").tasks[0].end) == Approx(0.4e-3).epsilon(1e-9));
}

TEST_CASE("packet: trains sharing a first link take turns, whatever order they were listed in") {
  // Two equal broadcasts from GPU 0 (to 1 and to 2) share its link out. The first listed once
  // sent its whole train first: 80 and 160 us by their order; now each ends within a packet
  // of 160 us, in either order.
  const Topology topo = make_switch_topology(3, 100e9, 0);
  const std::int64_t bytes = 8'000'000;
  const Schedule s =
      generate(CollectiveOp::Broadcast, "ring", shape_of(CollectiveOp::Broadcast, 2, bytes / 4));
  const std::vector<NodeId> to1 = {topo.gpu_of_rank(0), topo.gpu_of_rank(1)},
                            to2 = {topo.gpu_of_rank(0), topo.gpu_of_rank(2)};
  const double packet = 65536 / 100e9;
  const auto ab = flow_model_test::task_seconds(
      topo, "packet", {{"a", &s, to1, {}, nullptr}, {"b", &s, to2, {}, nullptr}});
  const auto ba = flow_model_test::task_seconds(
      topo, "packet", {{"b", &s, to2, {}, nullptr}, {"a", &s, to1, {}, nullptr}});
  for (double t : {ab[0], ab[1], ba[0], ba[1]}) {
    CHECK(t >= 2 * bytes / 100e9 - packet);
    CHECK(t <= 2 * bytes / 100e9 + 2 * packet);
  }
  CHECK(std::abs(ab[0] - ba[1]) <= packet);  // a, listed first or second
}
