#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_view.h"
#include "topology/presets.h"
#include "topology/routing.h"
#include "topology/topology_json.h"

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
