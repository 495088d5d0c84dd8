// NCCL's own cost model and pick (sim/nccl): the channel graph its search finds,
// its published latency and bandwidth figures, the protocol crossovers they imply,
// and the simulated pick against the published 8x H100 nccl-tests logs.
#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "core/json_view.h"
#include "core/units.h"
#include "helpers.h"
#include "nccl/nccl_model.h"
#include "nccl/protocol.h"
#include "network/cost_model.h"
#include "plan/plan_report.h"
#include "schedule/algorithms.h"
#include "simulate/run_scenario.h"
#include "simulate/simulated_plan.h"
#include "topology/presets.h"
#include "topology/routing.h"
#include "topology/topology_json.h"

using namespace collsim;

namespace nccl_model_test {

NcclTopo dgx_h100(bool nvls) {
  const Topology t = make_dgx_topology(ServerParams{});
  std::vector<int> ranks(8);
  std::iota(ranks.begin(), ranks.end(), 0);
  NcclTopo n = nccl_topo(t, ranks);
  n.nvls = nvls;
  return n;
}

const NcclOption& option(const NcclPick& p, NcclAlgo a, Protocol proto) {
  for (const auto& o : p.options)
    if (o.algorithm == a && o.protocol == proto) return o;
  throw std::logic_error("no such option");
}

// (size, out-of-place time in µs) of an nccl-tests log, as printed.
std::vector<std::pair<std::int64_t, double>> log_rows(const std::string& file) {
  std::ifstream in(test::data_file(std::filesystem::path("nccl-tests") / file));
  std::vector<std::pair<std::int64_t, double>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::int64_t size = 0, count = 0;
    std::string type, redop, root;
    double time = 0;
    if (f >> size >> count >> type >> redop >> root >> time) rows.emplace_back(size, time);
  }
  return rows;
}

// MAPE of "algorithm": "nccl" (with `extra` fields) against a log, over [lo, hi] bytes.
double nccl_mape(const std::string& file, const nlohmann::json& extra, std::int64_t lo,
                 std::int64_t hi) {
  nlohmann::json collectives = nlohmann::json::array();
  std::vector<double> measured;
  for (const auto& [size, t] : log_rows(file)) {
    if (size < lo || size > hi) continue;
    nlohmann::json c = {{"name", fmt::format("c{}", size)},
                        {"op", "all_reduce"},
                        {"algorithm", "nccl"},
                        {"bytes", size}};
    if (!extra.is_null()) c.update(extra);
    collectives.push_back(c);
    measured.push_back(t * 1e-6);
  }
  REQUIRE(measured.size() >= 4);
  const nlohmann::json doc = {
      {"topology", "dgx-h100"}, {"network", {{"model", "flow"}}}, {"collectives", collectives}};
  const ScenarioResult r = run_scenario(parse_scenario(doc, "."));
  double sum = 0;
  for (std::size_t i = 0; i < measured.size(); ++i)
    sum += std::fabs(r.outcomes[i].time_s - measured[i]) / measured[i];
  return 100 * sum / static_cast<double>(measured.size());
}

}  // namespace nccl_model_test

using namespace nccl_model_test;

TEST_CASE("NCCL's search on a DGX H100 finds 12 ring channels of 30 GB/s and NVLS at 40",
          "[nccl]") {
  const NcclTopo t = dgx_h100(false);
  CHECK(t.nodes == 1);
  CHECK(t.per_node == 8);
  CHECK(t.intra_GBps == Approx(18 * 20.6));  // 18 links at NCCL's usable 20.6 GB/s
  CHECK(t.channels == 12);
  CHECK(t.bw_intra == Approx(30));
  CHECK(t.nvls_channels == 8);
  CHECK(t.nvls_bw == Approx(40));
}

TEST_CASE("NCCL's search on a DGX A100 tries the pre-sm90 speeds and duplicates its channels",
          "[nccl]") {
  // docs/nccl.md §3: 12 links x 20 GB/s = 240; the pre-sm90 list's 40 fits 6 rings (the
  // sm90 list's 60 would fit 4); sm80 duplicates at 40 GB/s even with 6 channels, where
  // sm90 would not (bwIntra < 50 with more than 4): 12 x 20, 24 channels at run time.
  const Topology t = make_dgx_topology(ServerParams{.nvlink = 300e9});
  const std::vector<int> ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  const NcclTopo a100 = nccl_topo(t, ranks);
  CHECK(a100.arch == nccl_published::Arch::Ampere);
  CHECK(a100.intra_GBps == Approx(240));
  CHECK(a100.channels == 12);
  CHECK(a100.bw_intra == Approx(20));
  CHECK(nccl_pick(a100, CollectiveOp::AllReduce, 1 << 30).channels == 24);
  // The bundled validate scenarios' 10 GB/s switch (8 usable): two channels of the older
  // list's 4 reach it, which the sm90 list's 6 and 3 do not.
  const NcclTopo slow = nccl_topo(make_switch_topology(2, 10e9, 0), {0, 1});
  CHECK(slow.intra_GBps == Approx(8));
  CHECK(slow.channels * slow.bw_intra == Approx(8));
}

TEST_CASE("NCCL's model gives its published latencies and bandwidths on 8 H100", "[nccl]") {
  const NcclPick p = nccl_pick(dgx_h100(true), CollectiveOp::AllReduce, 1 << 30);
  // docs/nccl.md §1.5 and §8.2: base + 14 steps x hop latency; busBw x 8/14.
  CHECK(option(p, NcclAlgo::Ring, Protocol::LL).latency_us == Approx(15.0));
  CHECK(option(p, NcclAlgo::Ring, Protocol::LL128).latency_us == Approx(40.6));
  CHECK(option(p, NcclAlgo::Ring, Protocol::Simple).latency_us == Approx(56.0));
  CHECK(option(p, NcclAlgo::Ring, Protocol::Simple).algbw_GBps == Approx(360.0 * 8 / 14));
  CHECK(option(p, NcclAlgo::Ring, Protocol::LL).algbw_GBps == Approx(141.0 * 8 / 14));
  CHECK(option(p, NcclAlgo::Nvls, Protocol::Simple).latency_us == Approx(25.0));
  CHECK(option(p, NcclAlgo::Nvls, Protocol::Simple).algbw_GBps ==
        Approx(40 * 0.85 * 7 / 8 * 2 * 8 * 8 / 14));
  CHECK(p.chosen.algorithm == NcclAlgo::Nvls);
}

TEST_CASE("NCCL's protocol crossovers on 8 H100 fall where its model puts them", "[nccl]") {
  // Without NVLS: LL to ~3.6 MB, LL128 to ~36 MB, then Simple (docs/nccl.md §8.3).
  const NcclTopo off = dgx_h100(false);
  const auto pick = [](const NcclTopo& t, std::int64_t bytes) {
    const NcclPick p = nccl_pick(t, CollectiveOp::AllReduce, bytes);
    return std::pair{p.chosen.algorithm, p.chosen.protocol};
  };
  CHECK(pick(off, 1 << 20) == std::pair{NcclAlgo::Ring, Protocol::LL});
  CHECK(pick(off, 3'000'000) == std::pair{NcclAlgo::Ring, Protocol::LL});
  CHECK(pick(off, 4'500'000) == std::pair{NcclAlgo::Ring, Protocol::LL128});
  CHECK(pick(off, 30'000'000) == std::pair{NcclAlgo::Ring, Protocol::LL128});
  CHECK(pick(off, 45'000'000) == std::pair{NcclAlgo::Ring, Protocol::Simple});
  // With NVLS: LL to ~1.14 MB, then NVLS at every size.
  const NcclTopo on = dgx_h100(true);
  CHECK(pick(on, 1'000'000).second == Protocol::LL);
  CHECK(pick(on, 1'300'000).first == NcclAlgo::Nvls);
  CHECK(pick(on, std::int64_t{8} << 30).first == NcclAlgo::Nvls);
  // Channels shrink for small sizes: 64 KiB of Ring/LL runs on 2 of 24.
  CHECK(nccl_pick(off, CollectiveOp::AllReduce, 64 << 10).channels == 2);
  CHECK(nccl_pick(off, CollectiveOp::AllReduce, 1 << 30).channels == 24);
}

TEST_CASE("each algorithm pays the NCCL latencies of the family its entry declares", "[nccl]") {
  using collsim::CollectiveOp;
  using collsim::nccl_family;
  using collsim::NcclAlgo;
  CHECK(nccl_family(CollectiveOp::AllReduce, "ring") == NcclAlgo::Ring);
  CHECK(nccl_family(CollectiveOp::AllReduce, "double_binary_tree") == NcclAlgo::Tree);
  CHECK(nccl_family(CollectiveOp::AllReduce, "nccl_tree") == NcclAlgo::Tree);
  CHECK(nccl_family(CollectiveOp::Broadcast, "ring") == NcclAlgo::Ring);  // the chain
  CHECK(nccl_family(CollectiveOp::Broadcast, "binomial_tree") == NcclAlgo::Tree);
  CHECK(nccl_family(CollectiveOp::AllReduce, "nvls") == NcclAlgo::Nvls);
  CHECK(nccl_family(CollectiveOp::AllReduce, "nvls_tree") == NcclAlgo::NvlsTree);
  CHECK(nccl_family(CollectiveOp::AllGather, "pat") == NcclAlgo::Pat);
  CHECK(nccl_family(CollectiveOp::AllReduce, "collnet_direct") == NcclAlgo::CollNetDirect);
  CHECK(nccl_family(CollectiveOp::AllReduce, "collnet_chain") == NcclAlgo::CollNetChain);
  CHECK(nccl_family(CollectiveOp::AllReduce, "hierarchical") == NcclAlgo::Ring);
  CHECK(nccl_family(CollectiveOp::AllReduce, "no_such_algorithm") == NcclAlgo::Ring);
  // Declared, not read from the name: only switch-op entries are NVLS or CollNet ones.
  for (const auto& e : collsim::algorithm_catalogue()) {
    INFO(e.algorithm);
    const bool in_switch = e.nccl_family == NcclAlgo::Nvls || e.nccl_family == NcclAlgo::NvlsTree ||
                           e.nccl_family == NcclAlgo::CollNetDirect ||
                           e.nccl_family == NcclAlgo::CollNetChain;
    CHECK(in_switch == e.switch_ops);
  }
}

TEST_CASE("NCCL's filter and the collectives it has no algorithm for", "[nccl]") {
  const NcclTopo t = dgx_h100(true);
  const NcclPick ring =
      nccl_pick(t, CollectiveOp::AllReduce, 1 << 30, {{NcclAlgo::Ring}, {Protocol::Simple}});
  CHECK(ring.options.size() == 1);
  CHECK(describe(ring) == "ring/Simple/24ch");
  CHECK_THROWS_AS(nccl_pick(t, CollectiveOp::AllReduce, 1 << 20, {{NcclAlgo::Pat}, {}}),
                  std::invalid_argument);
  CHECK_FALSE(nccl_has_algorithms(CollectiveOp::AllToAll));
  // Tree only all-reduces; PAT needs one GPU per node.
  const NcclPick ag = nccl_pick(t, CollectiveOp::AllGather, 1 << 20);
  for (const auto& o : ag.options) {
    CHECK(o.algorithm != NcclAlgo::Tree);
    CHECK(o.algorithm != NcclAlgo::Pat);
  }
}

TEST_CASE("NCCL stripes a point-to-point send over the channels its size gets", "[nccl]") {
  // docs/nccl.md §12. 8 x H100: 24 channels at run time (32 open to sends), 36 for a pair
  // of GPUs (two per NVLink): 32 a peer at most, 4 while each of 8 ranks sends at once;
  // a part of 64 KiB to 16 MiB (NCCL_P2P_NVL_CHUNKSIZE / 8 to x 32).
  const ChannelStripe one = nccl_p2p_stripe(dgx_h100(true));
  CHECK(one.channel_rate(LinkKind::NvSwitch) == Approx(20.6e9));  // one NVLink's rate
  CHECK(one.channel_rate(LinkKind::Ib) == Approx(14e9));          // NCCL's own, over the network
  CHECK(one.max_channels == 32);
  CHECK(one.min_channels == 4);
  const std::vector<std::pair<std::int64_t, int>> expected = {
      {1, 1},          {64 << 10, 1},   {(64 << 10) + 1, 2}, {1 << 20, 4},
      {32 << 20, 4},   {64 << 20, 4},   {(64 << 20) + 1, 8}, {128 << 20, 8},
      {256 << 20, 16}, {512 << 20, 32}, {1LL << 34, 32}};
  for (const auto& [bytes, channels] : expected) {
    INFO(bytes << " B");
    CHECK(one.channels(bytes) == channels);
  }
  // Across hosts, a network peer gets 2 channels (NCCL_NCHANNELS_PER_NET_PEER's default),
  // one where every rank's two would crowd the 16 channels past four sends each (80
  // ranks); parts of 64 to 128 KiB (NCCL_P2P_NET_CHUNKSIZE / 2 to x 1).
  const auto cluster_stripe = [](int nodes) {
    ClusterParams p;
    p.nodes = nodes;
    const Topology t = make_cluster_topology(p);
    std::vector<int> ranks(static_cast<std::size_t>(t.num_ranks()));
    std::iota(ranks.begin(), ranks.end(), 0);
    return nccl_p2p_stripe(nccl_topo(t, ranks));
  };
  const ChannelStripe two = cluster_stripe(2);
  CHECK(two.max_channels == 2);
  CHECK(two.min_channels == 1);
  CHECK(two.channels(64 << 10) == 1);
  CHECK(two.channels((128 << 10) + 1) == 2);
  CHECK(two.channels(1LL << 30) == 2);
  CHECK(cluster_stripe(10).channels(1LL << 30) == 1);

  // A send ends with its last chunk copied out of the receiver's buffer, at the channel's
  // rate: the communicator's chunk (512 KiB on one all-NVLink node, 128 KiB for every send,
  // NVLink ones too, once it spans hosts), or the whole part where it is smaller; over the
  // network a quarter chunk for parts under one, a half under eight.
  const auto us = [](Time t) { return to_seconds(t) * 1e6; };
  CHECK(us(one.fill(32 << 20, LinkKind::NvSwitch)) == Approx((512 << 10) / 20.6e3));
  CHECK(us(one.fill(64 << 10, LinkKind::NvSwitch)) == Approx((64 << 10) / 20.6e3));
  CHECK(one.fill(0, LinkKind::NvSwitch) == 0);
  CHECK(us(two.fill(1 << 30, LinkKind::NvSwitch)) == Approx((128 << 10) / 20.6e3));
  CHECK(us(two.fill(1 << 30, LinkKind::Ib)) == Approx((128 << 10) / 14e3));
  CHECK(us(two.fill(512 << 10, LinkKind::Ib)) == Approx((64 << 10) / 14e3));  // 2 x 256 KiB
  CHECK(us(two.fill(64 << 10, LinkKind::Ib)) == Approx((32 << 10) / 14e3));   // 1 x 64 KiB
  {  // A transfer's cost takes the fill of the kind that sets its channel's rate
    ClusterParams p;
    p.nodes = 2;
    const Topology t = make_cluster_topology(p);
    Router router(t);
    CostModel model;
    model.stripe = two;
    const auto latency_us = [&](int from, int to) {
      const PathId path = router.route(t.gpu_of_rank(from), t.gpu_of_rank(to));
      return us(transfer_cost(model, t, router.links(path), 1 << 30, nullptr).latency);
    };
    CHECK(latency_us(0, 8) == Approx((128 << 10) / 14e3));    // across hosts: the network's
    CHECK(latency_us(0, 1) == Approx((128 << 10) / 20.6e3));  // inside a host: a channel's
  }

  // Simulated: send/recv on a DGX H100 moves 4 channels' worth (82.4 GB/s) up to 64 MiB, then
  // copies the last 512 KiB chunk out, and twice the channels for twice the bytes takes the
  // same time until NVLink is full.
  const auto seconds = [&one](const std::string& bytes) {
    const nlohmann::json doc = {
        {"topology", "dgx-h100"},
        {"collectives",
         {{{"name", "p2p"}, {"op", "send_recv"}, {"algorithm", "nccl"}, {"bytes", bytes}}}}};
    const ScenarioResult r = run_scenario(parse_scenario(doc, "."));
    CHECK(r.labels[0] ==
          "nccl: p2p/Simple/" + std::to_string(one.channels(*parse_size(bytes))) + "ch");
    return r.outcomes[0].time_s;
  };
  CHECK(seconds("32MiB") == Approx((32 << 20) / 82.4e9 + (512 << 10) / 20.6e9).epsilon(0.03));
  // 1 and 2 MiB on 4 channels: parts of 256 and 512 KiB, each copied out whole at the end.
  CHECK(seconds("2MiB") - seconds("1MiB") ==
        Approx((1 << 20) / 82.4e9 + (256 << 10) / 20.6e9).epsilon(0.02));
  CHECK(seconds("128MiB") == Approx(seconds("64MiB")).epsilon(0.01));
  // 1 GiB on 32 channels (659 GB/s) is NVLink's to limit: 18 x 20.6 GB/s at most.
  CHECK(seconds("1GiB") > (1 << 30) / (18 * 20.6e9));
  {  // `collsim plan` says how a send is striped; an all-to-all's peer gets 1/K of it
    const Scenario s = parse_scenario(parse_json_text(R"({"topology": "dgx-h100", "collectives": [
          {"name": "p2p", "op": "send_recv", "algorithm": "nccl", "bytes": "32MiB"},
          {"name": "a2a", "op": "all_to_all", "algorithm": "nccl", "bytes": "1MiB"}]})",
                                                      "t.json"),
                                      ".");
    const Plan plan = make_plan(s);
    CHECK_THAT(plan_table(s, plan),
               Catch::Contains("p2p: NCCL's point-to-point sends: 33554432 bytes to each peer on "
                               "4 channels of 20.60 GB/s, 1 to 32 channels by size; each ends with "
                               "its last chunk (at most 512 KiB) copied out of the receiver's "
                               "buffer: 25.45 us"));
    const nlohmann::json a2a = plan_json(s, plan)["collectives"][1]["nccl_p2p"];
    CHECK(a2a["peer_bytes"] == 131072);
    CHECK(a2a["channels"] == 2);
    CHECK(a2a["fill_us"] == Approx((64 << 10) / 20.6e3));  // a part of 64 KiB, under a chunk
    // Across hosts it gives the network's rate too.
    const Scenario hosts = parse_scenario(
        parse_json_text(R"({"topology": {"preset": "cluster", "nodes": 2}, "collectives": [
          {"name": "p2p", "op": "send_recv", "algorithm": "nccl", "bytes": "64MiB"}]})",
                        "t.json"),
        ".");
    CHECK_THAT(plan_table(hosts, make_plan(hosts)),
               Catch::Contains("on 2 channels of 20.60 GB/s (14.00 over the network), 1 to 2 "
                               "channels by size"));
  }
  // A scatter's root sends to every rank at once, as NCCL's grouped sends do, not down a
  // tree whose hops would each carry several ranks' shares at one send's ceiling.
  for (const char* op : {"scatter", "gather", "all_to_all", "send_recv"}) {
    const nlohmann::json doc = {
        {"topology", "dgx-h100"},
        {"collectives", {{{"name", "x"}, {"op", op}, {"algorithm", "nccl"}, {"bytes", "8MiB"}}}}};
    const Plan plan = make_plan(parse_scenario(doc, "."));
    INFO(op);
    CHECK(plan.collectives[0].spec.algorithm == "direct");
  }
}

TEST_CASE("the nccl pick simulated on dgx-h100 meets the forced-ring log", "[nccl]") {
  // The issue's targets: within 10% of the log's busbw at 1 GB and above, MAPE <= 25%
  // from 1 MB to 8 GB (the shipped defaults, no calibration).
  CHECK(nccl_mape("h100x8_all_reduce_ring.txt", {{"nccl_algo", "ring"}}, 1'000'000,
                  8'600'000'000) <= 25);
  CHECK(nccl_mape("h100x8_all_reduce_ring.txt", {{"nccl_algo", "ring"}}, 1'000'000'000,
                  8'600'000'000) <= 10);
}

TEST_CASE("the nccl pick simulated on dgx-h100 meets the default log with NVLS", "[nccl]") {
  CHECK(nccl_mape("h100x8_all_reduce_default.txt", {}, 1'000'000, 8'600'000'000) <= 25);
  CHECK(nccl_mape("h100x8_all_reduce_default.txt", {}, 1'000'000'000, 8'600'000'000) <= 10);
}

TEST_CASE("protocols change what a collective costs, and nccl labels its pick", "[nccl]") {
  const auto run = [](const std::string& fields) {
    const nlohmann::json doc = nlohmann::json::parse(
        R"({"topology": "dgx-h100", "network": {"model": "ideal", "alpha": "5us"},
            "collectives": [{"name": "x", "op": "all_reduce", "bytes": "64MiB", )" +
        fields + "}]}");
    return run_scenario(parse_scenario(doc, "."));
  };
  const auto t = [&](const std::string& f) { return run(f).outcomes[0].time_s; };
  // Plain ring: 14 steps of alpha + 8 MiB / 450 GB/s.
  const double chunk = (64 << 20) / 8.0;
  CHECK(t(R"("algorithm": "ring")") == Approx(14 * (5e-6 + chunk / 450e9)).epsilon(1e-6));
  // Simple: NCCL's 8.4 µs once and 3.4 µs per step instead of alpha, NVLink at 20.6/25.
  CHECK(t(R"("algorithm": "ring", "protocol": "Simple")") ==
        Approx(8.4e-6 + 14 * (3.4e-6 + chunk / (450e9 * 20.6 / 25))).epsilon(1e-6));
  // LL: half the payload per line.
  CHECK(t(R"("algorithm": "ring", "protocol": "LL")") ==
        Approx(6.6e-6 + 14 * (0.6e-6 + chunk / (450e9 * 20.6 / 25 * 0.5))).epsilon(1e-6));
  const ScenarioResult a = run(R"("algorithm": "ring", "protocol": "auto")");
  CHECK(a.labels[0] == "ring Simple");
  const ScenarioResult n = run(R"("algorithm": "nccl", "nccl_algo": "ring")");
  CHECK(n.labels[0] == "nccl: ring/Simple/24ch");  // 64 MiB: past LL128's ~36 MB
}

TEST_CASE("protocol and nccl fields are refused where they do not belong", "[nccl]") {
  const auto error = [](const std::string& fields) {
    return test::error_of(R"({"topology": "dgx-h100", "collectives": [{"op": "all_reduce",
        "bytes": "1MiB", )" +
                          fields + "}]}");
  };
  CHECK_THAT(error(R"("algorithm": "nccl", "protocol": "LL")"),
             Catch::Contains("collectives[0].protocol") && Catch::Contains("nccl_proto"));
  CHECK_THAT(error(R"("algorithm": "ring", "nccl_algo": "ring")"),
             Catch::Contains("collectives[0].nccl_algo"));
  CHECK_THAT(error(R"("algorithm": "nccl", "nccl_algo": "rings")"),
             Catch::Contains("collectives[0].nccl_algo") && Catch::Contains("ring, tree"));
  CHECK_THAT(error(R"("algorithm": "nccl", "nccl_proto": "^ll,ll128,simple")"),
             Catch::Contains("excludes everything"));
  CHECK_THAT(error(R"("algorithm": "ring", "protocol": "ll")"),
             Catch::Contains("collectives[0].protocol"));
  CHECK(error(R"("algorithm": "nccl", "nccl_proto": "^LL128")") == "no error");
  CHECK_THAT(test::error_of(R"({"topology": "dgx-h100", "network": {"model": "flow"},
        "collectives": [{"op": "all_reduce", "bytes": "1MiB", "algorithm": "nvls", "protocol": "LL"}]})"),
             Catch::Contains("collectives[0].protocol") && Catch::Contains("Simple protocol only"));
  // "auto" tries only Simple there: NCCL's NVLS constants exist for no other protocol.
  const ScenarioResult r =
      run_scenario(parse_scenario(nlohmann::json::parse(R"({"topology": "dgx-h100",
      "network": {"model": "flow"}, "collectives": [{"op": "all_reduce", "bytes": "1MiB",
      "algorithm": "nvls", "protocol": "auto"}]})"),
                                  "."));
  CHECK(r.labels[0] == "nvls Simple");
}

TEST_CASE("nccl_algo and nccl_proto take NCCL's per-collective form", "[nccl]") {
  // An all-reduce and an all-gather of one scenario read one NCCL_ALGO each its own way.
  const auto picks = [](const std::string& algo, const std::string& proto = "") {
    std::string fields = R"(, "algorithm": "nccl", "nccl_algo": ")" + algo + "\"";
    if (!proto.empty()) fields += R"(, "nccl_proto": ")" + proto + "\"";
    const ScenarioResult r = run_scenario(parse_scenario(
        nlohmann::json::parse(R"({"topology": "dgx-h100", "network": {"model": "flow"},
        "collectives": [{"name": "ar", "op": "all_reduce", "bytes": "1GiB")" +
                              fields + R"(}, {"name": "ag", "op": "all_gather", "bytes": "1GiB")" +
                              fields + "}]}"),
        "."));
    return r.labels[0] + " | " + r.labels[1];
  };
  // The defaults at 1 GiB on one H100 node: NVLS for the all-reduce, a ring for the
  // all-gather (NCCL's model has NVLS all-gather at 238 GB/s algbw, a ring at 411).
  CHECK(picks("^tree") == "nccl: nvls/Simple/16ch | nccl: ring/Simple/24ch");
  // A list for all-reduce alone leaves the all-gather its own pick.
  CHECK(picks("allreduce:ring") == "nccl: ring/Simple/24ch | nccl: ring/Simple/24ch");
  // A first list for every collective, then all-gather's own: it replaces the first (which
  // alone leaves the all-gather nothing).
  CHECK(picks("nvls;allgather:ring") == "nccl: nvls/Simple/16ch | nccl: ring/Simple/24ch");
  CHECK(picks("nvls") == "nccl: nvls/Simple/16ch | nccl: nvls/Simple/16ch");
  CHECK_THROWS_WITH(picks("pat"), Catch::Contains("collectives[0].nccl_algo"));
  CHECK(picks("ring;AllReduce:^ring,tree") == "nccl: nvls/Simple/16ch | nccl: ring/Simple/24ch");
  CHECK(picks("ring", "^ll128;allreduce:ll") == "nccl: ring/LL/24ch | nccl: ring/Simple/24ch");
  // "^" excludes nothing: every algorithm, as NCCL's parseList reads it.
  CHECK(picks("^") == picks("^collnetdirect,collnetchain"));
  const auto error = [](const std::string& algo) {
    return test::error_of(R"({"topology": "dgx-h100", "collectives": [{"op": "all_reduce",
        "bytes": "1MiB", "algorithm": "nccl", "nccl_algo": ")" +
                          algo + "\"}]}");
  };
  CHECK_THAT(error("ring;tree"), Catch::Contains("collectives[0].nccl_algo") &&
                                     Catch::Contains("\"tree\": every list after the first "
                                                     "names its collective"));
  CHECK_THAT(error(";ring"), Catch::Contains("names its collective"));  // as NCCL's strtok
  // NCCL's function names, any case, as it compares them; what was typed is quoted.
  CHECK_THAT(error("All_Gathr:ring"), Catch::Contains("\"All_Gathr\" before a colon is not one "
                                                      "of NCCL's functions (broadcast, reduce"));
  CHECK_THAT(error("all_reduce:ring"), Catch::Contains("\"all_reduce\" before a colon"));
  // Empty lists and names are skipped, as NCCL skips them.
  for (const char* fine :
       {"ring;", "allreduce:ring;", ";allreduce:ring", "ring,,tree;;ALLREDUCE:tree"})
    CHECK(error(fine) == "no error");
  // Every list is checked, not only the one that applies, and the bad name is quoted.
  CHECK_THAT(error("allgather:rings;allreduce:ring"),
             Catch::Contains("\"rings\" is not one of ring, tree"));
  CHECK_THAT(error("allreduce:^ring,tree,nvls,nvlstree,pat,collnetdirect,collnetchain"),
             Catch::Contains("excludes everything for all_reduce"));
  // A list that empties another collective's choice is that collective's concern.
  CHECK(error("allgather:^ring,tree,nvls,nvlstree,pat,collnetdirect,collnetchain") == "no error");
}

TEST_CASE("nccl plans on every bundled topology, pipelining what NCCL pipelines", "[nccl]") {
  // The bundled clusters (64 to 4096 GPUs) and nvl72 take the same paths as small ones, at
  // minutes under the sanitizers: a 2 x 4 cluster and an 8-GPU NVL domain stand in.
  std::vector<nlohmann::json> topologies{
      {{"preset", "cluster"}, {"nodes", 2}, {"gpus_per_node", 4}, {"nic", "400Gbps"}},
      {{"preset", "nvl72"}, {"gpus", 8}}};
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(COLLSIM_SOURCE_DIR) + "/topologies"))
    if (!entry.path().stem().string().starts_with("cluster") && entry.path().stem() != "nvl72")
      topologies.emplace_back(entry.path().stem().string());
  for (const auto& topology : topologies) {
    INFO(topology.dump());
    const nlohmann::json doc = {
        {"topology", topology},
        {"network", {{"model", "ideal"}}},
        {"collectives",
         {{{"name", "small"}, {"op", "all_reduce"}, {"algorithm", "nccl"}, {"bytes", "16KiB"}},
          {{"name", "large"}, {"op", "all_reduce"}, {"algorithm", "nccl"}, {"bytes", "1MiB"}},
          {{"name", "gather"}, {"op", "all_gather"}, {"algorithm", "nccl"}, {"bytes", "256KiB"}},
          {{"name", "a2a"}, {"op", "all_to_all"}, {"algorithm", "nccl"}, {"bytes", "4KiB"}}}}};
    const ScenarioResult r = run_scenario(parse_scenario(doc, "."));
    for (const auto& label : r.labels) CHECK_THAT(label, Catch::StartsWith("nccl: "));
    CHECK(r.labels[3] == "nccl: p2p/Simple/1ch");  // 512 B to each peer: one channel
  }
  // A pipelined chain, as NCCL's broadcast is: more than one segment, unlike the default.
  const nlohmann::json doc = {
      {"topology", "dgx-h100"},
      {"collectives",
       {{{"name", "bcast"}, {"op", "broadcast"}, {"algorithm", "nccl"}, {"bytes", "64MiB"}}}}};
  CHECK(make_plan(parse_scenario(doc, ".")).collectives[0].spec.options.segments > 1);
}

TEST_CASE("NCCL's pick is the same under every network model, or refused with the reason",
          "[nccl]") {
  // 1 GiB on one DGX H100: NCCL's model picks NVLS from the hardware alone. Flow and
  // packet time it; ideal, which cannot share a link among NVLS's concurrent transfers,
  // says so instead of quietly picking something else.
  const auto plan_under = [](const std::string& model, const std::string& bytes = "1GiB") {
    const nlohmann::json doc = {
        {"topology", "dgx-h100"},
        {"network", {{"model", model}}},
        {"collectives",
         {{{"name", "x"}, {"op", "all_reduce"}, {"algorithm", "nccl"}, {"bytes", bytes}}}}};
    return make_plan(parse_scenario(doc, ".")).collectives[0].label();
  };
  CHECK(plan_under("flow") == "nccl: nvls/Simple/16ch");
  CHECK(plan_under("packet") == "nccl: nvls/Simple/16ch");
  CHECK_THROWS_WITH(plan_under("ideal"), Catch::Contains("collectives[0]") &&
                                             Catch::Contains("nvls") &&
                                             Catch::Contains("does not share links"));
  // Where NCCL picks something ideal can time, every model plans the same.
  CHECK(plan_under("ideal", "64KiB") == plan_under("flow", "64KiB"));
  CHECK(plan_under("packet", "64KiB") == plan_under("flow", "64KiB"));
}

TEST_CASE("NCCL picks NVLSTree across nodes that each have a sharp switch", "[nccl]") {
  // 2 x 8 H100 with 400 Gb/s NICs: NVLSTree's busbw passes the 400 GB/s ring limit at
  // large sizes (data/README.md: 469 GB/s measured), so NCCL's model picks it there.
  const nlohmann::json doc = {
      {"topology", {{"preset", "cluster"}, {"nodes", 2}}},
      {"collectives",
       {{{"name", "x"}, {"op", "all_reduce"}, {"algorithm", "nccl"}, {"bytes", "1GiB"}}}}};
  const Scenario s = parse_scenario(doc, ".");
  CHECK(name_of(s.network.model) == "flow");  // the default network model
  const ScenarioResult r = run_scenario(s);
  CHECK(r.labels[0] == "nccl: nvls_tree/Simple/16ch");
  CHECK(r.outcomes[0].busbw_Bps > 400e9);  // above what a ring over the NICs can reach
  // Every GPU's NVLink carries the whole buffer in and out at least once.
  CHECK(r.outcomes[0].algbw_Bps < 450e9);
}

TEST_CASE(
    "NVLS and NVLSTree pipeline their channels' chunks per head (NVLSTree's as NCCL cuts "
    "them), in segments of a fixed size, so no size takes less time than a smaller one",
    "[nccl]") {
  const auto planned = [](const nlohmann::json& topology, std::int64_t bytes) {
    const nlohmann::json doc = {
        {"topology", topology},
        {"collectives",
         {{{"name", "x"}, {"op", "all_reduce"}, {"algorithm", "nccl"}, {"bytes", bytes}}}}};
    const Scenario s = parse_scenario(doc, ".");
    const Plan plan = make_plan(s);
    return std::pair{plan.collectives[0].label(), plan.collectives[0].spec.options};
  };
  const nlohmann::json one = "dgx-h100";
  const nlohmann::json two = {{"preset", "cluster"}, {"nodes", 2}};
  const nlohmann::json four = {{"preset", "cluster"}, {"nodes", 4}};
  // 16 channels x 128 KiB a head's pipeline on one node (8 heads): 2 MiB a segment.
  const auto [label1, o1] = planned(one, std::int64_t{1} << 30);
  CHECK(label1 == "nccl: nvls/Simple/16ch");
  CHECK(o1.segment_bytes == 16 * (128 << 10));
  CHECK(o1.segments == 64);
  // Across nodes each head's slice goes half over each tree, 8 channels' worth each, in
  // NCCL's NVLSTree chunk: 128 KiB from 4 chunks per channel and head (16 x 8 x 4 x 128 KiB
  // = 64 MiB) on two nodes, 64 KiB below that and always from 4 nodes, 32 KiB below one.
  const auto [label2, o2] = planned(two, (std::int64_t{16} << 20) + 4);
  CHECK(label2 == "nccl: nvls_tree/Simple/16ch");
  CHECK(o2.segment_bytes == 8 * (64 << 10));
  CHECK(o2.segments == 3);  // two whole segments and 4 bytes' worth
  const auto [label3, o3] = planned(two, std::int64_t{256} << 20);
  CHECK(label3 == "nccl: nvls_tree/Simple/16ch");
  CHECK(o3.segment_bytes == 8 * (128 << 10));
  CHECK(o3.segments == 16);
  const auto [label4, o4] = planned(four, std::int64_t{256} << 20);
  CHECK(label4 == "nccl: nvls_tree/Simple/16ch");
  CHECK(o4.segment_bytes == 8 * (64 << 10));
  CHECK(o4.segments == 32);
  // Sizes 7% apart across a whole segment's step (equal parts made 17.4 MB 16% faster than
  // 16.3 MB on 2 nodes): NVLS and NVLSTree only, where NCCL's pick does not change.
  for (const nlohmann::json& topology : {one, two}) {
    double before = 0;
    for (double bytes = 12e6; bytes < 40e6; bytes *= 1.07) {
      const std::int64_t size = static_cast<std::int64_t>(bytes) / 4 * 4;
      const nlohmann::json doc = {
          {"topology", topology},
          {"collectives",
           {{{"name", "x"}, {"op", "all_reduce"}, {"algorithm", "nccl"}, {"bytes", size}}}}};
      const double t = run_scenario(parse_scenario(doc, ".")).outcomes[0].time_s;
      INFO(topology.dump() << " " << size << " B: " << t * 1e6 << " us");
      CHECK(t >= before);
      before = t;
    }
  }
}

TEST_CASE("NCCL's estimate bounds a size by the least its model gives any larger size", "[nccl]") {
  // 8 x 8 H100 all-reduce, tree/LL128 from 2 to 8 MiB: NCCL's tree correction steps up at
  // 4 MiB, so its model gives 4 MiB less than 3.9 MB (135.7 against 148.5 us on the
  // launched channels). The floor at 3.9 MB is 4 MiB's: more bytes never take less time.
  const nlohmann::json topology = {{"preset", "cluster"}, {"nodes", 8}};
  const auto doc = [&](std::int64_t bytes) {
    return nlohmann::json{
        {"topology", topology},
        {"collectives",
         {{{"name", "x"}, {"op", "all_reduce"}, {"algorithm", "nccl"}, {"bytes", bytes}}}}};
  };
  const Scenario s = parse_scenario(doc(3903664), ".");
  const Plan plan = make_plan(s);
  const PlannedCollective& c = plan.collectives[0];
  CHECK(c.nccl_least_at == 4 << 20);
  const nlohmann::json planned = plan_json(s, plan);
  CHECK(planned["collectives"][0]["nccl_floor_from_bytes"] == 4 << 20);
  CHECK(planned["collectives"][0]["nccl_floor_us"].get<double>() ==
        Approx(to_seconds(c.cost->nccl_floor) * 1e6));
  const NcclTopo topo = nccl_topo(s.topology, c.spec.ranks);
  const NcclPick at4 = nccl_pick(topo, CollectiveOp::AllReduce, 4 << 20);
  CHECK(to_seconds(c.cost->nccl_floor) * 1e6 == Approx(at4.run_time_us).margin(1e-6));  // ps
  CHECK(at4.run_time_us < c.nccl_run_us);
  double before = 0;
  for (std::int64_t bytes : {3 << 20, 3903664, 4 << 20, 4489212, 6 << 20}) {
    const double t = run_scenario(parse_scenario(doc(bytes), ".")).outcomes[0].time_s;
    INFO(bytes << " B: " << t * 1e6 << " us");
    CHECK(t >= before);
    before = t;
  }
  // Every size's least is at most its own, and the least over the larger powers of two.
  for (std::int64_t bytes = 1; bytes < (std::int64_t{1} << 31); bytes = bytes * 3 + 1) {
    const NcclPick p = nccl_pick(topo, CollectiveOp::AllReduce, bytes);
    double least = p.run_time_us;
    for (std::int64_t larger = 1; larger <= (std::int64_t{1} << 29); larger *= 2)
      if (larger > bytes)
        least = std::min(least, nccl_pick(topo, CollectiveOp::AllReduce, larger).run_time_us);
    INFO(bytes << " B");
    CHECK(p.least_us == least);
    CHECK((p.least_at > 0) == (p.least_us < p.run_time_us));
  }
}

TEST_CASE(
    "NCCL's ring broadcast and reduce move a chunk per channel down the chain at a time, "
    "so no size takes less time than a smaller one",
    "[nccl]") {
  const auto doc = [](const nlohmann::json& topology, const char* op, std::int64_t bytes) {
    return nlohmann::json{
        {"topology", topology},
        {"collectives", {{{"name", "x"}, {"op", op}, {"algorithm", "nccl"}, {"bytes", bytes}}}}};
  };
  // 24 channels x 128 KiB a segment on 8 H100: 3 MiB and 4 bytes are one whole segment and
  // 4 bytes' worth (equal parts made them two halves, pipelined: 3.39 MB 22% faster than
  // 2.95 MB).
  const Plan plan = make_plan(parse_scenario(doc("dgx-h100", "broadcast", (3 << 20) + 4), "."));
  CHECK(plan.collectives[0].label() == "nccl: ring/Simple/24ch");
  CHECK(plan.collectives[0].spec.options.segment_bytes == 24 * (128 << 10));
  CHECK(plan.collectives[0].spec.options.segments == 2);
  // LL forwards each line as it arrives: a chain on it is cut into at least its 7 hops.
  const Plan ll = make_plan(parse_scenario(doc("dgx-h100", "broadcast", 64 << 10), "."));
  CHECK(ll.collectives[0].label() == "nccl: ring/LL/2ch");
  CHECK(ll.collectives[0].spec.options.segments == 7);
  // ... as far as the schedule stays within the planner's budget for a choice: on 1,024
  // ranks (a chain of 1,023 hops) 16 segments, and the schedule is held in memory.
  const Plan long_chain = make_plan(parse_scenario(
      doc(nlohmann::json{{"preset", "cluster"}, {"nodes", 128}}, "broadcast", 64 << 10), "."));
  CHECK(long_chain.collectives[0].spec.options.segments == 16);
  // No bytes: one empty segment, nothing divided by zero.
  for (const char* op : {"broadcast", "reduce"})
    CHECK(run_scenario(parse_scenario(doc("dgx-h100", op, 0), ".")).outcomes[0].time_s == 0);
  // Sizes 7% apart across several segments' steps. Across hosts the channels' chains share
  // the NICs' and NVLink's links under max-min, where a short last segment overlaps the one
  // before it a little: there a step may fall by a fraction of a percent (0.5% at most
  // here), where equal parts fell by 14% (1.94 -> 2.23 MB: 81.2 -> 69.6 us).
  for (const auto& [topology, forgiven] :
       {std::pair{nlohmann::json("dgx-h100"), 0.0},
        std::pair{nlohmann::json{{"preset", "cluster"}, {"nodes", 2}}, 0.01}})
    for (const char* op : {"broadcast", "reduce"}) {
      double before = 0;
      for (double bytes = 1.5e6; bytes < 16e6; bytes *= 1.07) {
        const std::int64_t size = static_cast<std::int64_t>(bytes) / 4 * 4;
        const double t =
            run_scenario(parse_scenario(doc(topology, op, size), ".")).outcomes[0].time_s;
        INFO(topology.dump() << " " << op << " " << size << " B: " << t * 1e6 << " us");
        CHECK(t >= before * (1 - forgiven));
        before = t;
      }
    }
}

TEST_CASE("an op waits for a transfer's arrival only where it uses the transfer's data",
          "[schedule]") {
  // Rank 0 sends elements [0, 32) to rank 1.
  const Op p{0, 0, 32, 0, 1, 0, OpKind::Copy, 0, 0, 0};
  const auto op = [](int src, int dst, std::int64_t offset, OpKind kind = OpKind::Copy) {
    return Op{offset, offset, 32, src, dst, 1, kind, 0, 0, 0};
  };
  CHECK(needs_only_sent(p, op(0, 1, 32)));                  // the same connection: a FIFO
  CHECK(!needs_only_sent(p, op(1, 2, 0)));                  // forwards what p brought
  CHECK(!needs_only_sent(p, op(1, 2, 16)));                 // half of it
  CHECK(needs_only_sent(p, op(1, 2, 32)));                  // the next segment: only step order
  CHECK(needs_only_sent(p, op(2, 1, 32)));                  // another sender into other elements
  CHECK(!needs_only_sent(p, op(2, 1, 0, OpKind::Reduce)));  // reduces into p's elements
  CHECK(needs_only_sent(p, op(2, 3, 0)));                   // elsewhere altogether
  // A switch op touches its range on every rank of its group.
  CHECK(!needs_only_sent(p, op(3, 3, 0, OpKind::SwitchReduce)));
  CHECK(needs_only_sent(p, op(3, 3, 64, OpKind::Multicast)));
}

TEST_CASE("a pipelined tree does not pay a hop's latency again at every step", "[nccl]") {
  // NVLSTree over 4 hosts on the Simple protocol (NCCL's 20.9 us per network hop), 1 GiB
  // on 2 channels in 64 or 256 segments: when every op waited for the arrivals of its
  // ranks' previous step, 256 segments took 1.53x the time of 64 (10.9 against 7.1 ms).
  // A rank's other connections now go on, and segments run in lanes, 8 in flight per hop
  // (with 8 end to end, a segment's way up waited for the way down of the one 8 before:
  // 7.52 against 5.82 ms); more segments only fill the pipeline better (5.58 ms).
  const auto time_with = [](int segments) {
    const nlohmann::json doc = {{"topology", {{"preset", "cluster"}, {"nodes", 4}}},
                                {"collectives",
                                 {{{"name", "x"},
                                   {"op", "all_reduce"},
                                   {"algorithm", "nvls_tree"},
                                   {"protocol", "Simple"},
                                   {"channels", 2},
                                   {"segments", segments},
                                   {"bytes", "1GiB"}}}}};
    return run_scenario(parse_scenario(doc, ".")).outcomes[0].time_s;
  };
  CHECK(time_with(256) < time_with(64));
}

TEST_CASE("NCCL's estimate of what it runs counts the channels it launches at that size",
          "[nccl]") {
  // 8 x H100: NCCL's graph has 12 channels of 30 GB/s and launches up to 24, each half a
  // graph channel; ring/LL launches one per 32 KiB (8 B a thread x 512 threads x 8 ranks).
  // One launched channel on LL: 0.5 x 30 x 0.5 = 7.5 GB/s of bus bandwidth, 7.5 x 8/14 of
  // algorithm bandwidth; ring/LL's latency is 6.6 + 14 x 0.6 = 15 us.
  const auto floor_us = [](std::int64_t bytes) {
    const Scenario s = parse_scenario(
        parse_json_text(fmt::format(R"({{"topology": "dgx-h100", "collectives": [{{"name": "x",
          "op": "all_reduce", "algorithm": "nccl", "bytes": {}}}]}})",
                                    bytes),
                        "t.json"),
        ".");
    const Plan plan = make_plan(s);
    REQUIRE(plan.collectives[0].nccl_pick.starts_with("ring/LL/"));
    return to_seconds(plan.collectives[0].cost->nccl_floor) * 1e6;
  };
  const double one_channel = 15 + 32768 / (1e3 * 7.5 * 8 / 14);
  CHECK(floor_us(32 << 10) == Approx(one_channel).margin(1e-5));
  {  // `collsim plan` says so under NCCL's table, and in its JSON
    const Scenario s =
        parse_scenario(parse_json_text(R"({"topology": "dgx-h100", "collectives": [{"name": "x",
          "op": "all_reduce", "algorithm": "nccl", "bytes": 32768}]})",
                                       "t.json"),
                       ".");
    const Plan plan = make_plan(s);
    CHECK_THAT(plan_table(s, plan),
               Catch::Contains("ring/LL/1ch on the channels it launches at this size: 22.65 us"));
    CHECK(plan_json(s, plan)["collectives"][0]["nccl_floor_us"].get<double>() ==
          Approx(one_channel).margin(1e-5));
  }
  CHECK(floor_us(16 << 10) == Approx(15 + 16384 / (1e3 * 7.5 * 8 / 14)).margin(1e-5));
  // Each channel holds 32 KiB from 1 to 24 channels: the time stays, never falling as a
  // whole channel is added (48 KiB is one and a half channels' worth).
  CHECK(floor_us(48 << 10) == Approx(one_channel).margin(1e-5));
  CHECK(floor_us(64 << 10) == Approx(one_channel).margin(1e-5));
  CHECK(floor_us(512 << 10) == Approx(one_channel).margin(1e-5));
  // 24 channels at 1 MiB: every channel of the graph, NCCL's own estimate as it picks
  // (LL's 141 GB/s cap on the bus bandwidth).
  CHECK(floor_us(1 << 20) == Approx(15 + 1048576 / (1e3 * 141 * 8 / 14)).margin(1e-5));
}

TEST_CASE(
    "NCCL's pick lasts at least NCCL's own estimate of it, until a calibration states the "
    "machine's launch or latency",
    "[nccl]") {
  for (const char* topology : {R"("dgx-h100")", R"({"preset": "cluster", "nodes": 2})"}) {
    for (std::int64_t bytes : {std::int64_t{8}, std::int64_t{128} << 10, std::int64_t{1} << 20,
                               std::int64_t{64} << 20, std::int64_t{4} << 30}) {
      const auto doc = [&](const char* cost) {
        return fmt::format(R"({{"topology": {}, "network": {{"model": "flow"{}}},
          "collectives": [{{"name": "x", "op": "all_reduce", "algorithm": "nccl",
          "bytes": {}}}]}})",
                           topology, cost, bytes);
      };
      const Scenario s = parse_scenario(parse_json_text(doc(""), "t.json"), ".");
      const Plan plan = make_plan(s);
      // NCCL's estimate on the channels it launches: at least the one it picked by.
      double picked_by = INFINITY;
      for (const NcclOption& o : plan.collectives[0].nccl_options)
        picked_by = std::min(picked_by, o.time_us * 1e-6);
      const double estimate = to_seconds(plan.collectives[0].cost->nccl_floor);
      CHECK(estimate >= picked_by - 1e-12);
      const CollectiveOutcome o = run_scenario(s).outcomes[0];
      INFO(topology << " " << bytes << " B: estimate " << estimate << " s, ops "
                    << o.ops_time_s << " s");
      CHECK(o.time_s >= estimate - 1e-12);
      CHECK(o.time_s == Approx(std::max(estimate, o.ops_time_s)).margin(1e-11));  // ps
      CHECK((o.held_by == HeldBy::NcclModel) == (o.time_s - o.ops_time_s > 0.01 * o.ops_time_s));
      // A stated efficiency is a link's usable rate, not what one of NCCL's channels
      // reaches: the estimate still holds.
      for (
          const char* cost :
          {R"(, "cost": {"links": {"nvlink": {"efficiency": 1}}})",
           R"(, "cost": {"links": {"nvlink": {"bandwidth_curve": [[1, 4e11], ["1TiB", 4e11]]}}})"}) {
        const Scenario rate = parse_scenario(parse_json_text(doc(cost), "t.json"), ".");
        CHECK(to_seconds(make_plan(rate).collectives[0].cost->nccl_floor) == estimate);
        CHECK(run_scenario(rate).outcomes[0].time_s >= estimate - 1e-12);
      }
      // A stated launch or latency describes this machine's: NCCL's generic table no
      // longer holds.
      for (const char* cost : {R"(, "cost": {"launch_s": "10us"})",
                               R"(, "cost": {"links": {"nvlink": {"latency_s": "1us"}}})"}) {
        const Scenario calibrated = parse_scenario(parse_json_text(doc(cost), "t.json"), ".");
        const CollectiveOutcome c = run_scenario(calibrated).outcomes[0];
        CHECK(c.held_by == HeldBy::Nothing);
        CHECK(c.time_s == c.ops_time_s);
      }
    }
  }
  // Where NCCL's table holds more than the links: a tree on LL across two nodes at 128 KiB
  // (the 2 x 8 log measures 38.8 us; the links alone take about 27).
  const Scenario s = parse_scenario(
      parse_json_text(R"({"topology": {"preset": "cluster", "nodes": 2}, "collectives": [
        {"name": "x", "op": "all_reduce", "algorithm": "nccl", "bytes": "128KiB"}]})",
                      "t.json"),
      ".");
  CHECK(run_scenario(s).outcomes[0].held_by == HeldBy::NcclModel);
  // One rank, or no bytes: NCCL runs no kernel its model describes; nothing holds them.
  for (const char* c : {R"("ranks": [3], "bytes": "1MiB")", R"("bytes": 0)"}) {
    const auto o = run_scenario(parse_scenario(
        parse_json_text(fmt::format(R"({{"topology": "dgx-h100", "collectives": [
          {{"name": "x", "op": "all_reduce", "algorithm": "nccl", {}}}]}})", c), "t.json"),
        ".")).outcomes[0];
    INFO(c);
    CHECK(o.held_by == HeldBy::Nothing);
    CHECK(o.time_s == o.ops_time_s);
  }
}

TEST_CASE("a NIC carries what NCCL's search counts of it: 48 GB/s per channel of its list",
          "[nccl]") {
  // 400 Gb/s (50 GB/s): one 48 GB/s channel; 200 Gb/s: 24 of 25; 800 Gb/s: two of 48.
  for (const auto& [nic, usable] :
       {std::pair{50e9, 48.0 / 50}, std::pair{25e9, 24.0 / 25}, std::pair{100e9, 96.0 / 100}}) {
    ClusterParams p;
    p.server.nic = nic;
    const Topology t = make_cluster_topology(p);
    INFO(nic << " B/s");
    CHECK(net_usable_fraction(t, t.gpu_of_rank(0)) == Approx(usable));
  }
  const Topology one = make_switch_topology(8, 450e9, 0);
  CHECK(net_usable_fraction(one, one.gpu_of_rank(0)) == 1);  // no NICs
  // The protocol's costs run network links at that share, unless a term states their own.
  const Topology cluster = make_cluster_topology(ClusterParams{});
  const auto ib = [](const CostModel& m) { return m.link(LinkKind::Ib).efficiency; };
  CHECK(ib(*protocol_cost(nullptr, Protocol::Simple, NcclAlgo::Ring, cluster)) == Approx(0.96));
  CostModel stated;
  stated.link(LinkKind::Ib).efficiency = 0.9;
  stated.stated.efficiency[static_cast<std::size_t>(LinkKind::Ib)] = true;
  const auto base = std::make_shared<const CostModel>(stated);
  CHECK(ib(*protocol_cost(base, Protocol::Simple, NcclAlgo::Ring, cluster)) == Approx(0.9));
}

TEST_CASE(
    "a named GPU model sets its server's links, whether its switch reduces, and the "
    "generation NCCL's tables are read for, where the NVLink bandwidth would mislead",
    "[nccl]") {
  const auto plan_on = [](const nlohmann::json& topology, const std::string& algorithm = "nccl") {
    const nlohmann::json doc = {
        {"topology", topology},
        {"collectives",
         {{{"name", "x"}, {"op", "all_reduce"}, {"algorithm", algorithm}, {"bytes", "1GiB"}}}}};
    return make_plan(parse_scenario(doc, "."));
  };
  const auto topo_of = [](const nlohmann::json& topology) {
    return load_topology(JsonView(topology, "topology"), ".");
  };
  const auto arch_of = [](const Topology& t) { return nccl_topo(t, {0, 1, 2, 3}).arch; };
  // An H800 is a Hopper with 200 GB/s of NVLink: by bandwidth alone it read as an Ampere,
  // so NCCL's model left NVLS out and used Ampere's per-channel ceilings.
  const nlohmann::json h800 = {{"preset", "dgx"}, {"gpu", "h800"}};
  const nlohmann::json h800_unnamed = {{"preset", "dgx-h100"}, {"nvlink", "200GB/s"}};
  const Topology named = topo_of(h800), unnamed = topo_of(h800_unnamed);
  CHECK(named.name == "dgx-h800");
  CHECK(named.link(0).bandwidth == 200e9);  // gpu0 -> nvswitch
  CHECK(arch_of(named) == nccl_published::Arch::Hopper);
  CHECK(arch_of(unnamed) == nccl_published::Arch::Ampere);
  CHECK(plan_on(h800).collectives[0].label() == "nccl: nvls/Simple/16ch");
  CHECK(plan_on(h800_unnamed).collectives[0].label().rfind("nccl: ring/", 0) == 0);
  // An A100's NVSwitch does not reduce: NCCL never picks NVLS there, and asking for it
  // names what is missing.
  const nlohmann::json a100 = {{"preset", "dgx"}, {"gpu", "a100"}, {"nic", "50GB/s"}};
  const Topology t = topo_of(a100);
  CHECK(t.name == "dgx-a100");
  CHECK_FALSE(t.node(*t.find("nvswitch")).sharp);
  CHECK(arch_of(t) == nccl_published::Arch::Ampere);
  for (const Link& l : t.links())
    if (l.kind == LinkKind::Pcie) CHECK(l.bandwidth == 32e9);  // PCIe Gen4 x16
  CHECK(plan_on(a100).collectives[0].label().rfind("nccl: ring/", 0) == 0);
  CHECK_THROWS_WITH(plan_on(a100, "nvls"), Catch::Contains("sharp"));
  // A cluster of them says so in its name, and a topology file carries the model.
  const Topology b200 = topo_of({{"preset", "cluster"}, {"nodes", 2}, {"gpu", "b200"}});
  CHECK(b200.name == "cluster-2x8-b200");
  CHECK(arch_of(b200) == nccl_published::Arch::Blackwell);
  const nlohmann::json file = topology_to_json(named);
  CHECK(file["gpu"] == "h800");
  CHECK(topo_of(file).gpu == named.gpu);
  CHECK_THROWS_WITH(topo_of({{"preset", "dgx"}, {"gpu", "a200"}}),
                    "topology.gpu: unknown value \"a200\"; did you mean \"a100\"? (one of a100, "
                    "h100, h200, h800, b200)");
}

TEST_CASE("NVLSTree's chunk steps at NCCL's thresholds: 4 and 1 loops of channels x heads",
          "[nccl]") {
  // 16 channels x 8 heads = 128 chunks a loop.
  const auto chunk = [](std::int64_t bytes, int nodes) {
    NcclTopo t;
    t.nodes = nodes;
    t.per_node = 8;
    return nvls_tree_chunk(bytes, 16, t);
  };
  constexpr std::int64_t MiB = 1 << 20, KiB = 1 << 10;
  // Two nodes: 128 KiB from 4 loops of 128 KiB (64 MiB), 64 KiB from one loop of 64 KiB.
  CHECK(chunk(64 * MiB, 2) == 128 * KiB);
  CHECK(chunk(64 * MiB - 4, 2) == 64 * KiB);
  CHECK(chunk(8 * MiB, 2) == 64 * KiB);
  CHECK(chunk(8 * MiB - 4, 2) == 32 * KiB);
  CHECK(chunk(std::int64_t{16} << 30, 2) == 128 * KiB);
  // From four nodes at most 64 KiB, however large.
  for (int nodes : {4, 8, 64}) {
    CHECK(chunk(std::int64_t{16} << 30, nodes) == 64 * KiB);
    CHECK(chunk(8 * MiB, nodes) == 64 * KiB);
    CHECK(chunk(8 * MiB - 4, nodes) == 32 * KiB);
  }
}

TEST_CASE("NCCL counts a host as NVLink only where every GPU reaches every other over it",
          "[nccl]") {
  // Four A100s on a PCIe switch, NVLink-bridged in pairs (0-1, 2-3): NCCL's intra paths are
  // PCIe there (ncclTopoPathAllNVLink), so no LL128 and 128 KiB point-to-point chunks; with
  // a bridge 1-2 as well, every GPU reaches every other over NVLink (through a GPU).
  const auto topo = [](bool chain) {
    nlohmann::json nodes = nlohmann::json::array({{{"name", "pcie"}, {"kind", "switch"}}});
    nlohmann::json links = nlohmann::json::array();
    for (int g = 0; g < 4; ++g) {
      const std::string name = "g" + std::to_string(g);
      nodes.push_back({{"name", name}, {"kind", "gpu"}, {"host", 0}});
      links.push_back({{"src", name}, {"dst", "pcie"}, {"bandwidth", "32GB/s"}, {"kind", "pcie"}});
    }
    const auto bridge = [&](const char* a, const char* b) {
      links.push_back({{"src", a}, {"dst", b}, {"bandwidth", "100GB/s"}, {"kind", "nvlink"}});
    };
    bridge("g0", "g1");
    bridge("g2", "g3");
    if (chain) bridge("g1", "g2");
    return nlohmann::json{{"gpu", "a100"}, {"nodes", nodes}, {"links", links}};
  };
  const auto run = [&](bool chain, const char* bytes, const char* nccl_proto = nullptr) {
    nlohmann::json doc = {
        {"topology", topo(chain)},
        {"collectives",
         {{{"name", "ar"}, {"op", "all_reduce"}, {"algorithm", "nccl"}, {"bytes", bytes}}}}};
    if (nccl_proto) doc["collectives"][0]["nccl_proto"] = nccl_proto;
    const Scenario s = parse_scenario(doc, ".");
    std::vector<int> ranks(4);
    std::iota(ranks.begin(), ranks.end(), 0);
    return std::make_pair(nccl_topo(s.topology, ranks), run_scenario(s).labels[0]);
  };
  const auto [pairs, pairs_label] = run(false, "4MiB");
  CHECK_FALSE(pairs.nvlink);
  CHECK(pairs.intra_GBps == Approx(32));  // the ring's PCIe, not the bridges
  CHECK(nccl_p2p_stripe(pairs).chunk_bytes == (128 << 10));
  CHECK_THAT(pairs_label, !Catch::Contains("LL128"));
  // NCCL gates LL128 only while NCCL_PROTO leaves it at its default: a list that enables it
  // (naming it, or excluding others) runs it on PCIe too.
  CHECK_THAT(run(false, "4MiB", "ll128").second, Catch::Contains("/LL128/"));
  CHECK_THAT(run(false, "4MiB", "^ll,simple").second, Catch::Contains("/LL128/"));
  CHECK_THAT(run(false, "4MiB", "reducescatter:ll128").second, !Catch::Contains("LL128"));
  const auto [chained, chained_label] = run(true, "4MiB");
  CHECK(chained.nvlink);
  CHECK(nccl_p2p_stripe(chained).chunk_bytes == (512 << 10));
}

TEST_CASE("a ring's chain (broadcast, reduce) pays one hop of NCCL latency, as NCCL's model does",
          "[nccl]") {
  // NCCL: broadcast and reduce latency = baseLat + one hop's (the network's across hosts);
  // a ring all-reduce pays a hop per step. Charged per hop, an 8-GPU Simple chain paid
  // 7 x 3.4 us.
  const Topology t = make_switch_topology(8, 450e9, 0);
  const auto nvlink = [](const CostModel& m) {
    return to_seconds(m.link(LinkKind::NvLink).latency);
  };
  const auto ring = protocol_cost(nullptr, Protocol::Simple, NcclAlgo::Ring, t);
  const auto chain = protocol_cost(nullptr, Protocol::Simple, NcclAlgo::Ring, t, false, true);
  CHECK(nvlink(*ring) * 1e6 == Approx(3.4));
  CHECK(to_seconds(ring->launch) * 1e6 == Approx(8.4));
  CHECK(nvlink(*chain) == 0);
  CHECK(to_seconds(chain->launch) * 1e6 == Approx(8.4 + 3.4));
  // Across hosts the one hop is the network's.
  const Topology cluster = make_cluster_topology(ClusterParams{});
  const auto across = protocol_cost(nullptr, Protocol::Simple, NcclAlgo::Ring, cluster, true, true);
  CHECK(to_seconds(across->launch) * 1e6 == Approx(8.4 + 14));
  CHECK(to_seconds(across->link(LinkKind::Ib).latency) == 0);
  // Simulated: a 1 MiB Simple broadcast in 16 segments on a DGX H100 takes about NCCL's
  // latency and its bytes, not 7 hops of latency more.
  const double us = run_scenario(parse_scenario(nlohmann::json::parse(R"({"topology": "dgx-h100",
          "network": {"model": "flow"}, "collectives": [{"name": "b", "op": "broadcast",
          "algorithm": "ring", "protocol": "Simple", "segments": 16, "bytes": "1MiB"}]})"),
                                                "."))
                        .outcomes[0]
                        .time_s *
                    1e6;
  CHECK(us < 8.4 + 3.4 + 7 * 3.4);
  CHECK(us > 8.4 + 3.4);
}

namespace nccl_model_test {

// The NCCL view of a cluster preset of `nodes` x `per_node` GPUs, all of them.
NcclTopo cluster(int nodes, int per_node, const std::string& extra = "") {
  const nlohmann::json spec = nlohmann::json::parse(fmt::format(
      R"({{"preset": "cluster", "nodes": {}, "gpus_per_node": {}{}}})", nodes, per_node, extra));
  const Topology t = load_topology(JsonView(spec, "topology"), ".");
  std::vector<int> ranks(static_cast<std::size_t>(nodes * per_node));
  std::iota(ranks.begin(), ranks.end(), 0);
  NcclTopo n = nccl_topo(t, ranks);
  n.nvls = per_node > 1;  // the plan's check: a sharp NVSwitch on every host (nvls_tree's)
  return n;
}

}  // namespace nccl_model_test

TEST_CASE(
    "across hosts NCCL caps LL by the hosts' CPU vendor, counts tree levels by log2i, and "
    "charges one GPU a host the tree's network latency",
    "[nccl]") {
  // llMaxBws across hosts: Intel 39 on 2 hosts, 20.4 on more; AMD 22.5, 19.0 (an H100's own
  // row, 45 and 35, is read on one host only). Ring/LL's bus bandwidth is capped by it; its
  // algbw is that x n / (2(n - 1)).
  const auto ring_ll = [](const NcclTopo& t) {
    const NcclPick p = nccl_pick(t, CollectiveOp::AllReduce, 1 << 20);
    return option(p, NcclAlgo::Ring, Protocol::LL).algbw_GBps * 2 * (t.ranks - 1) / t.ranks;
  };
  CHECK(ring_ll(cluster(2, 8)) == Approx(39.0));
  CHECK(ring_ll(cluster(4, 8)) == Approx(20.4));
  CHECK(ring_ll(cluster(4, 8, R"(, "cpu": "amd")")) == Approx(19.0));
  CHECK(ring_ll(cluster(2, 8, R"(, "cpu": "amd")")) == Approx(22.5));
  CHECK(ring_ll(cluster(2, 8, R"(, "gpu": "a100")")) == Approx(22.5));  // a DGX A100's EPYC
  CHECK(ring_ll(cluster(4, 8, R"(, "gpu": "a100", "cpu": "intel")")) == Approx(20.4));
  // Tree and NVLSTree climb log2i(hosts) levels: 3 hosts are 1 level, as 2 are.
  const auto latency = [](const NcclTopo& t, NcclAlgo a, Protocol p) {
    return option(nccl_pick(t, CollectiveOp::AllReduce, 1 << 20), a, p).latency_us;
  };
  for (NcclAlgo a : {NcclAlgo::Tree, NcclAlgo::NvlsTree}) {
    INFO(static_cast<int>(a));
    const Protocol p = a == NcclAlgo::Tree ? Protocol::LL128 : Protocol::Simple;
    CHECK(latency(cluster(3, 8), a, p) == Approx(latency(cluster(2, 8), a, p)));
    CHECK(latency(cluster(4, 8), a, p) > latency(cluster(3, 8), a, p));
  }
  // NVLSTree on 3 x 8 H100: NVLink 25 + 2 x 1 level x 20.9 us (NCCL's model: 66.8).
  CHECK(latency(cluster(3, 8), NcclAlgo::NvlsTree, Protocol::Simple) == Approx(25 + 2 * 20.9));
  // One GPU a host: the ring pays the tree's network latency at each of its 6 steps (LL: 5.0,
  // not its own 2.7).
  const NcclTopo one = cluster(4, 1);
  const double base = nccl_base_latency_us(NcclAlgo::Ring, Protocol::LL);
  CHECK(latency(one, NcclAlgo::Ring, Protocol::LL) == Approx(base + 2 * 3 * 5.0));
  // 3 ranks on 2 hosts are 1.5 a host to NCCL: the ring's own 2.7 at its 2 network steps,
  // and its 2 NVLink steps at the 1 us network overhead.
  const nlohmann::json spec = nlohmann::json::parse(R"({"preset": "cluster", "nodes": 2})");
  const NcclTopo uneven = nccl_topo(load_topology(JsonView(spec, "topology"), "."), {0, 1, 8});
  CHECK(latency(uneven, NcclAlgo::Ring, Protocol::LL) == Approx(base + 2 * 1.0 + 2 * 2.7));
}

TEST_CASE(
    "NCCL's NVLS needs more than 2 GPUs a host, runs 32 channels across Blackwell hosts, "
    "and a tree's LL channels count 512 threads",
    "[nccl]") {
  // ncclNvlsInit: no NVLS with 2 GPUs or fewer on a host.
  NcclTopo two = cluster(1, 2);
  two.nvls = true;
  const NcclPick p2 = nccl_pick(two, CollectiveOp::AllReduce, 1 << 30);
  CHECK(std::none_of(p2.options.begin(), p2.options.end(), [](const NcclOption& o) {
    return o.algorithm == NcclAlgo::Nvls && o.algbw_GBps > 0;
  }));
  NcclTopo four = cluster(1, 4);
  four.nvls = true;
  CHECK(option(nccl_pick(four, CollectiveOp::AllReduce, 1 << 30), NcclAlgo::Nvls, Protocol::Simple)
            .algbw_GBps > 0);
  // NVLS_NCHANNELS_SM100: 32 across hosts; sm90 16.
  const NcclPick b200 =
      nccl_pick(cluster(4, 8, R"(, "gpu": "b200")"), CollectiveOp::AllReduce, 256 << 20);
  REQUIRE(b200.chosen.algorithm == NcclAlgo::NvlsTree);
  CHECK(b200.channels == 32);
  const NcclPick h100 = nccl_pick(cluster(4, 8), CollectiveOp::AllReduce, 256 << 20);
  REQUIRE(h100.chosen.algorithm == NcclAlgo::NvlsTree);
  CHECK(h100.channels == 16);
  // Tree/LL at 64 KiB on 4 x 8: 64 KiB / (512 threads x 8 B) = 16 channels (640: 12).
  const NcclPick tree = nccl_pick(cluster(4, 8), CollectiveOp::AllReduce, 64 << 10);
  REQUIRE(tree.chosen.algorithm == NcclAlgo::Tree);
  REQUIRE(tree.chosen.protocol == Protocol::LL);
  CHECK(tree.channels == 16);
}
