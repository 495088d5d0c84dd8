// CollNet (InfiniBand SHARP): the heads of one rail all-reduce in a network switch,
// proven by the replayer, timed over the NICs, found on the topology and weighed by
// NCCL's model.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <set>

#include "core/error.h"
#include "core/json_view.h"
#include "helpers.h"
#include "nccl/nccl_model.h"
#include "plan/plan.h"
#include "replay/verify.h"
#include "report/traffic.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "topology/presets.h"

using namespace collsim;
using namespace collsim::test;

namespace collnet_test {

Schedule collnet(const char* name, int hosts, int per_host, std::int64_t count, int segments = 1,
                 int channels = 1, std::int64_t segment_bytes = 0) {
  AlgorithmOptions o;
  o.segments = segments;
  o.channels = channels;
  o.segment_bytes = segment_bytes;
  for (int h = 0; h < hosts; ++h) o.hosts.insert(o.hosts.end(), per_host, h);
  return generate(CollectiveOp::AllReduce, name,
                  shape_of(CollectiveOp::AllReduce, hosts * per_host, count), o);
}

// A rail-optimized fat tree of `nodes` servers of `gpus` GPUs whose switches reduce.
ClusterParams sharp_cluster(int nodes, int gpus) {
  ClusterParams p;
  p.nodes = nodes;
  p.server.gpus = gpus;
  p.sharp = true;
  return p;
}

Scenario scenario_of(const std::string& text) {
  return parse_scenario(parse_json_text(text, "test.json"), COLLSIM_SOURCE_DIR "/scenarios");
}

std::string plan_error_of(const std::string& text) {
  try {
    make_plan(scenario_of(text));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE(
    "collnet_direct and collnet_chain are proven by the replayer for hosts x GPUs and "
    "chunkings") {
  for (const char* name : {"collnet_direct", "collnet_chain"})
    for (int hosts : {1, 2, 3, 5, 8})
      for (int per_host : {1, 2, 3, 8})
        for (int segments : {1, 3})
          for (int channels : {1, 2, 5})
            for (std::int64_t count : {std::int64_t{1}, std::int64_t{97}}) {
              INFO(name << ": " << hosts << " hosts x " << per_host << ", segments " << segments
                        << ", channels " << channels << ", count " << count);
              const Schedule s = collnet(name, hosts, per_host, count, segments, channels);
              REQUIRE(check_schedule(s).empty());
              CHECK(verify_exact(s, 9, 2).ok());
              if (hosts * per_host <= 8) CHECK(verify_symbolic(s).ok());
            }
  // Fixed-size segments, the last holding the rest; and a large one: 16 hosts of 8.
  for (std::int64_t segment_bytes : {8, 12, 40}) {
    const Schedule s = collnet("collnet_direct", 3, 3, 1000, 5, 1, segment_bytes);
    REQUIRE(check_schedule(s).empty());
    CHECK(verify_exact(s, 5).ok());
  }
  const Schedule big = collnet("collnet_chain", 16, 8, 128 * 5 + 3, 2, 8);
  REQUIRE(check_schedule(big).empty());
  CHECK(verify_exact(big, 3).ok());
}

TEST_CASE(
    "collnet's switch ops all-reduce one rail across hosts, everything else stays in a "
    "host, each GPU sending 2 (P - 1) / P of the buffer over NVLink") {
  const int hosts = 4, per_host = 4;
  const std::int64_t count = 4 * 4 * 64;  // every piece whole
  for (const char* name : {"collnet_direct", "collnet_chain"}) {
    INFO(name);
    const Schedule s = collnet(name, hosts, per_host, count, 2, per_host);
    REQUIRE(s.network_group == hosts);
    REQUIRE(s.network_stride == per_host);
    std::vector<std::int64_t> sent(hosts * per_host, 0);
    int switch_ops = 0;
    for (const Op& op : s.ops) {
      if (op.is_switch()) {
        ++switch_ops;
        CHECK(op.kind == OpKind::SwitchAllReduce);
        CHECK(s.switch_legs(op) == 2 * hosts);
        for (int j = 0; j < hosts; ++j) {
          CHECK(s.switch_member(op, j) == op.src_rank % per_host + j * per_host);
          CHECK(s.switch_leg(op, j).up);
          CHECK(!s.switch_leg(op, hosts + j).up);
        }
        continue;
      }
      CHECK(op.src_rank / per_host == op.dst_rank / per_host);
      sent[op.src_rank] += s.bytes(op);
    }
    CHECK(switch_ops > 0);
    const std::int64_t S = count * 4;
    for (std::int64_t b : sent) CHECK(b == 2 * (per_host - 1) * S / per_host);
  }
  // One host: no switch op, no switch group.
  const Schedule one = collnet("collnet_direct", 1, 4, 64);
  CHECK(one.network_group == 0);
  for (const Op& op : one.ops) CHECK(!op.is_switch());
}

TEST_CASE("check_schedule refuses a strided switch group that does not tile the ranks") {
  Schedule s = collnet("collnet_direct", 3, 2, 64);
  REQUIRE(check_schedule(s).empty());
  CHECK(switch_use(s).most_legs == 6);
  CHECK(switch_use(s).kind[true]);
  CHECK(!switch_use(s).kind[false]);
  s.network_stride = 4;  // groups of 3 ranks 4 apart span 12 ranks of 6
  CHECK_THAT(check_schedule(s), Catch::Contains("network switch groups of 3 ranks 4 apart do not "
                                                "tile 6 ranks"));
  s.network_stride = 2;
  s.network_group = 0;  // a SwitchAllReduce with no network groups
  CHECK_THAT(check_schedule(s), Catch::Contains("do not tile"));
}

TEST_CASE(
    "a switch op has at most 256 legs: NVLS on 144 GPUs runs, CollNet past 128 hosts "
    "is refused when planned") {
  const Topology nvl = make_nvl72_topology(144, 900e9, 0);
  const Schedule s =
      generate(CollectiveOp::AllReduce, "nvls", shape_of(CollectiveOp::AllReduce, 144, 144 * 4));
  REQUIRE(switch_use(s).most_legs == 145);
  CHECK(simulated_seconds(s, nvl, 0, "flow") > 0);
  CHECK_THAT(plan_error_of(R"({"topology": {"preset": "cluster", "nodes": 129,
      "gpus_per_node": 1, "sharp": true}, "network": {"model": "flow"},
      "collectives": [{"op": "all_reduce", "algorithm": "collnet_direct", "bytes": 4096}]})"),
             Catch::Contains("collnet_direct spans at most 128 hosts"));
}

TEST_CASE(
    "a SHARP switch sends each NIC the buffer once each way, where a ring sends it "
    "2 (K - 1) / K times") {
  const ClusterParams p = sharp_cluster(4, 1);
  const Topology t = make_cluster_topology(p);
  const std::int64_t S = std::int64_t{64} << 20;
  const Schedule sharp = collnet("collnet_direct", 4, 1, S / 4);
  const SimulationResult r = simulate(sharp, t, 0, "flow");
  for (int rank = 0; rank < 4; ++rank) {
    CHECK(r.node_sent[t.gpu_of_rank(rank)] == S);
    CHECK(r.node_received[t.gpu_of_rank(rank)] == S);
  }
  // The NIC's 50 GB/s is the bottleneck of both: the ring takes 1.5 times as long.
  const double sharp_s = to_seconds(r.tasks[0].end - r.tasks[0].start);
  CHECK(sharp_s == Approx(static_cast<double>(S) / p.server.nic).epsilon(0.02));
  const Schedule ring =
      generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, 4, S / 4));
  CHECK(simulated_seconds(ring, t, 0, "flow") / sharp_s == Approx(1.5).epsilon(0.02));
}

TEST_CASE(
    "the SHARP switch of a group: an NVSwitch it links to, else the nearest network "
    "switch every GPU reaches through its NIC") {
  ClusterParams p;
  p.nodes = 2;
  p.sharp = true;
  const Topology t = make_cluster_topology(p);
  const auto name_of_switch = [&](std::vector<int> ranks, SharpReach reach = SharpReach::Any) {
    std::vector<NodeId> gpus;
    for (int r : ranks) gpus.push_back(t.gpu_of_rank(r));
    const auto sw = sharp_switch_of(t, gpus, reach);
    return sw ? t.node(*sw).name : std::string("none");
  };
  CHECK(name_of_switch({3, 11}) == "leaf3.0");  // one rail: its leaf
  CHECK(name_of_switch({0, 9}) == "spine0");    // two rails meet at the spine
  CHECK(name_of_switch({3, 11}, SharpReach::NvLink) == "none");
  CHECK(name_of_switch({0, 1, 2, 3, 4, 5, 6, 7}) == "n0.nvswitch");
  CHECK(name_of_switch({0, 1, 2, 3, 4, 5, 6, 7}, SharpReach::Network) == "spine0");
  p.sharp = false;
  const Topology plain = make_cluster_topology(p);
  CHECK(!sharp_switch_of(plain, {plain.gpu_of_rank(3), plain.gpu_of_rank(11)}));
}

TEST_CASE(
    "collnet is refused without a SHARP network switch or across one host, and auto "
    "skips it") {
  CHECK_THAT(plan_error_of(R"({"topology": {"preset": "cluster", "nodes": 2},
      "network": {"model": "flow"},
      "collectives": [{"op": "all_reduce", "algorithm": "collnet_direct", "bytes": 4096}]})"),
             Catch::Contains("collectives[0]: collnet_direct needs a network switch with "
                             "\"sharp\": true"));
  CHECK_THAT(plan_error_of(R"({"topology": "dgx-h100", "network": {"model": "flow"},
      "collectives": [{"op": "all_reduce", "algorithm": "collnet_chain", "bytes": 4096}]})"),
             Catch::Contains("these 8 ranks are on one host"));
  CHECK_THAT(plan_error_of(R"({"topology": {"preset": "cluster", "nodes": 2, "sharp": true},
      "network": {"model": "ideal"},
      "collectives": [{"op": "all_reduce", "algorithm": "collnet_direct", "bytes": 4096}]})"),
             Catch::Contains("does not share links"));
  CHECK_THAT(plan_error_of(R"({"topology": {"preset": "cluster", "nodes": 2, "sharp": true},
      "network": {"model": "flow"},
      "collectives": [{"op": "all_reduce", "algorithm": "collnet_direct", "bytes": 4096,
                       "hosts": [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]}]})"),
             Catch::Contains("collnet_direct needs each host's ranks consecutive"));
  const Plan p = make_plan(scenario_of(R"({"topology": {"preset": "cluster", "nodes": 2},
      "network": {"model": "flow"},
      "collectives": [{"op": "all_reduce", "algorithm": "auto", "bytes": "1MiB"}]})"));
  CHECK(p.collectives[0].spec.algorithm.rfind("collnet", 0) != 0);
}

TEST_CASE("NCCL's model weighs CollNet where the network reduces, with NCCL's latencies") {
  const auto options_at = [](bool sharp, int nodes, std::int64_t bytes,
                             const std::string& filter = "") {
    const Plan p = make_plan(
        scenario_of(R"({"topology": {"preset": "cluster", "nodes": )" + std::to_string(nodes) +
                    R"(, "sharp": )" + (sharp ? "true" : "false") +
                    R"(}, "network": {"model": "flow"}, "collectives": [{"op": "all_reduce",
        "algorithm": "nccl", "bytes": )" +
                    std::to_string(bytes) + filter + "}]}"));
    return p.collectives[0];
  };
  const PlannedCollective plain = options_at(false, 2, 1 << 20);
  for (const NcclOption& o : plain.nccl_options)
    CHECK((o.algorithm != NcclAlgo::CollNetDirect && o.algorithm != NcclAlgo::CollNetChain));
  const PlannedCollective sharp = options_at(true, 2, 1 << 20);
  std::set<NcclAlgo> weighed;
  for (const NcclOption& o : sharp.nccl_options) {
    weighed.insert(o.algorithm);
    CHECK(o.protocol ==
          (o.algorithm == NcclAlgo::CollNetDirect || o.algorithm == NcclAlgo::CollNetChain
               ? Protocol::Simple
               : o.protocol));
    // 8 GPUs a host: up to the heads and back, then once through the network.
    if (o.algorithm == NcclAlgo::CollNetDirect)
      CHECK(o.latency_us == Approx(2 * (3.7 + 7 * 0.4) + 31));
    if (o.algorithm == NcclAlgo::CollNetChain) CHECK(o.latency_us == Approx(2 * 7 * 2.8 + 30));
  }
  CHECK(weighed.count(NcclAlgo::CollNetDirect) == 1);
  CHECK(weighed.count(NcclAlgo::CollNetChain) == 1);
  // At 1 MiB on two hosts NVLS joined by CollNet wins (its latency, 25 + 18 us, the least);
  // without NVLS CollNetDirect's (44 us). The schedules they run are proven.
  CHECK(sharp.nccl_pick.rfind("nvls/Simple/", 0) == 0);
  CHECK(sharp.schedule->network_group == 2);
  CHECK(verify_exact(*sharp.schedule, 1).ok());
  const PlannedCollective no_nvls =
      options_at(true, 2, 1 << 20, R"(, "nccl_algo": "^nvls,nvlstree")");
  CHECK(no_nvls.nccl_pick.rfind("collnet_direct/Simple/", 0) == 0);
  CHECK(verify_exact(*no_nvls.schedule, 1).ok());
  // Without CollNet, NVLS does not cross hosts: NVLSTree does.
  for (const NcclOption& o : plain.nccl_options) CHECK(o.algorithm != NcclAlgo::Nvls);
  // Forced by NCCL_ALGO's spelling, at a size where it would not win.
  const PlannedCollective forced =
      options_at(true, 4, std::int64_t{1} << 30, R"(, "nccl_algo": "CollNetChain")");
  CHECK(forced.nccl_pick.rfind("collnet_chain/Simple/", 0) == 0);
  CHECK(forced.schedule->network_stride == 8);
}

TEST_CASE(
    "nvls across hosts (NCCL's NVLS with CollNet) is proven by the replayer, and each "
    "NIC carries its rail's slice once each way") {
  for (int hosts : {2, 3, 5})
    for (int per_host : {1, 2, 3, 8})
      for (int segments : {1, 3})
        for (int channels : {1, 2}) {
          INFO(hosts << " hosts x " << per_host << ", segments " << segments << ", channels "
                     << channels);
          AlgorithmOptions o;
          o.segments = segments;
          o.channels = channels;
          for (int h = 0; h < hosts; ++h) o.hosts.insert(o.hosts.end(), per_host, h);
          const Schedule s = generate(CollectiveOp::AllReduce, "nvls",
                                      shape_of(CollectiveOp::AllReduce, hosts * per_host, 97), o);
          REQUIRE(check_schedule(s).empty());
          CHECK(s.switch_group == per_host);
          CHECK(s.network_group == hosts);
          CHECK(s.network_stride == per_host);
          CHECK(verify_exact(s, 9, 2).ok());
          if (hosts * per_host <= 8) CHECK(verify_symbolic(s).ok());
          for (const Op& op : s.ops) CHECK(op.is_switch());
        }
  // On a cluster whose switches reduce: a NIC carries S / P each way, the rail's slice.
  const ClusterParams p = sharp_cluster(2, 4);
  const Topology t = make_cluster_topology(p);
  const std::int64_t S = std::int64_t{16} << 20;
  AlgorithmOptions o;
  o.segments = 4;
  o.hosts = {0, 0, 0, 0, 1, 1, 1, 1};
  const Schedule s =
      generate(CollectiveOp::AllReduce, "nvls", shape_of(CollectiveOp::AllReduce, 8, S / 4), o);
  const SimulationResult r = simulate(s, t, 0, "flow");
  int nic_links = 0;
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const Link& link = t.link(l);
    if (t.node(link.src).kind != NodeKind::Nic || link.kind == LinkKind::Pcie) continue;
    ++nic_links;
    CHECK(r.links.bytes(static_cast<std::size_t>(l)) == S / 4);
  }
  CHECK(nic_links == 8);
}

TEST_CASE(
    "nvls across hosts needs a network switch that reduces, on one NVSwitch it is as "
    "before") {
  CHECK_THAT(plan_error_of(R"({"topology": {"preset": "cluster", "nodes": 2},
      "network": {"model": "flow"},
      "collectives": [{"op": "all_reduce", "algorithm": "nvls", "bytes": 4096}]})"),
             Catch::Contains("collectives[0]: nvls needs a network switch with \"sharp\": true "
                             "(InfiniBand SHARP) that the GPUs of ranks 0 and 8 (one per host)"));
  const Plan one = make_plan(scenario_of(R"({"topology": "dgx-h100", "network": {"model":
      "flow"}, "collectives": [{"op": "all_reduce", "algorithm": "nvls", "bytes": 4096}]})"));
  CHECK(one.collectives[0].spec.options.hosts.empty());
  CHECK(one.collectives[0].schedule->network_group == 0);
  const Plan two = make_plan(scenario_of(R"({"topology": {"preset": "cluster", "nodes": 2,
      "sharp": true}, "network": {"model": "flow"},
      "collectives": [{"op": "all_reduce", "algorithm": "nvls", "bytes": 4096}]})"));
  CHECK(two.collectives[0].schedule->switch_group == 8);
  CHECK(two.collectives[0].schedule->network_group == 2);
  CHECK(verify_exact(*two.collectives[0].schedule, 1).ok());
}

TEST_CASE(
    "a rail spanning several leaves reduces at each leaf first, one stream going on "
    "up to the spine") {
  // 4 servers of 1 GPU, 2 a leaf (radix 4 at 1:1 takes 2), 2:1 oversubscribed: a leaf's one
  // uplink carries 50 GB/s, what one NIC sends. Reduced at the leaf, one stream takes it
  // whole; two unreduced streams would share it and take twice as long.
  ClusterParams p = sharp_cluster(4, 1);
  p.oversubscription = 2;
  p.radix = 3;  // floor(3 x 2 / 3) = 2 servers a leaf
  const Topology t = make_cluster_topology(p);
  Router router(t);
  std::vector<NodeId> gpus;
  for (int r = 0; r < 4; ++r) gpus.push_back(t.gpu_of_rank(r));
  const auto root = sharp_switch_of(t, gpus, SharpReach::Network);
  REQUIRE(root);
  CHECK(t.node(*root).name == "spine0");
  std::vector<std::string> ends;
  for (NodeId e : sharp_leg_ends(t, router, gpus, *root)) ends.push_back(t.node(e).name);
  CHECK(ends == std::vector<std::string>{"spine0", "leaf0.0", "spine0", "leaf0.1"});

  const std::int64_t S = std::int64_t{64} << 20;
  const Schedule s = collnet("collnet_direct", 4, 1, S / 4);
  const SimulationResult r = simulate(s, t, 0, "flow");
  CHECK(to_seconds(r.tasks[0].end - r.tasks[0].start) ==
        Approx(static_cast<double>(S) / p.server.nic).epsilon(0.02));
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const Link& link = t.link(l);
    if (t.node(link.src).kind == NodeKind::Leaf && t.node(link.dst).kind == NodeKind::Spine) {
      INFO(t.link_label(l));
      CHECK(r.links.bytes(static_cast<std::size_t>(l)) == S);
    }
  }
}

TEST_CASE("NCCL's chunks for CollNetChain and for NVLS across nodes") {
  NcclTopo t;
  t.per_node = 8;  // the chain's depth
  // 256 KiB, halved while a channel would move fewer than 64, 8, 1 x depth chunks.
  CHECK(collnet_chain_chunk(std::int64_t{4} << 30, 16, t) == 256 << 10);
  CHECK(collnet_chain_chunk(std::int64_t{1} << 30, 16, t) == 128 << 10);
  CHECK(collnet_chain_chunk(16 << 20, 16, t) == 64 << 10);
  CHECK(collnet_chain_chunk(1 << 20, 16, t) == 32 << 10);
  // NVLS across nodes: 32 KiB where NCCL's model gives it under 150 GB/s.
  CHECK(nvls_net_chunk(149.9) == 32 << 10);
  CHECK(nvls_net_chunk(191.4) == 128 << 10);
}

TEST_CASE("NVLS pays the network's latency only where it crosses the network") {
  // Four GPUs on one sharp NVSwitch, told to be on two hosts: NVLS still runs on the one
  // switch, and its costs are those of one host.
  const auto launch_us = [](bool hosts) {
    std::string nodes = R"({"name": "sw", "kind": "nvswitch", "sharp": true})", links;
    for (int g = 0; g < 4; ++g) {
      nodes += fmt::format(R"(, {{"name": "g{}", "kind": "gpu"{}}})", g,
                           hosts ? fmt::format(R"(, "host": {})", g / 2) : "");
      links += fmt::format(
          R"({}{{"src": "g{}", "dst": "sw", "kind": "nvlink", "bandwidth": "450GB/s"}})",
          g ? ", " : "", g);
    }
    const Plan p =
        make_plan(scenario_of(R"({"topology": {"nodes": [)" + nodes + R"(], "links": [)" + links +
                              R"(]}, "network": {"model": "flow"}, "collectives":
        [{"op": "all_reduce", "algorithm": "nvls", "protocol": "Simple", "bytes": 4096}]})"));
    CHECK(p.collectives[0].schedule->network_group == 0);
    return to_seconds(p.collectives[0].cost->launch) * 1e6;
  };
  CHECK(launch_us(true) == launch_us(false));
  CHECK(launch_us(false) == Approx(25.0));  // NVLS's NVLink latency, once
}

TEST_CASE(
    "on three tiers the rails' SHARP trees share out the cores and reduce at every "
    "level, so CollNet takes what it takes on two") {
  ClusterParams two = sharp_cluster(8, 4);
  two.spines = 4;
  ClusterParams three = two;
  three.pod_nodes = 4;
  three.cores = 4;
  const std::int64_t S = std::int64_t{64} << 20;
  const Schedule s = collnet("collnet_direct", 8, 4, S / 4, 8);
  const double on_two = simulated_seconds(s, make_cluster_topology(two), 0, "flow");
  const Topology t3 = make_cluster_topology(three);
  CHECK(simulated_seconds(s, t3, 0, "flow") == Approx(on_two).epsilon(0.01));
  // Each rail's group has its own core; a pod's leaf and spine each send one stream up.
  std::set<NodeId> roots;
  Router router(t3);
  for (int rail = 0; rail < 4; ++rail) {
    std::vector<NodeId> gpus;
    for (int h = 0; h < 8; ++h) gpus.push_back(t3.gpu_of_rank(h * 4 + rail));
    const auto root = sharp_switch_of(t3, gpus, SharpReach::Network, rail);
    REQUIRE(root);
    CHECK(t3.node(*root).kind == NodeKind::Core);
    roots.insert(*root);
    const std::vector<NodeId> ends = sharp_leg_ends(t3, router, gpus, *root);
    CHECK(std::count(ends.begin(), ends.end(), *root) == 2);  // one stream from each pod
  }
  CHECK(roots.size() == 4);
}

TEST_CASE("collnet_direct gathers at most 8 GPUs a host, as NCCL's, and CollNetChain takes more") {
  const std::string cluster =
      R"({"topology": {"preset": "cluster", "nodes": 2, "gpus_per_node": 16, "sharp": true},
          "network": {"model": "flow"}, "collectives": [{"op": "all_reduce", "bytes": "256MiB", )";
  CHECK_THAT(plan_error_of(cluster + R"("algorithm": "collnet_direct"}]})"),
             Catch::Contains("collectives[0]: collnet_direct gathers at most 8 GPUs"));
  // NCCL's pick still weighs CollNetChain on those hosts.
  const Plan plan =
      make_plan(scenario_of(cluster + R"("algorithm": "nccl", "nccl_algo": "collnetchain"}]})"));
  CHECK_THAT(plan.collectives[0].label(), Catch::StartsWith("nccl: collnet_chain/Simple/"));
}

TEST_CASE("a SHARP switch slower than its links is the bottleneck the report names") {
  // CollNetDirect on 2 hosts of 8: each GPU's NVLink carries most (1.75 x its share), each
  // NIC its rail's share once each way; at the line rate NVLink is the limit.
  Scenario s = scenario_of(R"({"topology": {"preset": "cluster", "nodes": 2, "sharp": true},
      "network": {"model": "flow"}, "collectives": [{"name": "c", "op": "all_reduce",
      "algorithm": "collnet_direct", "segments": 8, "bytes": "256MiB"}]})");
  const auto bottleneck = [&](double efficiency) {
    for (NodeId n = 0; n < static_cast<NodeId>(s.topology.nodes().size()); ++n)
      if (s.topology.node(n).kind == NodeKind::Leaf) s.topology.set_sharp(n, efficiency);
    const ScenarioResult r = run_scenario(s);
    const Bottleneck b = analyse_traffic(s, r).per_collective[0];
    return std::pair{b, r.outcomes[0].time_s};
  };
  const auto [line_rate, fast] = bottleneck(1);
  CHECK(s.topology.link(line_rate.link).kind == LinkKind::NvLink);
  CHECK(line_rate.share_of_rate == 1);
  // A leaf reducing at a quarter of the rate: the legs to it take 4x as long, longer than
  // NVLink's share, and the report names a NIC's link, slowed to 25%.
  const auto [quarter, slow] = bottleneck(0.25);
  CHECK(s.topology.link(quarter.link).kind == LinkKind::Ib);
  CHECK(quarter.share_of_rate == Approx(0.25));
  CHECK(quarter.seconds == Approx(4.0 * quarter.bytes / s.topology.link(quarter.link).bandwidth));
  CHECK(slow > fast);
  CHECK(quarter.seconds <= slow);
}

TEST_CASE("a run streamed names the bottlenecks its stored run names, slowed legs and ties alike") {
  // Uneven NVLS slices on one switch: several links tie on bytes and on slowed bytes, which
  // the two runs sum in different orders (ops as they retire, legs as they begin).
  for (const char* collectives :
       {R"({"name": "a", "op": "all_reduce", "algorithm": "nvls", "bytes": 4000012, "segments": 16},
           {"name": "b", "op": "all_reduce", "algorithm": "nvls", "bytes": 8000024, "segments": 17})",
        R"({"name": "a", "op": "all_reduce", "algorithm": "nvls", "bytes": 1000004, "segments": 5},
           {"name": "b", "op": "all_reduce", "algorithm": "ring", "bytes": 1000004})"}) {
    INFO(collectives);
    const Scenario s = scenario_of(
        std::string(R"({"topology": "dgx-h100", "network": {"model": "flow"}, "collectives": [)") +
        collectives + "]}");
    const TrafficReport stored = analyse_traffic(s, run_scenario(s));
    const TrafficReport streamed = analyse_traffic(s, run_scenario_streamed(s));
    REQUIRE(stored.per_collective.size() == streamed.per_collective.size());
    for (std::size_t c = 0; c < stored.per_collective.size(); ++c) {
      const Bottleneck &a = stored.per_collective[c], &b = streamed.per_collective[c];
      CHECK(a.link == b.link);
      CHECK(a.bytes == b.bytes);
      CHECK(a.seconds == b.seconds);
      CHECK(a.share_of_rate == b.share_of_rate);
    }
    CHECK(stored.per_collective[0].share_of_rate < 1);
  }
}

TEST_CASE("collnet under a protocol pays NCCL's latencies once: more segments never slow it") {
  // A switch op is done when its legs have arrived; each leg paid the PCIe hop's protocol
  // latency (3.7 us) and each segment waited for the one before: 256 KiB took 70.8 us in 8
  // segments and 278 us in 64. NCCL counts the network's latency once per collective.
  const auto time_us = [](const char* algorithm, int segments) {
    return run_scenario(scenario_of(fmt::format(
                            R"({{"topology": {{"preset": "cluster", "nodes": 4, "sharp": true}},
                "network": {{"model": "flow"}}, "collectives": [{{"name": "c", "op": "all_reduce",
                "algorithm": "{}", "protocol": "Simple", "segments": {}, "bytes": "256KiB"}}]}})",
                            algorithm, segments)))
               .outcomes[0]
               .time_s *
           1e6;
  };
  for (const char* algorithm : {"collnet_direct", "collnet_chain"}) {
    INFO(algorithm);
    CHECK(time_us(algorithm, 64) <= time_us(algorithm, 8) * 1.05);
  }
}

}  // namespace collnet_test
