// Channels: C copies of an algorithm over C parts of the data, in rail-aware orders.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <set>

#include "core/json_view.h"
#include "helpers.h"
#include "replay/verify.h"
#include "scenario/scenario.h"
#include "schedule/generators/channels.h"
#include "simulate/run_scenario.h"
#include "simulate/simulated_plan.h"

using namespace collsim;
using namespace collsim::test;

TEST_CASE("every algorithm with channels computes its collective for many K, C and orders") {
  std::mt19937 rng(11);
  for (const AlgorithmEntry& e : algorithm_catalogue()) {
    if (!e.takes("channels")) continue;
    for (int K : {1, 2, 3, 5, 8, 13, 16}) {
      for (int C : {2, 3, 7}) {
        for (std::int64_t count : {std::int64_t{1}, std::int64_t{K * C - 1}, std::int64_t{1000}}) {
          AlgorithmOptions o;
          o.channels = C;
          if (C == 3) {  // each channel in its own random order of the members
            o.orders.assign(C, std::vector<int>(K));
            for (auto& order : o.orders) {
              std::iota(order.begin(), order.end(), 0);
              std::shuffle(order.begin(), order.end(), rng);
            }
          }
          if (e.takes("segments")) o.segments = 2;
          // Rooted collectives from the first, the last and a middle member.
          for (int root : is_rooted(e.op) ? std::vector<int>{0, K - 1, K / 2} : std::vector{0}) {
            CollectiveShape shape = shape_of(e.op, K, count);
            shape.root = root;
            const Schedule s = e.generate(shape, o);
            INFO(name_of(e.op) << " " << e.algorithm << " K=" << K << " C=" << C
                               << " count=" << count << " root=" << root);
            REQUIRE(check_schedule(s) == "");
            CHECK(verify_exact(s, 5).ok());
            if (K <= 8 && count <= 64) CHECK(verify_symbolic(s).ok());
          }
        }
      }
    }
  }
}

TEST_CASE(
    "the ring's chain in fixed-size segments, the last holding the rest, is proven by the "
    "replayer") {
  // float32: 4 bytes an element. Segments of 8, 12 or 40 bytes (a C-th of them per
  // channel's chain) over regions they divide, do not divide, or exceed.
  for (CollectiveOp op : {CollectiveOp::Broadcast, CollectiveOp::Reduce})
    for (int K : {1, 2, 3, 5, 8, 13, 31})
      for (int C : {1, 3})
        for (std::int64_t count : {std::int64_t{1}, std::int64_t{97}, std::int64_t{1000}})
          for (std::int64_t segment_bytes : {8, 12, 40})
            for (int segments : {1, 2, 5}) {
              AlgorithmOptions o;
              o.channels = C;
              o.segments = segments;
              o.segment_bytes = segment_bytes;
              CollectiveShape shape = shape_of(op, K, count);
              shape.root = K / 2;
              INFO(name_of(op) << " K=" << K << " C=" << C << " count=" << count << ", " << segments
                               << " segments of " << segment_bytes << " B");
              const Schedule s = generate(op, "ring", shape, o);
              REQUIRE(check_schedule(s).empty());
              CHECK(verify_exact(s, 5).ok());
              if (K <= 8 && count <= 97) CHECK(verify_symbolic(s).ok());
            }
}

TEST_CASE("rail orders: a permutation per channel, every hop between hosts on one rail") {
  for (int hosts : {2, 3, 4, 5}) {
    for (int g : {1, 2, 4, 8}) {
      std::vector<int> host_of, rail_of;
      for (int h = 0; h < hosts; ++h)
        for (int r = 0; r < g; ++r) {
          host_of.push_back(h);
          rail_of.push_back(r);
        }
      const auto orders = rail_orders(host_of, rail_of, 2 * g);
      REQUIRE(orders.size() == static_cast<std::size_t>(2 * g));
      std::set<int> first_rails;
      for (const auto& order : orders) {
        INFO(hosts << " hosts x " << g << " GPUs");
        CHECK(std::set<int>(order.begin(), order.end()).size() == host_of.size());
        int cross_rail = 0;
        for (std::size_t i = 0; i < order.size(); ++i) {
          const int a = order[i], b = order[(i + 1) % order.size()];
          if (host_of[a] != host_of[b] && rail_of[a] != rail_of[b]) ++cross_rail;
        }
        // Only the hop back to the first host, and only with an odd number of hosts.
        CHECK(cross_rail == (hosts % 2 == 1 && g > 1 ? 1 : 0));
        first_rails.insert(rail_of[order[0]]);
      }
      CHECK(first_rails.size() == static_cast<std::size_t>(g));  // every rail starts a channel
    }
  }
}

TEST_CASE(
    "ring channels on a rail-optimized cluster use every NIC: 2(K-1)(alpha + N/(C K beta_nic))") {
  for (int nodes : {2, 4}) {
    for (int C : {8, 16}) {
      const std::string text = R"({"topology": {"preset": "cluster", "nodes": )" +
                               std::to_string(nodes) + R"(, "gpus_per_node": 8},
        "network": {"model": "flow", "alpha": "5us"},
        "collectives": [{"op": "all_reduce", "algorithm": "ring", "bytes": "1GiB", "channels": )" +
                               std::to_string(C) + "}]}";
      const auto r = run_scenario(
          parse_scenario(parse_json_text(text, "test.json"), COLLSIM_SOURCE_DIR "/scenarios"));
      const int K = 8 * nodes;
      // At most 8 rails: more channels than rails share the NICs.
      const double per_step = 5e-6 + double(std::int64_t{1} << 30) / (std::min(C, 8) * K) / 50e9;
      INFO(nodes << " nodes, " << C << " channels");
      CHECK(r.outcomes[0].time_s == Approx(2 * (K - 1) * per_step).epsilon(1e-6));
      if (nodes == 2) CHECK(r.outcomes[0].busbw_Bps > 0.95 * 400e9);  // NIC-bound: 8 x 50 GB/s
    }
  }
}

namespace {

ScenarioResult run_text(const std::string& text) {
  return run_scenario(
      parse_scenario(parse_json_text(text, "test.json"), COLLSIM_SOURCE_DIR "/scenarios"));
}

}  // namespace

TEST_CASE("ring broadcast and reduce on channels cross the network on every rail") {
  for (const char* op : {"broadcast", "reduce"}) {
    for (int channels : {1, 8}) {
      const auto r = run_text(std::string(R"({"topology": {"preset": "cluster", "nodes": 2},
        "network": {"model": "flow"}, "collectives": [{"op": ")") + op +
                              R"(", "algorithm": "ring", "root": 5, "segments": 1024,
        "bytes": "1GiB", "channels": )" + std::to_string(channels) + "}]}");
      INFO(op << ", " << channels << " channels");
      // One chain crosses through one NIC a node (50 GB/s); eight, one per rail, through
      // all eight (400 GB/s), less the pipeline's fill of 14 hops over 1024 segments.
      if (channels == 1) CHECK(r.outcomes[0].busbw_Bps < 50e9);
      if (channels == 8) CHECK(r.outcomes[0].busbw_Bps > 0.97 * 400e9);
    }
  }
}

TEST_CASE("a pipeline pays a hop's latency once per hop, not once per segment") {
  // Chain broadcast over K = 8 GPUs of one switch, S segments of T each, latency L per
  // hop (propagation, the way NCCL's per-hop latency is counted): segment s leaves the
  // root at s T and reaches hop h at s T + h (T + L), as a connection holds several
  // segments in flight (NCCL_STEPS). Ordering each rank's segments one step after the
  // other would make every segment wait for the latency too.
  for (int S : {1, 4, 16}) {
    const auto r = run_text(R"({"topology": "dgx-h100", "network": {"model": "ideal",
        "cost": {"links": {"nvlink": {"latency_s": 3e-6}}}},
        "collectives": [{"op": "broadcast", "algorithm": "ring", "bytes": "64MiB",
        "segments": )" + std::to_string(S) + "}]}");
    const double T = double(64 << 20) / S / 450e9, L = 3e-6;
    INFO(S << " segments");
    CHECK(r.outcomes[0].time_s == Approx((S - 1) * T + 7 * (T + L)).margin(1e-9));  // ps rounding
  }
}

TEST_CASE("channels auto: one per rail across nodes, one inside a node") {
  const auto plan_of = [](const std::string& topology) {
    return make_plan(
        parse_scenario(parse_json_text(R"({"topology": )" + topology + R"(, "collectives": [
          {"op": "all_reduce", "algorithm": "ring", "bytes": "1MiB", "channels": "auto"}]})",
                                       "test.json"),
                       COLLSIM_SOURCE_DIR "/scenarios"));
  };
  CHECK(plan_of("\"cluster-8x8\"").collectives[0].spec.options.channels == 8);
  CHECK(plan_of("\"dgx-h100\"").collectives[0].spec.options.channels == 1);
}

TEST_CASE("hierarchy levels take channels too, and stay correct") {
  for (const char* top : {"ring", "double_binary_tree", "halving_doubling"}) {
    AlgorithmOptions o;
    o.levels = {{4, "ring", {}}, {3, top, {}}};
    o.levels[0].options.channels = 2;
    o.levels[1].options.channels = 3;
    const Schedule s = find_algorithm(CollectiveOp::AllReduce, "hierarchical")
                           ->generate(shape_of(CollectiveOp::AllReduce, 12, 1001), o);
    INFO(top);
    REQUIRE(check_schedule(s) == "");
    CHECK(verify_exact(s, 3).ok());
    CHECK(verify_symbolic(s).ok());
  }
}

TEST_CASE("a one-channel ring across hosts says in its output that it uses one NIC a host",
          "[channels][cli]") {
  const std::string path = (std::filesystem::temp_directory_path() / "collsim-one-nic.json").string();
  {
    std::ofstream out(path);
    out << R"({"topology": {"preset": "cluster", "nodes": 2, "gpus_per_node": 4},
               "collectives": [{"name": "one", "op": "all_reduce", "algorithm": "ring", "bytes": "1MiB"},
                               {"name": "rails", "op": "all_reduce", "algorithm": "ring",
                                "channels": "auto", "bytes": "1MiB"},
                               {"name": "inside", "op": "all_reduce", "algorithm": "ring",
                                "bytes": "1MiB", "ranks": [0, 1, 2, 3]}]})";
  }
  const auto run = run_collsim("run " + path);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.out, Catch::Contains("# one: one channel across 2 hosts: each host's traffic "
                                      "crosses the network through one of its 4 NICs"));
  CHECK_THAT(run.out, !Catch::Contains("# rails: one channel"));
  CHECK_THAT(run.out, !Catch::Contains("# inside: one channel"));  // one host: no NIC
  std::filesystem::remove(path);
}
