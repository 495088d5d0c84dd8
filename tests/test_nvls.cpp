// NVLS and NVLS-tree: switch-executed reduce and multicast ops, proven, timed and planned.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "core/error.h"
#include "core/json_view.h"
#include "helpers.h"
#include "nccl/nccl_model.h"
#include "plan/plan.h"
#include "replay/verify.h"
#include "report/traffic.h"
#include "scenario/scenario.h"
#include "simulate/simulated_plan.h"
#include "sweep/sweep.h"

using namespace collsim;
using namespace collsim::test;

namespace nvls_test {

constexpr double kAlpha = 5e-6;
constexpr double kLinkRate = 450e9;  // dgx-h100's GPU <-> NVSwitch, per direction

Schedule nvls(int K, std::int64_t count, int segments = 1, int channels = 1,
              std::vector<int> hosts = {}, std::int64_t segment_bytes = 0) {
  AlgorithmOptions o;
  o.segments = segments;
  o.segment_bytes = segment_bytes;
  o.channels = channels;
  o.hosts = std::move(hosts);
  return generate(CollectiveOp::AllReduce, o.hosts.empty() ? "nvls" : "nvls_tree",
                  shape_of(CollectiveOp::AllReduce, K, count), o);
}

std::vector<int> blocks(int hosts, int per_host) {
  std::vector<int> out;
  for (int h = 0; h < hosts; ++h) out.insert(out.end(), per_host, h);
  return out;
}

// NVLS on K GPUs of one switch, S bytes cut into m segments per GPU slice, every GPU
// issuing its slice: the first step only reduces (K legs of S/(Km) up each GPU link),
// the last only multicasts (K down), and the m - 1 between do both (K + 1 legs each
// way). Every leg moves at eta of the link rate, and every step pays alpha and the
// link latency once (its legs start together).
double closed_form(int K, double S, int m, double beta, double eta, double alpha,
                   double latency = 0) {
  const double per_step_bytes = 2.0 / m + (m - 1) * (K + 1.0) / (K * m);
  return (m + 1) * (alpha + latency) + S / (eta * beta) * per_step_bytes;
}

Scenario scenario_of(const std::string& text) {
  return parse_scenario(parse_json_text(text, "test.json"), COLLSIM_SOURCE_DIR "/scenarios");
}

// A topology of K GPUs on one NVSwitch, given as a graph so the switch can be sharp.
std::string sharp_graph(int K, const std::string& sharp) {
  std::string nodes = R"({"name": "sw", "kind": "nvswitch")" + sharp + "}", links;
  for (int g = 0; g < K; ++g) {
    nodes += fmt::format(R"(, {{"name": "g{}", "kind": "gpu", "rank": {}}})", g, g);
    links +=
        fmt::format(R"({}{{"src": "g{}", "dst": "sw", "kind": "nvlink", "bandwidth": "450GB/s"}})", g ? ", " : "", g);
  }
  return R"({"nodes": [)" + nodes + R"(], "links": [)" + links + "]}";
}

// The test cases live in the namespace too: a unity build compiles several test
// files as one, and a using-directive here would reach the files after this one.

TEST_CASE("nvls all-reduce is proven by the replayer for every rank count and chunking") {
  // Symbolic replay (every contribution tracked) up to 8 ranks; exact values beyond.
  for (int K : {1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 72}) {
    for (std::int64_t count :
         {std::int64_t{1}, std::int64_t{K > 1 ? K - 1 : 1}, std::int64_t{K} * 8 + 1,
          std::int64_t{K <= 16 ? 997 : K * 3}}) {
      for (int segments : {1, 3}) {
        for (int channels : {1, 2}) {
          INFO("K=" << K << " count=" << count << " segments=" << segments
                    << " channels=" << channels);
          const Schedule s = nvls(K, count, segments, channels);
          REQUIRE(check_schedule(s).empty());
          CHECK(verify_exact(s, 7, 3).ok());
          if (K <= 8) CHECK(verify_symbolic(s).ok());
          // Two ops per non-empty piece of a GPU's slice, whatever K: the switch's
          // fan-in and fan-out are one op each.
          CHECK(s.size() <= 2 * static_cast<std::size_t>(K) * segments * channels);
          if (count % (std::int64_t{K} * segments * channels) == 0)
            CHECK(s.size() == 2 * static_cast<std::size_t>(K) * segments * channels);
          for (const Op& op : s.ops) CHECK(op.is_switch());
        }
      }
    }
  }
}

TEST_CASE("nvls_tree is proven by the replayer for hosts x GPUs layouts and chunkings") {
  for (int hosts : {1, 2, 3, 5, 8})
    for (int per_host : {1, 2, 3, 8})
      for (int segments : {1, 3})
        for (int channels : {1, 2})
          for (std::int64_t count : {std::int64_t{1}, std::int64_t{97}}) {
            INFO(hosts << " hosts x " << per_host << ", segments " << segments << ", channels "
                       << channels << ", count " << count);
            const Schedule s = nvls(hosts * per_host, count, segments, channels,
                                    blocks(hosts, per_host));
            REQUIRE(check_schedule(s).empty());
            CHECK(verify_exact(s, 9).ok());
            if (hosts * per_host <= 8) CHECK(verify_symbolic(s).ok());
          }
  // Large: 16 hosts of 8.
  const Schedule big = nvls(128, 128 * 5 + 3, 2, 1, blocks(16, 8));
  REQUIRE(check_schedule(big).empty());
  CHECK(verify_exact(big, 3).ok());
}

TEST_CASE(
    "nvls and nvls_tree in fixed-size segments, the last holding the rest, are proven "
    "by the replayer") {
  // float32: 4 bytes an element. Segments of 8, 12 or 40 bytes over slices that they
  // divide, do not divide, or exceed (the last segment then holds more than the others,
  // or the trailing ones are empty).
  for (int hosts : {1, 2, 3, 5})
    for (int per_host : {1, 2, 3, 8})
      for (std::int64_t count : {std::int64_t{1}, std::int64_t{97}, std::int64_t{1000}})
        for (std::int64_t segment_bytes : {8, 12, 40})
          for (int segments : {1, 2, 5}) {
            INFO(hosts << " hosts x " << per_host << ", count " << count << ", segments "
                       << segments << " of " << segment_bytes << " B");
            const Schedule s =
                nvls(hosts * per_host, count, segments, 1,
                     hosts > 1 ? blocks(hosts, per_host) : std::vector<int>{}, segment_bytes);
            REQUIRE(check_schedule(s).empty());
            CHECK(verify_exact(s, 5).ok());
            if (hosts * per_host <= 8) CHECK(verify_symbolic(s).ok());
          }
}

TEST_CASE("nvls_tree: switch ops stay in their host, transfers cross hosts between one slice's "
          "issuers") {
  const int hosts = 5, per_host = 4;
  const Schedule s = nvls(hosts * per_host, 4096, 2, 1, blocks(hosts, per_host));
  REQUIRE(s.switch_group == per_host);
  int crossing = 0, switch_ops = 0;
  for (const Op& op : s.ops) {
    if (op.is_switch()) {
      ++switch_ops;
      CHECK(s.switch_member(op, 0) == op.src_rank / per_host * per_host);
      continue;
    }
    CHECK(op.src_rank / per_host != op.dst_rank / per_host);
    CHECK(op.src_rank % per_host == op.dst_rank % per_host);  // the same slice, the same rail
    ++crossing;
  }
  // Per slice, half on each of NCCL's two trees, and per segment: a reduce and a multicast
  // on every host, and a tree over the hosts, each of its (hosts - 1) edges once up and
  // once down.
  CHECK(switch_ops == per_host * 2 * 2 * hosts * 2);
  CHECK(crossing == per_host * 2 * 2 * 2 * (hosts - 1));
}

TEST_CASE(
    "nvls_tree sends each rail's slice over both of NCCL's trees, so its NICs carry "
    "about the same") {
  // 8 hosts: in one tree hosts 2, 4 and 6 send to a parent and two children, the leaves to
  // their parent only; a slice on one tree (as alternate slices were) loaded a rail's NIC
  // at those hosts three times as much as at the leaves. Over both trees every host sends
  // 4 halves but the two roots' (2 each).
  const int hosts = 8, per_host = 2;
  const Schedule s = nvls(hosts * per_host, 1 << 12, 1, 1, blocks(hosts, per_host));
  std::vector<std::int64_t> sent(hosts * per_host, 0);
  for (const Op& op : s.ops)
    if (!op.is_switch()) sent[op.src_rank] += s.bytes(op);
  const std::int64_t half = sent[0] / 2;  // a half-slice, as host 0 (a root) sends two
  REQUIRE(half > 0);
  for (int r = 0; r < hosts * per_host; ++r) {
    INFO("rank " << r);
    const int host = r / per_host;
    CHECK(sent[r] == ((host == 0 || host == hosts - 1) ? 2 : 4) * half);
  }
}

TEST_CASE("check_schedule sees a switch op read what a multicast of its step writes") {
  // K = 4, one segment: step 0 reduces every slice, step 1 multicasts them.
  Schedule s = nvls(4, 64, 2);
  REQUIRE(check_schedule(s).empty());
  // Step 1 reduces the second segment and multicasts the first: point a reduce at the
  // range a multicast of its step writes on every rank.
  OpId reduce = 0, multicast = 0;
  for (OpId id = 0; id < s.size(); ++id) {
    if (s.ops[id].step != 1) continue;
    (s.ops[id].kind == OpKind::SwitchReduce ? reduce : multicast) = id;
  }
  REQUIRE(s.ops[reduce].kind == OpKind::SwitchReduce);
  REQUIRE(s.ops[multicast].kind == OpKind::Multicast);
  s.ops[reduce].src_offset = s.ops[multicast].dst_offset;
  CHECK_THAT(check_schedule(s), Catch::Contains("reads elements"));
  // A switch group that does not tile the ranks is refused.
  Schedule t = nvls(4, 64);
  t.switch_group = 3;
  CHECK_THAT(check_schedule(t), Catch::Contains("do not tile"));
}

TEST_CASE("nvls moves S(K+1)/K per GPU and direction, and its time is the closed form") {
  const Topology dgx = make_dgx_topology(ServerParams{});
  const std::int64_t S = std::int64_t{1} << 30;
  const std::int64_t count = S / 4;
  for (int m : {1, 4, 64}) {
    INFO("segments=" << m);
    const Schedule s = nvls(8, count, m);
    const SimulationResult r = simulate(s, dgx, kAlpha, "flow");
    const double t = to_seconds(r.tasks[0].end - r.tasks[0].start);
    const double expect = closed_form(8, static_cast<double>(S), m, kLinkRate, 0.85, kAlpha);
    // The flow model rounds each leg's finish to a picosecond and re-solves the rates of
    // the legs sharing its links: up to 2(K + 1) roundings a step (both directions).
    INFO(fmt::format("simulated {:.12e} closed form {:.12e}", t, expect));
    CHECK(std::fabs(t - expect) <= (m + 1) * 18e-12);
    for (int r_ = 0; r_ < 8; ++r_) {
      const NodeId g = dgx.gpu_of_rank(r_);
      CHECK(r.node_sent[g] == S / 8 * 9);
      CHECK(r.node_received[g] == S / 8 * 9);
    }
  }
  // At many segments algbw tends to eta beta K/(K+1): 340 GB/s for 450 GB/s, K = 8.
  CHECK(static_cast<double>(S) / closed_form(8, static_cast<double>(S), 1 << 20, kLinkRate,
                                             0.85, 0) ==
        Approx(450e9 * 0.85 * 8 / 9).epsilon(1e-5));
  // Other K, and other efficiencies from the topology's "sharp_efficiency".
  for (int K : {2, 3, 5}) {
    for (double eta : {0.5, 1.0}) {
      const Scenario sc = scenario_of(R"({"topology": )" +
                                      sharp_graph(K, fmt::format(R"(, "sharp": true,
          "sharp_efficiency": {})",
                                                                 eta)) +
                                      R"(, "collectives": [{"op": "all_reduce", "bytes": 64}]})");
      const std::int64_t n = std::int64_t{K} * 3 * 4096;
      INFO("K=" << K << " eta=" << eta);
      const double t = simulated_seconds(nvls(K, n, 3), sc.topology, kAlpha, "flow");
      CHECK(std::fabs(t - closed_form(K, n * 4.0, 3, kLinkRate, eta, kAlpha)) <=
            4 * 2 * (K + 1) * 1e-12);
    }
  }
}

TEST_CASE(
    "nvls reduce-scatter and all-gather are proven by the replayer and keep each chunk "
    "in its rank") {
  for (CollectiveOp op : {CollectiveOp::ReduceScatter, CollectiveOp::AllGather}) {
    for (int K : {1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 72}) {
      for (std::int64_t count :
           {std::int64_t{1}, std::int64_t{K} * 8 + 1, std::int64_t{K <= 16 ? 997 : K * 3}}) {
        for (int segments : {1, 3}) {
          for (int channels : {1, 3}) {
            INFO(name_of(op) << " K=" << K << " count=" << count << " segments=" << segments
                             << " channels=" << channels);
            AlgorithmOptions o;
            o.segments = segments;
            o.channels = channels;
            const Schedule s = generate(op, "nvls", shape_of(op, K, count), o);
            REQUIRE(check_schedule(s).empty());
            CHECK(verify_exact(s, 11, 3).ok());
            if (K <= 8) CHECK(verify_symbolic(s).ok());
            // One op per non-empty piece of a rank's chunk, each issued by the chunk's
            // owner: a reduce into it, or a multicast out of it.
            CHECK(s.size() <= static_cast<std::size_t>(K) * segments * channels);
            for (const Op& x : s.ops) {
              CHECK(x.kind ==
                    (op == CollectiveOp::AllGather ? OpKind::Multicast : OpKind::SwitchReduce));
              const Partition chunks{count, K};
              CHECK(x.src_offset >= chunks.begin(x.src_rank));
              CHECK(x.src_offset + x.count <= chunks.begin(x.src_rank) + chunks.size(x.src_rank));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("nvls all-gather and reduce-scatter move S per GPU one way and S/K the other") {
  // One segment: all K ops at once. All-gather: each GPU stores its S/K once (up) and the
  // switch writes every chunk to every GPU (S down); reduce-scatter the other way round.
  // Every leg at eta of the link rate: the time is alpha + S / (eta beta), as for a ring's
  // (K-1)/K S over K-1 steps, less the steps.
  const Topology dgx = make_dgx_topology(ServerParams{});
  const std::int64_t S = std::int64_t{1} << 28;
  for (CollectiveOp op : {CollectiveOp::AllGather, CollectiveOp::ReduceScatter}) {
    INFO(name_of(op));
    const Schedule s = generate(op, "nvls", shape_of(op, 8, S / 4), {});
    const SimulationResult r = simulate(s, dgx, kAlpha, "flow");
    const double t = to_seconds(r.tasks[0].end - r.tasks[0].start);
    const double expect = kAlpha + static_cast<double>(S) / (0.85 * kLinkRate);
    // The flow model rounds each leg's finish to a picosecond and re-solves the rates of
    // the legs left on its links: up to 2(K + 1) roundings (both directions).
    INFO(fmt::format("simulated {:.12e} closed form {:.12e}", t, expect));
    CHECK(std::fabs(t - expect) <= 2 * 9 * 1e-12);
    for (int rank = 0; rank < 8; ++rank) {
      const NodeId g = dgx.gpu_of_rank(rank);
      const bool gathers = op == CollectiveOp::AllGather;
      CHECK(r.node_sent[g] == (gathers ? S / 8 : S));
      CHECK(r.node_received[g] == (gathers ? S : S / 8));
    }
  }
}

TEST_CASE("nvls legs pay their links' latency, as every transfer does") {
  // One segment: a switch reduce, then a multicast, each leg over one 1 us link. Each
  // phase's legs arrive 1 us after their bytes: the collective takes 2 us longer than on
  // the same links without latency, under flow and packet alike.
  const auto graph = [](const std::string& latency) {
    std::string g = sharp_graph(4, R"(, "sharp": true)");
    const std::string from = R"("bandwidth": "450GB/s")";
    for (std::size_t at = g.find(from); at != std::string::npos; at = g.find(from, at + 1))
      g.insert(at + from.size(), R"(, "latency": ")" + latency + "\"");
    return g;
  };
  for (const char* model : {"flow", "packet"}) {
    INFO(model);
    const auto time = [&](const std::string& latency) {
      const Scenario sc = scenario_of(R"({"topology": )" + graph(latency) +
                                      R"(, "network": {"model": ")" + model +
                                      R"("}, "collectives": [{"op": "all_reduce", "algorithm": "nvls", "bytes": "1MiB"}]})");
      return run_scenario(sc).outcomes[0].time_s;
    };
    CHECK(time("1us") - time("0us") == Approx(2e-6).epsilon(0.02));
  }
}

TEST_CASE("the cost model's NVLink efficiency composes with the switch's") {
  // NCCL's model carries 20.6 of NVLink's nominal 25 GB/s per lane: with that as the
  // nvlink efficiency, each leg moves at 0.824 x 0.85 of the link rate.
  const Scenario sc = scenario_of(R"({"topology": "dgx-h100",
      "network": {"model": "flow", "alpha": "5us",
                  "cost": {"links": {"nvlink": {"efficiency": 0.824}}}},
      "collectives": [{"op": "all_reduce", "algorithm": "nvls", "bytes": "64MiB",
                       "segments": 4}]})");
  const ScenarioResult r = run_scenario(sc);
  const double expect = closed_form(8, 64.0 * (1 << 20), 4, kLinkRate, 0.85 * 0.824, kAlpha);
  CHECK(std::fabs(r.outcomes[0].time_s - expect) <= 5 * 18e-12);
  // The traffic report attributes the switch ops' legs to the GPU links: (K+1)/K of the
  // buffer on the busiest one, over every link of every GPU, as the counters say.
  const TrafficReport traffic = analyse_traffic(sc, r);
  REQUIRE(traffic.per_collective.size() == 1);
  CHECK(traffic.per_collective[0].bytes == (std::int64_t{64} << 20) / 8 * 9);
  CHECK(sc.topology.link(traffic.per_collective[0].link).kind == LinkKind::NvLink);
  for (std::size_t l = 0; l < sc.topology.links().size(); ++l)
    if (sc.topology.link(l).kind == LinkKind::NvLink)
      CHECK(traffic.links[l].bytes == (std::int64_t{64} << 20) / 8 * 9);
}

TEST_CASE("nvls is refused without a sharp switch, naming the collective, and auto skips it") {
  auto plan_on = [](const std::string& topology, const std::string& algorithm,
                    const std::string& model = "flow") {
    return make_plan(scenario_of(R"({"topology": )" + topology + R"(, "network": {"model": ")" +
                                 model +
                                 R"("}, "collectives": [{"op": "all_reduce", "bytes": "1MiB", )"
                                 R"("algorithm": ")" +
                                 algorithm + "\"}]}"));
  };
  const std::string plain = R"({"preset": "switch", "gpus": 8, "bandwidth": "450GB/s"})";
  for (const char* algorithm : {"nvls", "nvls_tree"}) {
    try {
      plan_on(plain, algorithm);
      FAIL(algorithm << " accepted on a switch without sharp");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::StartsWith("collectives[0]"));
      CHECK_THAT(e.what(), Catch::Contains("NVSwitch with \"sharp\": true"));
    }
  }
  const std::string chosen = plan_on(plain, "auto").collectives[0].spec.algorithm;
  CHECK(chosen != "nvls");
  CHECK(chosen != "nvls_tree");
  CHECK(plan_on(sharp_graph(4, R"(, "sharp": true)"), "nvls").collectives[0].spec.algorithm ==
        "nvls");
  CHECK(plan_on(R"({"preset": "nvl72", "gpus": 72})", "nvls").collectives[0].spec.algorithm ==
        "nvls");
  CHECK(plan_on(R"("dgx-h100")", "nvls").collectives[0].spec.algorithm == "nvls");
  CHECK(plan_on(R"("dgx-h100")", "nvls", "packet").collectives[0].spec.algorithm == "nvls");
  // The ideal model gives each transfer its links to itself: NVLS, whose time is how
  // its transfers share links, is refused there, and auto leaves it out.
  try {
    plan_on(R"("dgx-h100")", "nvls", "ideal");
    FAIL("nvls accepted under the ideal model");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("collectives[0]: nvls is timed by how its transfers "
                                           "share each GPU's link"));
  }
  const std::string ideal_choice = plan_on(R"("dgx-h100")", "auto", "ideal").collectives[0].spec.algorithm;
  CHECK(ideal_choice != "nvls");
  CHECK(ideal_choice != "nvls_tree");
  // The property only on NVSwitches, the efficiency only on sharp ones, within (0, 1].
  CHECK_THAT(error_of(R"({"topology": {"nodes": [{"name": "g", "kind": "gpu", "sharp": true}],
      "links": []}, "collectives": []})"),
             Catch::Contains("nodes[0].sharp: only switches reduce"));
  CHECK_THAT(error_of(R"({"topology": )" + sharp_graph(2, R"(, "sharp_efficiency": 0.5)") +
                      R"(, "collectives": []})"),
             Catch::Contains("nodes[0].sharp_efficiency: only a node with \"sharp\": true"));
  CHECK_THAT(error_of(R"({"topology": )" +
                      sharp_graph(2, R"(, "sharp": true, "sharp_efficiency": 1.5)") +
                      R"(, "collectives": []})"),
             Catch::Contains("nodes[0].sharp_efficiency: expected a fraction"));
}

TEST_CASE("auto considers nvls where the switch is sharp, under the flow model") {
  const Plan p = make_plan(scenario_of(R"({"topology": "dgx-h100",
      "network": {"model": "flow", "alpha": "5us"},
      "collectives": [{"op": "all_reduce", "algorithm": "auto", "bytes": "1GiB",
                       "segments": 8}]})"));
  CHECK(p.collectives[0].spec.algorithm == "nvls");
}

TEST_CASE("nvls_tree takes its hosts from the topology and refuses hosts that are not blocks") {
  const Plan p = make_plan(scenario_of(R"({"topology": "cluster-8x8",
      "network": {"model": "flow"},
      "collectives": [{"op": "all_reduce", "algorithm": "nvls_tree", "bytes": "4KiB",
                       "segments": 2}]})"));
  const auto& c = p.collectives[0];
  REQUIRE(c.spec.options.hosts.size() == 64);
  CHECK(c.schedule->switch_group == 8);
  CHECK(verify_exact(*c.schedule, 1).ok());
  CHECK(error_of(R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "1GB/s"},
    "collectives": [{"op": "all_reduce", "algorithm": "nvls_tree", "bytes": 64,
                     "hosts": [0, 1, 0, 1]}]})") ==
        "collectives[0].hosts: nvls_tree needs each host's ranks consecutive: host 0 holds ranks "
        "0 and 2");
}

TEST_CASE("a sweep over every all-reduce leaves nvls out where it does not apply") {
  auto algorithms_swept = [](const std::string& topology, const std::string& model) {
    const Scenario sc = scenario_of(R"({"topology": )" + topology + R"(, "network": {"model": ")" +
                                    model + R"("}, "collectives": [{"op": "all_reduce",
                                    "bytes": 4096}]})");
    SweepRequest req;
    req.sizes = {4096, 8192};
    std::set<std::string> out;
    for (const SweepRow& row : run_sweep(sc, req).rows) out.insert(row.algorithm);
    return out;
  };
  const auto plain =
      algorithms_swept(R"({"preset": "switch", "gpus": 8, "bandwidth": "450GB/s"})", "flow");
  CHECK(plain.count("ring") == 1);
  CHECK(plain.count("nvls") == 0);
  CHECK(algorithms_swept(R"("dgx-h100")", "ideal").count("nvls") == 0);
  const auto sharp = algorithms_swept(R"("dgx-h100")", "flow");
  CHECK(sharp.count("nvls") == 1);
  CHECK(sharp.count("nvls_tree") == 1);  // one host: NVLS with no tree
}

TEST_CASE("NCCL picks NVLS only for the types and reductions its switch kernels have") {
  // ncclNvlsSupported: sums and min/max of integers and 16-bit floats, sums of 32- and 64-bit
  // floats, no 8-bit types.
  const auto pick = [](const std::string& dtype, const std::string& redop) {
    const Plan p = make_plan(scenario_of(
        R"({"topology": "dgx-h100", "network": {"model": "flow"}, "collectives": [{"op": )"
        R"("all_reduce", "algorithm": "nccl", "bytes": "1GiB", "dtype": ")" +
        dtype + R"(", "redop": ")" + redop + "\"}]}"));
    return p.collectives[0].spec.algorithm;
  };
  CHECK(pick("float32", "sum") == "nvls");
  CHECK(pick("bfloat16", "max") == "nvls");
  CHECK(pick("int32", "min") == "nvls");
  CHECK(pick("float32", "max") != "nvls");
  CHECK(pick("float32", "prod") != "nvls");
  CHECK(pick("float16", "avg") != "nvls");
  CHECK(pick("int8", "sum") != "nvls");
  CHECK(nccl_nvls_supports(CollectiveOp::AllGather, ReduceOp::Prod, DType::I8));
}

}  // namespace nvls_test
