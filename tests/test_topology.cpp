#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_view.h"
#include "topology/presets.h"
#include "topology/routing.h"
#include "topology/summary.h"
#include "topology/topology_json.h"

#include <set>

using namespace collsim;

TEST_CASE("switch preset: every GPU pair routes through the switch in two hops") {
  const Topology t = make_switch_topology(8, 450e9, from_seconds(1e-7));
  CHECK(t.num_ranks() == 8);
  CHECK(t.links().size() == 16);
  Router router(t);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const PathId p = router.route(t.gpu_of_rank(a), t.gpu_of_rank(b));
      const auto links = router.links(p);
      REQUIRE(links.size() == 2);
      CHECK(t.link(links[0]).src == t.gpu_of_rank(a));
      CHECK(t.link(links[1]).dst == t.gpu_of_rank(b));
      CHECK(router.info(p).latency == 2 * from_seconds(1e-7));
      CHECK(router.info(p).bottleneck == 450e9);
      CHECK(router.route(t.gpu_of_rank(a), t.gpu_of_rank(b)) == p);  // cached
    }
  }
}

TEST_CASE("ring preset: shortest way round, both directions") {
  const Topology t = make_ring_topology(6, 100e9, 0);
  Router router(t);
  CHECK(router.links(router.route(t.gpu_of_rank(0), t.gpu_of_rank(1))).size() == 1);
  CHECK(router.links(router.route(t.gpu_of_rank(0), t.gpu_of_rank(5))).size() == 1);
  CHECK(router.links(router.route(t.gpu_of_rank(0), t.gpu_of_rank(3))).size() == 3);
  CHECK_FALSE(router.find_unreachable(std::vector<NodeId>{0, 1, 2, 3, 4, 5}));
}

TEST_CASE("one-way ring: the way back goes all the way round") {
  const Topology t = make_ring_topology(5, 100e9, 0, false);
  Router router(t);
  CHECK(router.links(router.route(t.gpu_of_rank(1), t.gpu_of_rank(0))).size() == 4);
}

TEST_CASE("unreachable pairs are found, in either direction") {
  Topology t;
  const NodeId a = t.add_node({"a", NodeKind::Gpu});
  const NodeId b = t.add_node({"b", NodeKind::Gpu});
  const NodeId c = t.add_node({"c", NodeKind::Gpu});
  t.add_duplex(a, b, 1e9, 0, LinkKind::NvLink);
  t.add_link({b, c, 1e9, 0, LinkKind::NvLink});  // c cannot answer
  t.assign_ranks();
  Router router(t);
  const std::vector<NodeId> all{a, b, c};
  const auto bad = router.find_unreachable(all);
  REQUIRE(bad);
  CHECK(bad->first == c);
  CHECK(bad->second == a);
  CHECK_THROWS(router.route(c, a));
  CHECK(router.links(router.route(a, c)).size() == 2);
  // What a reaches is kept between questions; each set is still judged on its own.
  CHECK_FALSE(router.find_unreachable(std::vector<NodeId>{a, b}));
  REQUIRE(router.find_unreachable(all));
  CHECK(router.find_unreachable(all)->first == c);
  const auto from_c = router.find_unreachable(std::vector<NodeId>{c, b});
  REQUIRE(from_c);
  CHECK(*from_c == std::make_pair(c, b));
}

TEST_CASE("topology JSON: inline graph with duplex and one-way links, explicit ranks") {
  const auto doc = nlohmann::json::parse(R"({
    "name": "tiny",
    "nodes": [{"name": "g0", "kind": "gpu", "rank": 1}, {"name": "g1", "kind": "gpu", "rank": 0},
              {"name": "sw", "kind": "nvswitch"}],
    "links": [{"src": "g0", "dst": "sw", "bandwidth": "100GB/s", "latency": "1us", "kind": "nvlink"},
              {"src": "g1", "dst": "sw", "bandwidth": "800Gbps", "kind": "nvlink", "duplex": false},
              {"src": "sw", "dst": "g1", "bandwidth": "50GB/s", "kind": "nvlink", "duplex": false}]
  })");
  const Topology t = load_topology(JsonView(doc, "topology"), ".");
  CHECK(t.name == "tiny");
  CHECK(t.num_ranks() == 2);
  CHECK(t.node(t.gpu_of_rank(0)).name == "g1");
  REQUIRE(t.links().size() == 4);
  CHECK(t.link(2).bandwidth == Approx(100e9));
  CHECK(t.link(3).bandwidth == Approx(50e9));
  CHECK(t.link(0).latency == from_seconds(1e-6));
  // Round trip through the exporter.
  const Topology back = load_topology(JsonView(topology_to_json(t), "x"), ".");
  REQUIRE(back.links().size() == t.links().size());
  for (std::size_t i = 0; i < t.links().size(); ++i) {
    CHECK(back.link(i).bandwidth == Approx(t.link(i).bandwidth));
    CHECK(back.link(i).latency == t.link(i).latency);
  }
  CHECK(back.gpu_of_rank(0) == t.gpu_of_rank(0));
}

TEST_CASE("bundled dgx-h100: 8 GPUs at 450 GB/s per direction through NVSwitch") {
  const nlohmann::json name = "dgx-h100";
  const Topology t = load_topology(JsonView(name, "topology"), "/nonexistent");
  CHECK(t.num_ranks() == 8);
  Router router(t);
  for (int r = 1; r < 8; ++r) {
    const PathId p = router.route(t.gpu_of_rank(0), t.gpu_of_rank(r));
    CHECK(router.info(p).bottleneck == Approx(450e9));
  }
}

TEST_CASE("topology JSON errors name the path") {
  auto error_of = [](const char* text) {
    const auto doc = nlohmann::json::parse(text);
    try {
      load_topology(JsonView(doc, "topology"), ".");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of(R"({"preset": "switch", "gpus": 4, "bandwidth": "0GB/s"})") ==
        "topology.bandwidth: expected a positive bandwidth like \"450GB/s\" or \"400Gbps\", got "
        "\"0GB/s\"");
  CHECK(error_of(R"({"preset": "switch", "gpus": 4, "bandwith": "1GB/s"})") ==
        "topology.bandwith: unknown field; did you mean \"bandwidth\"?");
  CHECK(error_of(R"({"preset": "swich", "gpus": 4})")
            .starts_with("topology.preset: unknown value \"swich\"; did you mean \"switch\"?"));
  CHECK(
      error_of(
          R"({"nodes": [{"name": "a", "kind": "gpu"}], "links": [{"src": "a", "dst": "b", "bandwidth": "1GB/s", "kind": "nvlink"}]})") ==
      "topology.links[0].dst: no node named \"b\"");
  CHECK(
      error_of(
          R"({"nodes": [{"name": "a", "kind": "gpu"}, {"name": "a", "kind": "gpu"}], "links": []})") ==
      "topology.nodes[1].name: duplicate node name \"a\"");
  CHECK(error_of(R"({"preset": "switch", "gpus": 0, "bandwidth": "1GB/s"})") ==
        "topology.gpus: expected an integer in 1..1048576, got 0");
}

// A search goes only as far as the destination asked for and is kept for the next route
// from the same source: whatever the order of the questions, every route (its ECMP picks
// included) must be the one a search of the whole graph gives. In the explicit graph
// every GPU hangs on two switches, so a destination has two equal-cost links into it
// (a search stopped before its last level was done would miss one); the 3-tier
// cluster has routes across pods, several levels deep.
TEST_CASE("routes do not depend on how far their searches went") {
  ClusterParams p;
  p.nodes = 8;
  p.radix = 8;  // 4 servers a leaf: two leaves per rail, spines between them
  p.spines = 3;
  p.pod_nodes = 4;
  p.cores = 2;
  nlohmann::json dual = {{"nodes", nlohmann::json::array()}, {"links", nlohmann::json::array()}};
  for (const char* sw : {"a", "b"}) dual["nodes"].push_back({{"name", sw}, {"kind", "nvswitch"}});
  for (int g = 0; g < 12; ++g) {
    const std::string gpu = "g" + std::to_string(g);
    dual["nodes"].push_back({{"name", gpu}, {"kind", "gpu"}});
    for (const char* sw : {"a", "b"})
      dual["links"].push_back({{"src", gpu},
                               {"dst", sw},
                               {"kind", "nvlink"},
                               {"bandwidth", "100GB/s"},
                               {"latency", "100ns"}});
  }
  const Topology topologies[] = {make_cluster_topology(p),
                                 load_topology(JsonView(dual, "topology"), "/nonexistent")};
  auto links_of = [](Router& r, NodeId a, NodeId b) {
    const auto l = r.links(r.route(a, b));
    return std::vector<LinkId>(l.begin(), l.end());
  };
  for (const Topology& t : topologies) {
    const int K = t.num_ranks();
    std::vector<std::pair<NodeId, NodeId>> pairs;
    for (int s : {0, 1, 9, K - 1})
      for (int d = 0; d < K; ++d)
        if (d != s) pairs.emplace_back(t.gpu_of_rank(s), t.gpu_of_rank(d));
    for (RoutingPolicy policy : {RoutingPolicy::Ecmp, RoutingPolicy::ByFabric}) {
      Router near_first(t, policy), far_first(t, policy), whole(t, policy, Router::Search::Whole);
      for (auto [a, b] : pairs) links_of(near_first, a, b);
      for (auto it = pairs.rbegin(); it != pairs.rend(); ++it)
        links_of(far_first, it->first, it->second);
      std::set<LinkId> last_hops;  // of routes into g1: ECMP must use both switches
      for (auto [a, b] : pairs) {
        const std::vector<LinkId> want = links_of(whole, a, b);
        REQUIRE(links_of(near_first, a, b) == want);
        REQUIRE(links_of(far_first, a, b) == want);
        if (b == t.gpu_of_rank(1)) last_hops.insert(want.back());
      }
      if (policy == RoutingPolicy::Ecmp) CHECK(last_hops.size() >= 2);
    }
  }
}

TEST_CASE("collsim topo says where a GPU cannot reach another", "[topology]") {
  // g0..g3 on a switch; g4 linked to nothing; then g1's link to the switch one way only.
  const auto summary_of = [](const std::string& links) {
    return summarise_topology(
        load_topology(JsonView(nlohmann::json::parse(R"({"nodes": [{"name": "s", "kind": "switch"},
            {"name": "g0", "kind": "gpu"}, {"name": "g1", "kind": "gpu"},
            {"name": "g2", "kind": "gpu"}], "links": )" +
                                                     links + "}"),
                               "topology"),
                      "."));
  };
  const std::string duplex = R"({"src": "g0", "dst": "s", "kind": "nvlink", "bandwidth": "100GB/s"},
      {"src": "g2", "dst": "s", "kind": "nvlink", "bandwidth": "100GB/s"})";
  CHECK(summary_of("[" + duplex +
                   R"(, {"src": "g1", "dst": "s", "kind": "nvlink", "bandwidth": "100GB/s"}])")
            .unreachable.empty());
  CHECK(summary_of("[" + duplex +
                   R"(, {"src": "g1", "dst": "s", "kind": "nvlink", "bandwidth": "100GB/s",
      "duplex": false}])")
            .unreachable == "rank 0 (g0) cannot reach rank 1 (g1)");
  CHECK(summary_of("[" + duplex +
                   R"(, {"src": "s", "dst": "g1", "kind": "nvlink", "bandwidth": "100GB/s",
      "duplex": false}])")
            .unreachable == "rank 1 (g1) cannot reach rank 0 (g0)");
}

TEST_CASE("without host fields, the servers are the islands NVLink and PCIe join", "[topology]") {
  // Two NVSwitch islands of two GPUs, each GPU with a NIC on PCIe, the NICs on one IB switch.
  std::string nodes = R"([{"name": "ib", "kind": "switch"})", links = "[";
  for (int h = 0; h < 2; ++h) {
    nodes += fmt::format(R"(, {{"name": "nvs{0}", "kind": "nvswitch"}})", h);
    for (int g = 0; g < 2; ++g) {
      nodes += fmt::format(
          R"(, {{"name": "g{0}{1}", "kind": "gpu"}}, {{"name": "n{0}{1}", "kind": "nic"}})", h, g);
      links += fmt::format(
          R"({0}{{"src": "g{1}{2}", "dst": "nvs{1}", "kind": "nvlink", "bandwidth": "450GB/s"}},
          {{"src": "g{1}{2}", "dst": "n{1}{2}", "kind": "pcie", "bandwidth": "64GB/s"}},
          {{"src": "n{1}{2}", "dst": "ib", "kind": "ib", "bandwidth": "50GB/s"}})",
          links.size() > 1 ? ", " : "", h, g);
    }
  }
  const Topology t = load_topology(
      JsonView(nlohmann::json::parse(R"({"nodes": )" + nodes + "], \"links\": " + links + "]}"),
               "topology"),
      ".");
  CHECK(t.node(*t.find("g00")).host == 0);
  CHECK(t.node(*t.find("n01")).host == 0);
  CHECK(t.node(*t.find("nvs1")).host == 1);
  CHECK(t.node(*t.find("g11")).host == 1);
  CHECK(t.node(*t.find("ib")).host == -1);
  CHECK(summarise_topology(t).hosts == 2);
}
