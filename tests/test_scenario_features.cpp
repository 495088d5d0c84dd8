// Scenario features beyond a fixed algorithm: auto choices, segments, MoE
// routing, hierarchical levels, parameter servers, overlapping collectives.
#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_view.h"
#include "helpers.h"
#include "replay/verify.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "topology/topology_json.h"
#include "workload/moe.h"

using namespace collsim;

namespace {

ScenarioResult run_text(const std::string& text) {
  return run_scenario(
      parse_scenario(parse_json_text(text, "test.json"), COLLSIM_SOURCE_DIR "/scenarios"));
}

}  // namespace

TEST_CASE("segments auto lands near sqrt((K-2) N / (alpha beta)) and beats S = 1 and S = 64") {
  const auto r = run_text(R"({"topology": {"preset": "switch", "gpus": 8, "bandwidth": "25GB/s"},
    "network": {"alpha": "5us"},
    "collectives": [{"op": "broadcast", "algorithm": "ring", "bytes": "64MB", "segments": "auto"}]})");
  REQUIRE(r.choices[0]);
  const int S = r.choices[0]->chosen.options.segments;
  const double analytic = std::sqrt(6.0 * 64e6 / (5e-6 * 25e9));  // 55.4
  CHECK(std::abs(S - analytic) <= 2);
  const double best = r.outcomes[0].time_s;
  CHECK(best <= 3.15e-3);
  // Segments differ by at most one element, so the closed form holds to that much.
  CHECK(best <= (8 - 2 + S) * (5e-6 + std::ceil(16e6 / S) * 4 / 25e9) + 1e-9);
  CHECK(best >= (8 - 2 + S) * (5e-6 + std::floor(16e6 / S) * 4 / 25e9) - 1e-9);
}

TEST_CASE("algorithm auto picks the fastest candidate and names the runner-up") {
  // Under the ideal model at 10 MB on 8 GPUs, ring (770 us) beats the binomial tree (2430 us).
  const auto r = run_text(R"({"topology": {"preset": "switch", "gpus": 8, "bandwidth": "25GB/s"},
    "network": {"alpha": "5us"},
    "collectives": [{"op": "all_reduce", "algorithm": "auto", "bytes": "10MB"},
                    {"op": "all_reduce", "algorithm": "ring", "bytes": "10MB"},
                    {"op": "all_reduce", "algorithm": "binomial_tree", "bytes": "10MB"}]})");
  REQUIRE(r.choices[0]);
  const auto& choice = *r.choices[0];
  REQUIRE(choice.runner_up);
  CHECK(choice.chosen.time_s <= choice.runner_up->time_s);
  CHECK(r.outcomes[0].time_s == Approx(choice.chosen.time_s));
  CHECK(r.outcomes[0].time_s <= r.outcomes[1].time_s);
  CHECK(r.outcomes[0].time_s <= r.outcomes[2].time_s);
  CHECK(r.resolved[0].algorithm != "auto");
  CHECK(choice.candidates_tried >= 5);
}

TEST_CASE("MoE routing: rows sum to tokens x top_k, skew moves tokens to the hot expert's rank") {
  MoeRouting uniform{1000, 8, 2, {}, {}};
  const auto u = moe_dispatch_tokens(uniform, 8);
  for (int s = 0; s < 8; ++s) {
    std::int64_t row = 0;
    for (int d = 0; d < 8; ++d) row += u[s * 8 + d];
    CHECK(row == 2000);
    CHECK(u[s * 8 + 3] == 250);
  }
  MoeRouting skewed{1000, 16, 1, std::vector<double>(16, 1.0), {}};
  skewed.expert_load[0] =
      30.0 / 15.0 * 2;  // expert 0 takes a quarter of all tokens, 2x its fair share pair
  const auto k = moe_dispatch_tokens(skewed, 8);
  std::int64_t row = 0;
  for (int d = 0; d < 8; ++d) row += k[d];
  CHECK(row == 1000);
  CHECK(k[0] > k[1]);  // experts 0 and 1 live on rank 0
  CHECK(transpose(k, 8)[1 * 8 + 0] == k[0 * 8 + 1]);
}

TEST_CASE(
    "MoE scenario: dispatch and combine are proven all-to-allv, skewed takes about twice as long") {
  const auto r = run_scenario(load_scenario(COLLSIM_SOURCE_DIR "/scenarios/moe-all-to-all.json"));
  REQUIRE(r.resolved.size() == 4);
  CHECK(r.resolved[0].name == "balanced.dispatch");
  CHECK(r.resolved[1].after == std::vector<int>{0});
  // The same routing, with 2-element tokens, proven on real buffers.
  const auto small =
      run_text(R"({"topology": {"preset": "switch", "gpus": 8, "bandwidth": "10GB/s"},
    "collectives": [{"name": "m", "op": "all_to_all", "routing": {"tokens_per_rank": 40, "bytes_per_token": 8,
                     "experts": 8, "top_k": 2, "expert_load": [0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]}}]})");
  for (const auto& shared : small.schedules) {
    const Schedule& s = *shared;
    CHECK(check_schedule(s) == "");
    CHECK(verify_exact(s, 7, 2).ok());
    CHECK(verify_symbolic(s).ok());
  }
  const double balanced = r.outcomes[0].time_s, skewed = r.outcomes[2].time_s;
  CHECK(skewed / balanced > 1.7);
  CHECK(skewed / balanced < 2.1);
}

TEST_CASE("MoE placement: contiguous expert blocks per rank, or expert_ranks", "[moe]") {
  // 12 experts on 4 ranks: rank r hosts experts 3r..3r+2, so it takes their summed load.
  MoeRouting blocks{1200, 12, 1, std::vector<double>(12, 0.0), {}};
  blocks.expert_load[2] = 0.5;  // rank 0
  blocks.expert_load[3] = 0.5;  // rank 1
  CHECK(moe_dispatch_tokens(blocks, 4) ==
        std::vector<std::int64_t>{600, 600, 0, 0, 600, 600, 0, 0, 600, 600, 0, 0, 600, 600, 0, 0});
  CHECK(expert_rank(blocks, 11, 4) == 3);
  // 6 experts on 4 ranks only with a placement: experts 0-2 on rank 3, 3-5 on rank 1.
  MoeRouting placed{600, 6, 1, {}, {3, 3, 3, 1, 1, 1}};
  CHECK(moe_dispatch_tokens(placed, 4)[0 * 4 + 3] == 300);
  CHECK(moe_dispatch_tokens(placed, 4)[2 * 4 + 1] == 300);
  CHECK(moe_dispatch_tokens(placed, 4)[2 * 4 + 0] == 0);
  placed.expert_ranks.clear();
  CHECK_THROWS_AS(moe_dispatch_tokens(placed, 4), std::invalid_argument);

  auto error_of = [](const std::string& routing) {
    try {
      run_text(R"({"topology": {"preset": "switch", "gpus": 64, "bandwidth": "10GB/s"},
        "collectives": [{"op": "all_to_all", "routing": {"tokens_per_rank": 96, "bytes_per_token": 4, )" +
               routing + "}}]}");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of(R"("experts": 96)") ==
        "collectives[0].routing.experts: 96 experts do not split evenly over 64 ranks; give "
        "\"expert_ranks\": the rank of each expert (a position in the collective's ranks)");
  std::string ranks = "0";
  for (int e = 1; e < 96; ++e) ranks += fmt::format(", {}", e % 64);
  CHECK(error_of(R"("experts": 96, "expert_ranks": [)" + ranks + "]") == "no error");
  CHECK(error_of(R"("experts": 96, "expert_ranks": [0, 1])") ==
        "collectives[0].routing.expert_ranks: expected 96 ranks, one per expert, got [0,1]");
  CHECK(error_of(R"("experts": 2, "expert_ranks": [0, 64])") ==
        "collectives[0].routing.expert_ranks[1]: expected an integer in 0..63, got 64");
  CHECK(error_of(R"("experts": 128)") == "no error");
  // Shares that do not sum to 1 are refused, not rescaled; each is a share, 0 to 1.
  std::string doubled = "0.03125";
  for (int e = 1; e < 64; ++e) doubled += ", 0.03125";
  CHECK(error_of(R"("experts": 64, "expert_load": [)" + doubled + "]") ==
        "collectives[0].routing.expert_load: the shares sum to 2, not 1: each is the fraction "
        "of routed tokens its expert receives (divide each by 2)");
  CHECK(error_of(R"("experts": 2, "expert_load": [2, -1])") ==
        "collectives[0].routing.expert_load[0]: expected a share from 0 to 1, got 2");
  CHECK(error_of(R"("matrix": [], "experts": 4)") ==  // tokens_per_rank comes first
        "collectives[0].routing.tokens_per_rank: \"matrix\" gives the token counts: leave it out");
}

TEST_CASE("hierarchical takes its levels from the topology's hosts, or from \"levels\"") {
  const std::string topology = R"({"nodes": [
      {"name": "g0", "kind": "gpu", "host": 0}, {"name": "g1", "kind": "gpu", "host": 0},
      {"name": "g2", "kind": "gpu", "host": 1}, {"name": "g3", "kind": "gpu", "host": 1},
      {"name": "sw", "kind": "switch"}],
    "links": [{"src": "g0", "dst": "sw", "bandwidth": "10GB/s", "kind": "ib"}, {"src": "g1", "dst": "sw", "bandwidth": "10GB/s", "kind": "ib"},
              {"src": "g2", "dst": "sw", "bandwidth": "10GB/s", "kind": "ib"}, {"src": "g3", "dst": "sw", "bandwidth": "10GB/s", "kind": "ib"}]})";
  const auto r = run_text(
      R"({"topology": )" + topology +
      R"(, "collectives": [{"op": "all_reduce", "algorithm": "hierarchical", "bytes": 4000},
      {"op": "all_reduce", "algorithm": "hierarchical", "bytes": 4000, "levels": [{"size": 4, "algorithm": "halving_doubling"}]}]})");
  auto sizes = [](const CollectiveSpec& c) {
    std::vector<int> out;
    for (const auto& l : c.options.levels) out.push_back(l.size);
    return out;
  };
  CHECK(sizes(r.resolved[0]) == std::vector<int>{2, 2});
  CHECK(sizes(r.resolved[1]) == std::vector<int>{4});
  CHECK(r.resolved[1].options.levels[0].algorithm == "halving_doubling");
  for (const auto& s : r.schedules) CHECK(verify_exact(*s, 1).ok());
  try {
    run_text(
        R"({"topology": )" + topology +
        R"(, "collectives": [{"op": "all_reduce", "algorithm": "hierarchical", "bytes": 4000, "ranks": [0, 2, 1, 3]}]})");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(
        e.what(),
        Catch::Contains(
            "collectives[0].ranks: hierarchical needs each host's ranks next to each other"));
  }
}

TEST_CASE("scenario errors for the algorithm options") {
  auto error_of = [](const std::string& collective) {
    try {
      run_text(
          R"({"topology": {"preset": "switch", "gpus": 6, "bandwidth": "10GB/s"}, "collectives": [)" +
          collective + "]}");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(
      error_of(
          R"({"op": "all_reduce", "algorithm": "hierarchical", "bytes": 64, "levels": [{"size": 4}, {"size": 2}]})") ==
      "collectives[0].levels: level sizes multiply to 8, but the collective has 6 ranks");
  CHECK(error_of(R"({"op": "all_reduce", "algorithm": "ring", "bytes": 64, "servers": [1]})") ==
        "collectives[0].servers: the ring algorithm takes no \"servers\"; parameter_server does");
  CHECK(
      error_of(
          R"({"op": "all_reduce", "algorithm": "hierarchical", "bytes": 64, "levels": [{"size": 3, "algorithm": "binomial_tree"}, {"size": 2}]})") ==
      "collectives[0].levels[0].algorithm: inner levels reduce-scatter and all-gather within "
      "groups; level 0 asks for \"binomial_tree\", which cannot; one of ring, pat can");
  CHECK(
      error_of(
          R"({"op": "all_reduce", "algorithm": "binomial_tree", "bytes": 64, "segments": "many"})") ==
      "collectives[0].segments: expected an integer in 1..1048576, got \"many\"");
  CHECK(
      error_of(
          R"({"op": "all_reduce", "bytes": 64, "routing": {"tokens_per_rank": 1, "bytes_per_token": 4, "experts": 2}})") ==
      "collectives[0].routing: only all_to_all collectives take a routing");
  // Beside a routing, "bytes" was ignored: the routing gives the sizes.
  CHECK_THAT(
      error_of(
          R"({"op": "all_to_all", "bytes": "1KiB", "routing": {"tokens_per_rank": 1, "bytes_per_token": 4, "experts": 2}})"),
      Catch::StartsWith("collectives[0].bytes: a routed all-to-all's sizes come from its routing"));
  CHECK(
      error_of(
          R"({"op": "all_to_all", "routing": {"tokens_per_rank": 1, "bytes_per_token": 4, "experts": 2, "expert_load": [1]}})") ==
      "collectives[0].routing.expert_load: expected one share per expert (2), got [1]");
  CHECK(
      error_of(
          R"({"op": "all_reduce", "algorithm": "parameter_server", "bytes": 64, "servers": [1, 5]})") ==
      "no error");
}

TEST_CASE("independent collectives overlap, chained ones follow each other") {
  const auto r = run_text(R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "10GB/s"},
    "collectives": [{"name": "a", "op": "all_reduce", "bytes": "1MB"},
                    {"name": "b", "op": "all_gather", "bytes": "1MB"},
                    {"name": "c", "op": "all_reduce", "bytes": "1MB", "after": []},
                    {"name": "d", "op": "all_reduce", "bytes": "1MB", "after": ["a", "c"]}]})");
  CHECK(r.outcomes[0].start_s == 0);
  CHECK(r.outcomes[1].start_s == Approx(r.outcomes[0].end_s));
  CHECK(r.outcomes[2].start_s == 0);
  CHECK(r.outcomes[3].start_s == Approx(std::max(r.outcomes[0].end_s, r.outcomes[2].end_s)));
}

TEST_CASE("every bundled scenario runs and every bundled topology loads") {
  int scenarios = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(COLLSIM_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() != ".json") continue;
    // Under the sanitizers its 'auto' over segments 'auto' on 64 MB takes half a minute;
    // "segments auto lands near ..." above sanitizes the same search.
    if (collsim::test::kSanitized && e.path().filename() == "pipelined-broadcast.json") continue;
    INFO(e.path().filename().string());
    if (collsim::test::needs_protobuf(read_json_file(e.path().string(), e.path().string())))
      continue;  // test_chakra.cpp reports the skip
    const Scenario s = load_scenario(e.path());
    const ScenarioResult r = run_scenario(s);
    REQUIRE(r.outcomes.size() == r.resolved.size());
    for (std::size_t i = 0; i < r.outcomes.size(); ++i)
      if (r.resolved[i].shape.ranks > 1) CHECK(r.outcomes[i].time_s > 0);
    ++scenarios;
  }
  CHECK(scenarios > 10);  // the folder was found
  const auto names = bundled_topology_names();
  CHECK(names.size() >= 8);
  for (const auto& name : names) {
    INFO(name);
    const nlohmann::json spec = name;
    CHECK(load_topology(JsonView(spec, "topology"), ".").num_ranks() > 0);
  }
}
