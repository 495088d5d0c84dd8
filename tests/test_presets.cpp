// The cluster presets: structure, routing through them, and the topo command.
#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/json_view.h"
#include "network/network_model.h"
#include "scenario/scenario.h"
#include "schedule/algorithms.h"
#include "simulate/simulator.h"
#include "topology/presets.h"
#include "topology/routing.h"
#include "topology/summary.h"
#include "topology/topology_json.h"

using namespace collsim;

namespace {

Topology load(const char* text) {
  const auto doc = nlohmann::json::parse(text);
  return load_topology(JsonView(doc, "topology"), ".");
}

std::vector<LinkKind> kinds_on_path(const Topology& t, Router& r, int a, int b) {
  std::vector<LinkKind> out;
  for (LinkId l : r.links(r.route(t.gpu_of_rank(a), t.gpu_of_rank(b))))
    out.push_back(t.link(l).kind);
  return out;
}

}  // namespace

TEST_CASE("dgx-h100 preset: NVSwitch between GPUs, a NIC per GPU on PCIe") {
  const Topology t = load(R"({"preset": "dgx-h100"})");
  CHECK(t.num_ranks() == 8);
  Router r(t);
  CHECK(kinds_on_path(t, r, 0, 5) == std::vector<LinkKind>{LinkKind::NvLink, LinkKind::NvLink});
  CHECK(bisection_bandwidth(t) == Approx(4 * 450e9));
}

TEST_CASE("cluster preset: same rail crosses one leaf, other rails a spine, same node NVSwitch") {
  const Topology t =
      load(R"({"preset": "cluster", "nodes": 4, "gpus_per_node": 8, "nic": "400Gbps"})");
  CHECK(t.num_ranks() == 32);
  Router r(t);
  using K = LinkKind;
  CHECK(kinds_on_path(t, r, 0, 7) == std::vector<K>{K::NvLink, K::NvLink});
  CHECK(kinds_on_path(t, r, 3, 11) == std::vector<K>{K::Pcie, K::Ib, K::Ib, K::Pcie});  // rail 3
  CHECK(kinds_on_path(t, r, 3, 12) ==
        std::vector<K>{K::Pcie, K::Ib, K::Ib, K::Ib, K::Ib, K::Pcie});  // rail 3 -> 4
  CHECK(t.node(t.gpu_of_rank(11)).host == 1);
  // 1:1: the first half of the ranks (2 nodes) can push all their NICs across.
  CHECK(bisection_bandwidth(t) == Approx(16 * 50e9));
  // Rail-optimized: that split never needs a spine. The spine uplinks are what 2:1 halves.
  auto uplinks = [](const Topology& x) {
    double total = 0;
    for (const auto& l : x.links())
      if (x.node(l.dst).kind == NodeKind::Spine) total += l.bandwidth;
    return total;
  };
  const Topology over = load(R"({"preset": "cluster", "nodes": 4, "oversubscription": 2})");
  CHECK(uplinks(t) == Approx(32 * 50e9));
  CHECK(uplinks(over) == Approx(16 * 50e9));
}

TEST_CASE("cluster preset: a leaf takes radix/2 servers at 1:1, more leaves per rail beyond") {
  const Topology t = load(R"({"preset": "cluster", "nodes": 5, "gpus_per_node": 2, "radix": 4})");
  int leaves = 0;
  for (const auto& n : t.nodes()) leaves += n.kind == NodeKind::Leaf;
  CHECK(leaves == 2 * 3);  // 2 rails x ceil(5 / 2)
}

TEST_CASE("three-tier cluster: pods of leaves and spines joined by core switches") {
  const char* spec =
      R"({"preset": "cluster", "nodes": 16, "pod_nodes": 4, "spines": 2, "cores": 2%s})";
  auto with = [&](const char* extra) {
    char text[256];
    std::snprintf(text, sizeof text, spec, extra);
    return load(text);
  };
  const Topology t = with("");
  std::map<NodeKind, int> count;
  for (const auto& n : t.nodes()) ++count[n.kind];
  CHECK(count[NodeKind::Core] == 2);
  CHECK(count[NodeKind::Spine] == 4 * 2);
  CHECK(count[NodeKind::Leaf] == 4 * 8);  // per pod: 8 rails x 1 leaf
  Router r(t);
  using K = LinkKind;
  CHECK(kinds_on_path(t, r, 0, 8) == std::vector<K>{K::Pcie, K::Ib, K::Ib, K::Pcie});  // pod, rail
  CHECK(kinds_on_path(t, r, 0, 9).size() == 6);  // same pod, other rail: through a pod spine
  CHECK(kinds_on_path(t, r, 0, 32) ==
        std::vector<K>{K::Pcie, K::Ib, K::Ib, K::Ib, K::Ib, K::Ib, K::Ib, K::Pcie});  // other pod
  // Full bisection at 1:1; the core links are what core_oversubscription thins.
  CHECK(bisection_bandwidth(t) == Approx(64 * 50e9));
  CHECK(bisection_bandwidth(with(R"(, "core_oversubscription": 2)")) == Approx(32 * 50e9));
  // Two tiers when the pods would hold every server.
  CHECK(load(R"({"preset": "cluster", "nodes": 4, "pod_nodes": 4})").name == "cluster-4x8");
}

TEST_CASE("three-tier cluster under flow: traffic between pods runs at 1/core_oversubscription") {
  for (double o : {1.0, 2.0}) {
    ClusterParams p;
    p.nodes = 16;
    p.pod_nodes = 4;
    p.core_oversubscription = o;  // one spine per pod, one core: no ECMP in the way
    const Topology t = make_cluster_topology(p);
    const int K = t.num_ranks(), pods = 4;
    // Rank i on pod i % 4: every rank's neighbour is in the next pod.
    std::vector<NodeId> gpus;
    for (int i = 0; i < K; ++i) gpus.push_back(t.gpu_of_rank((i % pods) * (K / pods) + i / pods));
    CollectiveShape shape;
    shape.op = CollectiveOp::SendRecv;
    shape.ranks = K;
    shape.count = 1 << 24;  // 64 MiB each
    const Schedule s = find_algorithm(CollectiveOp::SendRecv, "direct")->generate(shape, {});
    Router router(t);
    NetworkParams np;
    np.model = collsim::NetworkModelKind::Flow;
    auto net = make_network_model(np, t, router);
    Simulator sim(t, router, *net);
    const auto result = sim.run({{"shift", &s, gpus, {}, nullptr}});
    INFO("core oversubscription " << o);
    CHECK(to_seconds(result.tasks[0].end - result.tasks[0].start) ==
          Approx(s.bytes(s.ops[0]) / (50e9 / o)).epsilon(1e-9));
  }
}

TEST_CASE("torus and multidim: wrap-around neighbours, dimensions as given") {
  const Topology torus = load(R"({"preset": "torus", "dims": [4, 4], "bandwidth": "100GB/s"})");
  CHECK(torus.num_ranks() == 16);
  CHECK(torus.links().size() == 16 * 4);  // every GPU: 4 neighbours, one directed link to each
  Router r(torus);
  CHECK(r.links(r.route(torus.gpu_of_rank(0), torus.gpu_of_rank(3))).size() == 1);   // wraps around
  CHECK(r.links(r.route(torus.gpu_of_rank(0), torus.gpu_of_rank(10))).size() == 4);  // (2, 2) away
  const Topology md =
      load(R"({"preset": "multidim", "dims": [{"shape": "ring", "size": 2, "bandwidth": "200GB/s"},
                                                             {"shape": "switch", "size": 8, "bandwidth": "50GB/s"}]})");
  CHECK(md.num_ranks() == 16);
  Router m(md);
  CHECK(m.info(m.route(md.gpu_of_rank(0), md.gpu_of_rank(1))).bottleneck == Approx(200e9));
  CHECK(m.info(m.route(md.gpu_of_rank(0), md.gpu_of_rank(2))).bottleneck == Approx(50e9));
  const Topology nvl = load(R"({"preset": "nvl72"})");
  CHECK(nvl.num_ranks() == 72);
  // Its NVLink Switch reduces at the efficiency NCCL's tuning model rates NVLS by on
  // that generation (0.74 on Blackwell's 900 GB/s), not Hopper's 0.85: the pick and the
  // simulation of NVLS read one figure.
  CHECK(nvl.node(*nvl.find("switch")).sharp_efficiency == 0.74);
  const Topology nvl_hopper = load(R"({"preset": "nvl72", "bandwidth": "450GB/s"})");
  CHECK(nvl_hopper.node(*nvl_hopper.find("switch")).sharp_efficiency == 0.85);
}

TEST_CASE("a cluster of one-GPU servers over several leaves joins them through its spines") {
  // 12 servers, four a leaf: three leaves of the one rail, which only spines join (the
  // preset once left them apart: "n0.gpu0 cannot reach n4.gpu0").
  const Topology t = load(R"({"preset": "cluster", "nodes": 12, "gpus_per_node": 1, "radix": 8,
                              "spines": 4})");
  Router r(t);
  for (int a = 0; a < 12; ++a)
    for (int b = 0; b < 12; ++b)
      if (a != b)
        CHECK(r.links(r.route(t.gpu_of_rank(a), t.gpu_of_rank(b))).size() ==
              ((a / 4 == b / 4) ? 4u : 6u));
  // Pods of one leaf each: the spines link them to the cores (the three-tier preset).
  const Topology pods = load(R"({"preset": "cluster", "nodes": 8, "gpus_per_node": 1,
                                 "pod_nodes": 4})");
  Router rp(pods);
  for (int b = 1; b < 8; ++b)
    CHECK(!rp.links(rp.route(pods.gpu_of_rank(0), pods.gpu_of_rank(b))).empty());
  // One leaf holds them all: no spine.
  const Topology one = load(R"({"preset": "cluster", "nodes": 4, "gpus_per_node": 1, "radix": 8})");
  for (LinkId l = 0; l < static_cast<LinkId>(one.links().size()); ++l)
    CHECK(one.node(one.link(l).dst).kind != NodeKind::Spine);
}

TEST_CASE("ECMP spreads pairs over equal-cost spines deterministically, single takes one") {
  const Topology t = load(R"({"preset": "cluster", "nodes": 2, "gpus_per_node": 8, "spines": 4})");
  auto spines_used = [&](RoutingPolicy policy) {
    Router r(t, policy);
    std::set<NodeId> used;
    for (int a = 0; a < 8; ++a)
      for (int b = 8; b < 16; ++b)
        for (LinkId l : r.links(r.route(t.gpu_of_rank(a), t.gpu_of_rank(b))))
          if (t.node(t.link(l).dst).kind == NodeKind::Spine) used.insert(t.link(l).dst);
    return used.size();
  };
  CHECK(spines_used(RoutingPolicy::Ecmp) == 4);
  CHECK(spines_used(RoutingPolicy::Single) == 1);
  CHECK(spines_used(RoutingPolicy::DestinationModK) == 1);  // one server a rail's leaf
  // D-mod-k: the spine by the destination server's port on its leaf, whatever the source.
  const Topology eight = load(R"({"preset": "cluster", "nodes": 8, "gpus_per_node": 1,
                                  "radix": 8, "spines": 4})");
  Router dmodk(eight, RoutingPolicy::DestinationModK);
  for (int a = 0; a < 4; ++a)
    for (int b = 4; b < 8; ++b) {
      std::string spine;
      for (LinkId l : dmodk.links(dmodk.route(eight.gpu_of_rank(a), eight.gpu_of_rank(b))))
        if (eight.node(eight.link(l).dst).kind == NodeKind::Spine)
          spine = eight.node(eight.link(l).dst).name;
      CHECK(spine == "spine" + std::to_string(b - 4));
    }
  Router a(t, RoutingPolicy::Ecmp), b(t, RoutingPolicy::Ecmp);
  for (int x = 8; x < 16; ++x) {
    const auto pa = a.links(a.route(t.gpu_of_rank(1), t.gpu_of_rank(x)));
    const auto pb = b.links(b.route(t.gpu_of_rank(1), t.gpu_of_rank(x)));
    CHECK(std::vector<LinkId>(pa.begin(), pa.end()) == std::vector<LinkId>(pb.begin(), pb.end()));
  }
}

TEST_CASE("routing by fabric, the default: D-mod-k over InfiniBand, ECMP over RoCE", "[routing]") {
  // Every route of a 4-spine cluster under "auto" is D-mod-k's on InfiniBand (its subnet
  // manager programs destination-based tables) and ECMP's on a RoCE fabric (Ethernet
  // switches hash flows).
  const auto routes = [](const Topology& t, RoutingPolicy policy) {
    Router r(t, policy);
    std::vector<std::vector<LinkId>> out;
    for (int a = 0; a < t.num_ranks(); a += 3)
      for (int b = 0; b < t.num_ranks(); ++b) {
        if (a == b) continue;
        const auto l = r.links(r.route(t.gpu_of_rank(a), t.gpu_of_rank(b)));
        out.emplace_back(l.begin(), l.end());
      }
    return out;
  };
  const Topology ib = load(R"({"preset": "cluster", "nodes": 8, "gpus_per_node": 2,
                               "radix": 8, "spines": 4})");
  const Topology roce = load(R"({"preset": "cluster", "nodes": 8, "gpus_per_node": 2,
                                 "radix": 8, "spines": 4, "fabric": "roce"})");
  CHECK(routes(ib, RoutingPolicy::ByFabric) == routes(ib, RoutingPolicy::DestinationModK));
  CHECK(routes(ib, RoutingPolicy::ByFabric) != routes(ib, RoutingPolicy::Ecmp));
  CHECK(routes(roce, RoutingPolicy::ByFabric) == routes(roce, RoutingPolicy::Ecmp));
  CHECK(routes(roce, RoutingPolicy::ByFabric) != routes(roce, RoutingPolicy::DestinationModK));
  // A scenario routes by fabric unless it says otherwise.
  const auto policy_of = [](const char* network) {
    return parse_scenario(parse_json_text(fmt::format(R"({{"topology": "dgx-h100", "network": {},
      "collectives": [{{"name": "x", "op": "all_reduce", "bytes": 64}}]}})",
                                                      network),
                                          "t.json"),
                          ".")
        .network.routing;
  };
  CHECK(policy_of("{}") == RoutingPolicy::ByFabric);
  CHECK(policy_of(R"({"routing": "auto"})") == RoutingPolicy::ByFabric);
  CHECK(policy_of(R"({"routing": "ecmp"})") == RoutingPolicy::Ecmp);
}

TEST_CASE("GPUs forward only when nothing else connects them") {
  // A ring of GPUs has no switch: two hops through a neighbour GPU.
  const Topology ring = make_ring_topology(4, 1e9, 0);
  Router r(ring);
  CHECK(r.links(r.route(ring.gpu_of_rank(0), ring.gpu_of_rank(2))).size() == 2);
}

TEST_CASE("Graphviz output draws every cable once") {
  const Topology t = load(R"({"preset": "dgx-h100"})");
  std::ostringstream dot;
  write_graphviz(dot, t);
  const std::string s = dot.str();
  CHECK(s.starts_with("graph topology {"));
  std::size_t cables = 0;
  for (std::size_t at = s.find("[color="); at != std::string::npos; at = s.find("[color=", at + 1))
    ++cables;
  CHECK(cables == 16);  // 16 cables, 32 directed links
  CHECK_THAT(s, Catch::Contains("label=\"gpu3\\nrank 3\" shape=box") &&
                    Catch::Contains("label=\"nvlink 450 GB/s\"") &&
                    !Catch::Contains("subgraph cluster_host"));  // one host: no box
}

TEST_CASE("Graphviz of a cluster: a box per host, ranks and rails in order", "[topo]") {
  const Topology t = load(R"({"preset": "cluster", "nodes": 4})");
  std::ostringstream dot;
  write_graphviz(dot, t);
  const std::string s = dot.str();
  for (int h = 0; h < 4; ++h)
    CHECK_THAT(s, Catch::Contains(fmt::format("subgraph cluster_host{} {{", h)));
  CHECK_THAT(s, Catch::Contains("label=\"n3.gpu7\\nrank 31\""));
  CHECK_THAT(s, Catch::Contains("label=\"leaf5.0\\nrail 5\""));
  // Invisible flat edges keep a host's GPUs in rank order and the leaves rail after rail.
  const auto id = [&](const char* name) { return *t.find(name); };
  CHECK_THAT(s, Catch::Contains(fmt::format("n{} -- n{};", id("n1.gpu0"), id("n1.gpu1"))));
  CHECK_THAT(s, Catch::Contains(fmt::format("n{} -- n{};", id("leaf2.0"), id("leaf3.0"))));
  // 104 cables, too many to label (the legend gives the rates): 32 nvlink, 32 pcie, 32 + 8 ib.
  CHECK_THAT(s, !Catch::Contains("label=\"ib 50 GB/s\""));
  CHECK_THAT(s, Catch::Contains("<td>50 GB/s, 200 GB/s per direction</td>"));
}

TEST_CASE("topo summarises a GPU alone: no links, no halves to cut", "[topo]") {
  // It printed "ranks 0..-1" and an empty injection list.
  const std::string one = topology_summary(
      load(R"({"name": "one", "nodes": [{"name": "g", "kind": "gpu"}], "links": []})"));
  CHECK_THAT(one, Catch::Contains("links (directed): none\n") &&
                      Catch::Contains("per-GPU injection (rank 0, g): none (no links)\n") &&
                      !Catch::Contains("bisection") && !Catch::Contains("-1"));
}

TEST_CASE("topo summaries tell fabrics apart: oversubscription, spine capacity, NIC injection",
          "[topo]") {
  const std::string flat = topology_summary(load(R"({"preset": "cluster", "nodes": 8})"));
  const std::string thin =
      topology_summary(load(R"({"preset": "cluster", "nodes": 8, "oversubscription": 2})"));
  CHECK_THAT(flat, Catch::StartsWith("topology cluster-8x8: 64 GPUs on 8 hosts"));
  CHECK_THAT(thin, Catch::StartsWith("topology cluster-8x8-2to1: 64 GPUs on 8 hosts"));
  CHECK_THAT(flat,
             Catch::Contains("per-GPU injection (rank 0, n0.gpu0): nvlink 450 GB/s, pcie 64 GB/s\n"
                             "  through its NIC (ib 50 GB/s onward): 50 GB/s out of the host"));
  // One server alone: its NICs lead nowhere, said as such (not "( onward): 0 GB/s").
  CHECK_THAT(topology_summary(load(R"("dgx-h100")")),
             Catch::Contains("  through its NIC: nothing beyond (no network in this topology)"));
  // Each leaf takes 8 NICs at 50 GB/s; its uplinks carry all of it at 1:1, half at 2:1.
  // The preset's one spine is said as such: one uplink from each leaf.
  CHECK_THAT(flat, Catch::Contains("leaf      8 switches: 3200 GB/s in from below, 3200 GB/s up in "
                                   "1 uplink each (400 GB/s apiece): oversubscription 1:1"));
  CHECK_THAT(thin, Catch::Contains("leaf      8 switches: 3200 GB/s in from below, 1600 GB/s up in "
                                   "1 uplink each (200 GB/s apiece): oversubscription 2:1"));
  // PCIe that binds is said: an 800 Gb/s NIC behind a 64 GB/s link sends 64, not 100.
  const TopologySummary capped =
      summarise_topology(load(R"({"preset": "cluster", "nodes": 2, "nic": "800Gbps"})"));
  CHECK(capped.injection.scale_out == Approx(64e9));
  CHECK(capped.injection.nic_onward == Approx(100e9));
  CHECK(capped.injection.capping_kind == "pcie");
  CHECK_THAT(topology_summary(load(R"({"preset": "cluster", "nodes": 2, "nic": "800Gbps"})")),
             Catch::Contains("64 GB/s out of the host (its pcie link caps the NICs' 100 GB/s)"));
  CHECK(summarise_topology(load(R"({"preset": "cluster", "nodes": 2})")).injection.capping_kind ==
        "");
  CHECK_THAT(thin, Catch::Contains("spine     1 switch  : 1600 GB/s in from below"));
  const TopologySummary three = summarise_topology(load(
      R"({"preset": "cluster", "nodes": 8, "pod_nodes": 4, "cores": 2, "core_oversubscription": 4})"));
  CHECK(three.name == "cluster-8x8-pods4-2cores-core4to1");
  REQUIRE(three.tiers.size() == 3);
  CHECK(three.tiers[2].kind == "core");
  // Each pod spine takes 1600 GB/s from its leaves and sends 1600 / 4 up, split over 2 cores.
  CHECK(three.tiers[1].oversubscription() == Approx(4));
  CHECK(three.tiers[2].from_below == Approx(2 * 2 * 200e9));
  // 1024 GPUs: capacities past 10000 GB/s read in TB/s.
  const std::string big =
      topology_summary(load(R"({"preset": "cluster", "nodes": 128, "gpus_per_node": 8})"));
  CHECK_THAT(big, Catch::Contains("leaf     32 switches: 51.2 TB/s in from below, 51.2 TB/s up"));
  CHECK_THAT(big, Catch::Contains("one direction): 25.6 TB/s\n"));
  CHECK_THAT(big, !Catch::Contains("e+"));
}

TEST_CASE("topo says which switches reduce, and at what share of the link rate", "[topo]") {
  // Without "sharp" only the hosts' NVSwitches reduce (NVLS, at Hopper's 0.85).
  const TopologySummary plain = summarise_topology(load(R"({"preset": "cluster", "nodes": 2})"));
  REQUIRE(plain.reducing.size() == 1);
  CHECK(plain.reducing[0].kind == "nvswitch");
  CHECK(plain.reducing[0].switches == 2);
  CHECK(plain.reducing[0].efficiency == Approx(0.85));
  // With it, every leaf and spine as well, at the line rate.
  const Topology t = load(R"({"preset": "cluster", "nodes": 2, "sharp": true})");
  const TopologySummary sharp = summarise_topology(t);
  REQUIRE(sharp.reducing.size() == 3);
  CHECK(sharp.reducing[0].kind == "leaf");
  CHECK(sharp.reducing[0].switches == 8);
  CHECK(sharp.reducing[0].efficiency == 1);
  CHECK(sharp.reducing[2].kind == "spine");
  CHECK_THAT(topology_summary(t),
             Catch::Contains("8 leaves at 100% of the link rate, 2 nvswitches at 85% of the link "
                             "rate, 1 spine at 100%"));
  CHECK(topology_summary_json(t)["reducing_switches"][1]["switches"] == 2);
  // A topology with no such switch says nothing of it.
  CHECK_THAT(topology_summary(load(R"({"preset": "dgx", "gpu": "a100"})")),
             !Catch::Contains("reduce"));
  std::ostringstream dot;
  write_graphviz(dot, t);
  CHECK_THAT(dot.str(),
             Catch::Contains("label=\"leaf0.0\\nrail 0\\nSHARP\" shape=ellipse peripheries=2"));
  CHECK_THAT(dot.str(), Catch::Contains("label=\"n0.nvswitch\\nNVLS\""));
}

TEST_CASE("preset errors name the path") {
  CHECK_THROWS_WITH(
      load(R"({"preset": "cluster", "nodes": 4, "oversubscription": 0.5})"),
      "topology.oversubscription: expected a ratio from 1 to 1000 (2 means 2:1), got 0.5");
  // Far above it, an uplink's rate would leave the range every bandwidth is held to.
  CHECK_THROWS_WITH(load(R"({"preset": "cluster", "nodes": 4, "oversubscription": 1e15})"),
                    "topology.oversubscription: expected a ratio from 1 to 1000 (2 means 2:1), "
                    "got 1e+15");
  CHECK_THROWS_WITH(
      load(R"({"preset": "torus", "dims": [], "bandwidth": "1GB/s"})"),
      "topology.dims: expected 1 to 3 sizes, like [8] (a ring), [4, 4] or [4, 4, 4], got []");
  CHECK_THROWS_WITH(
      load(
          R"({"preset": "multidim", "dims": [{"shape": "hypercube", "size": 2, "bandwidth": "1GB/s"}]})"),
      "topology.dims[0].shape: expected one of ring, switch, fully_connected, got \"hypercube\"");
  // An NVLink domain's links are NVLink: "kind" was accepted there and ignored.
  CHECK_THROWS_WITH(load(R"({"preset": "nvl72", "kind": "ib"})"),
                    Catch::Matchers::StartsWith("topology.kind: unknown field"));
}
