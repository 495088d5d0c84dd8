// NCCL's tree: chains inside hosts, a double binary tree across them, pipelined.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/json_view.h"
#include "helpers.h"
#include "plan/plan.h"
#include "replay/verify.h"
#include "scenario/scenario.h"
#include "schedule/generators/pipeline.h"
#include "simulate/simulated_plan.h"

using namespace collsim;
using namespace collsim::test;

namespace {

std::vector<int> hosts_of(int hosts, int per_host) {
  std::vector<int> out;
  for (int h = 0; h < hosts; ++h)
    for (int g = 0; g < per_host; ++g) out.push_back(h);
  return out;
}

}  // namespace

TEST_CASE(
    "NCCL's double binary tree: its first tree as ncclGetBtree draws it, its second the "
    "mirror or shift, no member an inner node of both") {
  // ncclGetBtree's illustration for 14 ranks.
  const TreeShape t14 = nccl_double_tree(14, false);
  const std::vector<int> parent14{-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12};
  CHECK(t14.parent == parent14);
  // Mirrored for an even count: 11 plays 0 (the root), 7 plays 4.
  const TreeShape m12 = nccl_double_tree(12, true);
  CHECK(m12.parent[11] == -1);
  CHECK(m12.parent[3] == 11);  // 3 plays 8, 0's child
  CHECK(m12.parent[7] == 3);   // 7 plays 4, 8's child
  // Shifted by one for an odd count: 1 plays 0.
  const TreeShape s13 = nccl_double_tree(13, true);
  CHECK(s13.parent[1] == -1);
  CHECK(s13.parent[9] == 1);  // 9 plays 8
  for (int n = 1; n <= 70; ++n) {
    INFO(n << " members");
    int inner_in_both = 0;
    std::vector<std::vector<int>> children(2, std::vector<int>(n, 0));
    for (int second = 0; second < 2; ++second) {
      const TreeShape t = nccl_double_tree(n, second == 1);
      int roots = 0;
      for (int m = 0; m < n; ++m) {
        if (t.parent[m] < 0) {
          ++roots;
          continue;
        }
        ++children[second][t.parent[m]];
        int steps = 0;  // every member reaches the root
        for (int up = m; t.parent[up] >= 0 && steps <= n; up = t.parent[up]) ++steps;
        CHECK(steps < n);
      }
      CHECK(roots == 1);
      // At most two children, one in each slot.
      for (int m = 0; m < n; ++m) {
        CHECK(children[second][m] <= 2);
        int slots = 0;
        for (int c = 0; c < n; ++c)
          if (t.parent[c] == m) slots |= 1 << t.slot[c];
        CHECK(__builtin_popcount(slots) == children[second][m]);
      }
    }
    for (int m = 0; m < n; ++m) inner_in_both += children[0][m] > 0 && children[1][m] > 0;
    CHECK(inner_in_both <= (n % 2 == 0 ? 0 : 1));
  }
}

TEST_CASE("nccl_tree computes the all-reduce for hosts x GPUs layouts and segments") {
  const AlgorithmEntry& e = *find_algorithm(CollectiveOp::AllReduce, "nccl_tree");
  for (int hosts : {1, 2, 3, 5, 8})
    for (int per_host : {1, 2, 3, 8})
      for (int segments : {1, 3})
        for (int channels : {1, 2, 5})
          for (std::int64_t count : {std::int64_t{1}, std::int64_t{97}}) {
            AlgorithmOptions o;
            o.hosts = hosts_of(hosts, per_host);
            o.segments = segments;
            o.channels = channels;
            const Schedule s =
                e.generate(shape_of(CollectiveOp::AllReduce, hosts * per_host, count), o);
            INFO(hosts << " hosts x " << per_host << ", S=" << segments << ", C=" << channels
                       << ", count " << count);
            REQUIRE(check_schedule(s) == "");
            CHECK(verify_exact(s, 9).ok());
            if (hosts * per_host <= 16 && channels < 5) CHECK(verify_symbolic(s).ok());
          }
}

TEST_CASE("nccl_tree's channels put their chain heads on a rail each, so every NIC carries one") {
  // 3 hosts x 4 GPUs, 4 channels: channel c's first tree crosses hosts between the GPUs
  // of rail c, its second tree (chains run the other way) between those of rail c - 1.
  const int hosts = 3, per_host = 4;
  AlgorithmOptions o;
  o.hosts = hosts_of(hosts, per_host);
  o.channels = 4;
  const Schedule s = find_algorithm(CollectiveOp::AllReduce, "nccl_tree")
                         ->generate(shape_of(CollectiveOp::AllReduce, hosts * per_host, 4096), o);
  std::vector<int> crossings_by_rail(per_host, 0);
  for (const Op& op : s.ops) {
    if (op.src_rank / per_host == op.dst_rank / per_host) continue;
    const int c = op.channel / 2;
    const int rail = op.channel % 2 == 0 ? c : (c + per_host - 1) % per_host;
    CHECK(op.src_rank % per_host == rail);
    CHECK(op.dst_rank % per_host == rail);
    ++crossings_by_rail[rail];
  }
  for (int rail = 0; rail < per_host; ++rail) CHECK(crossings_by_rail[rail] == 2 * 2 * (hosts - 1));
}

TEST_CASE(
    "nccl_tree crosses hosts only between chain heads: the first GPU of each host in one "
    "tree and the last in the other") {
  const int hosts = 5, per_host = 4;
  AlgorithmOptions o;
  o.hosts = hosts_of(hosts, per_host);
  const Schedule s = find_algorithm(CollectiveOp::AllReduce, "nccl_tree")
                         ->generate(shape_of(CollectiveOp::AllReduce, hosts * per_host, 64), o);
  int crossing = 0;
  for (const Op& op : s.ops) {
    if (op.src_rank / per_host == op.dst_rank / per_host) continue;
    ++crossing;
    const int head = op.channel == 0 ? 0 : per_host - 1;  // a tree's chains start there
    CHECK(op.src_rank % per_host == head);
    CHECK(op.dst_rank % per_host == head);
  }
  // Each tree: (hosts - 1) edges across hosts, up once (reduce) and down once (broadcast).
  CHECK(crossing == 2 * 2 * (hosts - 1));
}

TEST_CASE("nccl_tree takes its hosts from the topology, or from \"hosts\"") {
  const auto plan_of = [](const std::string& collective) {
    return make_plan(parse_scenario(
        parse_json_text(R"({"topology": "cluster-8x8", "collectives": [)" + collective + "]}",
                        "test.json"),
        COLLSIM_SOURCE_DIR "/scenarios"));
  };
  const Plan p =
      plan_of(R"({"op": "all_reduce", "algorithm": "nccl_tree", "bytes": "16KiB", "segments": 4})");
  const auto& hosts = p.collectives[0].spec.options.hosts;
  REQUIRE(hosts.size() == 64);
  CHECK(hosts.front() != hosts.back());
  CHECK(verify_exact(*p.collectives[0].schedule, 1).ok());
  CHECK(error_of(R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "1GB/s"},
    "collectives": [{"op": "all_reduce", "algorithm": "nccl_tree", "bytes": 64, "hosts": [0, 1]}]})") ==
        "collectives[0].hosts: expected a host index for each of the 4 ranks, got [0,1]");
}
