#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/json_view.h"
#include "core/units.h"
#include "report/topology_drawing.h"
#include "report/traffic.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "topology/presets.h"
#include "topology/topology_json.h"

using namespace collsim;

namespace drawing_test {

Topology topology_of(const char* text) {
  const auto doc = nlohmann::json::parse(text);
  return load_topology(JsonView(doc, "topology"), ".");
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string svg_of(const Topology& t) {
  std::ostringstream out;
  write_topology_svg(out, t);
  return out.str();
}

}  // namespace drawing_test

using namespace drawing_test;

TEST_CASE("A few servers are drawn node by node, a cable a line", "[topo]") {
  const Topology t = topology_of(R"({"preset": "cluster", "nodes": 2})");
  const std::string svg = svg_of(t);
  CHECK(svg.starts_with("<?xml"));
  CHECK(svg.ends_with("</svg>\n"));
  CHECK_THAT(svg, Catch::Contains("<title>n1.gpu7 (gpu, rank 15)</title>"));
  CHECK(count_of(svg, "<line ") == t.links().size() / 2);  // every cable, both ways in one
}

TEST_CASE("A cluster's drawing groups servers by their switches and bundles their cables",
          "[topo]") {
  // 16 servers under one leaf per rail and one spine: one group of 16 servers, 8 leaves,
  // a line from the group to each leaf and from each leaf to the spine.
  const Topology t = topology_of(R"({"preset": "cluster", "nodes": 16})");
  const std::string svg = svg_of(t);
  CHECK(count_of(svg, "<line ") == 16);
  CHECK(count_of(svg, "<title>server ") == 16);  // a cell per server
  CHECK_THAT(svg, Catch::Contains("servers 0-15</text>"));
  // The group's line to rail 0's leaf is its 16 servers' NIC 0 cables.
  CHECK_THAT(svg, Catch::Contains("<title>servers 0-15 \u2014 leaf0.0: 16 cables, "));
  CHECK_THAT(svg, !Catch::Contains("<title>n0.gpu0"));  // no GPU drawn one by one
}

TEST_CASE("A tier too wide to draw switch by switch is grouped by its neighbours", "[topo]") {
  // cluster-512x8-3tier: 16 pods of 32 servers, each pod 8 rail leaves and 8 spines,
  // 16 cores over all spines.
  const std::string svg = svg_of(topology_of(R"("cluster-512x8-3tier")"));
  CHECK(count_of(svg, "8 \u00d7 leaf</text>") == 16);
  CHECK(count_of(svg, "8 \u00d7 spine</text>") == 16);
  CHECK(count_of(svg, "<title>core") == 16);  // each core its own box
  // pod - its leaves, leaves - its spines, every spine group - every core.
  CHECK(count_of(svg, "<line ") == 16 + 16 + 16 * 16);
  // 512 servers: past the 256 drawn as cells, each group is one box.
  CHECK(count_of(svg, "<title>server ") == 0);
  CHECK(svg.size() < 100'000);
}

TEST_CASE("Many server groups widen the drawing instead of overlapping", "[topo]") {
  // A pod per server: 128 groups, each needing a box of its own.
  const std::string svg =
      svg_of(topology_of(R"({"preset": "cluster", "nodes": 128, "pod_nodes": 1, "cores": 2})"));
  CHECK(count_of(svg, "servers ") + count_of(svg, "server ") >= 128);
  CHECK(count_of(svg, "width=\"-") == 0);
  const auto at = svg.find("<svg width=\"") + 12;
  CHECK(std::stoi(svg.substr(at)) > 128 * 12);  // at least 12 px a group, and the gaps
}

TEST_CASE("A one-way link is drawn with its capacity, as one way", "[topo]") {
  const std::string svg = svg_of(topology_of(
      R"({"preset": "ring", "gpus": 4, "bandwidth": "100GB/s", "bidirectional": false})"));
  CHECK_THAT(svg, Catch::Contains("<title>gpu0 \u2014 gpu1: 100.0 GB/s one way</title>"));
  const std::string duplex =
      svg_of(topology_of(R"({"preset": "ring", "gpus": 4, "bandwidth": "100GB/s"})"));
  CHECK_THAT(duplex, Catch::Contains("<title>gpu0 \u2014 gpu1: 100.0 GB/s each way</title>"));
}

TEST_CASE("A loaded cluster drawing says what each bundle of cables carried", "[topo][report]") {
  const auto doc = nlohmann::json::parse(R"({
    "topology": {"preset": "cluster", "nodes": 16}, "network": {"model": "ideal"},
    "collectives": [{"op": "all_reduce", "bytes": "64MiB", "algorithm": "ring"}]})");
  const Scenario s = parse_scenario(doc, ".");
  const ScenarioResult r = run_scenario(s);
  const TrafficReport traffic = analyse_traffic(s, r);
  std::ostringstream page;
  topology_figure(page, s.topology, traffic.links);
  const std::string html = page.str();
  // Rail 0's leaf: what its cables to the servers carried, both ways, summed.
  const NodeId leaf = *s.topology.find("leaf0.0");
  std::int64_t bytes = 0;
  double busiest = 0;
  for (LinkId l = 0; l < static_cast<LinkId>(s.topology.links().size()); ++l) {
    const Link& link = s.topology.link(l);
    if ((link.src == leaf && s.topology.node(link.dst).kind == NodeKind::Nic) ||
        (link.dst == leaf && s.topology.node(link.src).kind == NodeKind::Nic)) {
      bytes += traffic.links[l].bytes;
      busiest = std::max(busiest, traffic.links[l].utilisation);
    }
  }
  REQUIRE(bytes > 0);
  CHECK_THAT(html,
             Catch::Contains(fmt::format("servers 0-15 \u2014 leaf0.0: 16 cables, {}, {:.1f}% "
                                         "utilised</title>",
                                         format_bytes(bytes), busiest * 100)));
  CHECK_THAT(html, Catch::Contains("id=\"topology-legend\"") &&
                       Catch::Contains("linearGradient id=\"load\""));
}
