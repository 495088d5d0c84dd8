// The cost model beyond α-β: launch, per-op overhead, framing efficiency, per-kind
// latency, size-dependent bandwidth and reduction rates, checked against the ring's
// closed form with each term added, under the ideal and flow models.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "nccl/protocol.h"
#include "network/cost_model.h"
#include "scenario/cost_json.h"

using namespace collsim;

namespace {

// A 4-rank ring all-reduce of `bytes` on a 10 GB/s switch, with `cost` as the
// network's cost model ("cost" left out when null).
double ring_time(const std::string& model, std::int64_t bytes, const nlohmann::json& cost) {
  nlohmann::json doc = {
      {"topology", {{"preset", "switch"}, {"gpus", 4}, {"bandwidth", "10GB/s"}}},
      {"network", {{"model", model}, {"alpha", "1us"}}},
      {"collectives",
       {{{"name", "ar"}, {"op", "all_reduce"}, {"algorithm", "ring"}, {"bytes", bytes}}}}};
  if (!cost.is_null()) doc["network"]["cost"] = cost;
  const Scenario s = parse_scenario(doc, ".");
  return run_scenario(s).outcomes[0].time_s;
}

// The error a ring under `cost` is refused with, or "no error".
std::string cost_error(const nlohmann::json& cost) {
  try {
    ring_time("ideal", 1024, cost);
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

// Every link kind gets `entry`, whatever kind the preset's links are.
nlohmann::json every_kind(const nlohmann::json& entry) {
  nlohmann::json links;
  for (const auto& k : all_link_kind_names()) links[k] = entry;
  return links;
}

}  // namespace

TEST_CASE("size curves interpolate in log(size) and hold flat beyond their ends", "[cost]") {
  const SizeCurve c({{1024, 1e9}, {1024 * 1024, 10e9}});
  CHECK(c.at(1) == 1e9);
  CHECK(c.at(1024) == 1e9);
  CHECK(c.at(32 * 1024) == Approx(5.5e9));  // 2^15 sits halfway between 2^10 and 2^20
  CHECK(c.at(1 << 30) == 10e9);
  CHECK_THROWS(SizeCurve({{10, 1.0}, {10, 2.0}}));
  CHECK_THROWS(SizeCurve({{10, 0.0}}));
}

TEST_CASE("each cost term adds to the ring's closed form exactly", "[cost]") {
  const std::int64_t n = 4 << 20;
  const double chunk = static_cast<double>(n) / 4, beta = 10e9;
  const int steps = 6;  // 2(K-1)
  for (const std::string model : {"ideal", "flow"}) {
    INFO(model);
    const double base = ring_time(model, n, nullptr);
    const double launch = 7e-6, overhead = 0.3e-6, latency = 2e-6, eff = 0.8;
    const nlohmann::json cost = {
        {"launch_s", launch},
        {"op_overhead_s", overhead},
        {"links", every_kind({{"efficiency", eff}, {"latency_s", latency}})}};
    const double expected = base + launch + (steps - 1) * overhead + steps * latency +
                            steps * chunk / beta * (1 / eff - 1);
    CHECK(ring_time(model, n, cost) == Approx(expected).margin(1e-11));
  }
}

TEST_CASE("an op's recorded start is when it moves data, after the overhead it paid", "[cost]") {
  // As a real run stamps its ops (after the wake-up), so that compare's steps and ops
  // set the same intervals side by side.
  const nlohmann::json doc = {
      {"topology", {{"preset", "switch"}, {"gpus", 3}, {"bandwidth", "10GB/s"}}},
      {"network",
       {{"model", "ideal"},
        {"alpha", "1us"},
        {"cost", {{"launch_s", 2e-6}, {"op_overhead_s", 3e-7}}}}},
      {"collectives",
       {{{"name", "ar"}, {"op", "all_reduce"}, {"algorithm", "ring"}, {"bytes", 3 << 20}}}}};
  const ScenarioResult r = run_scenario(parse_scenario(doc, "."));
  const Schedule& s = *r.schedules[0];
  const auto& ops = r.sim.tasks[0].ops;
  REQUIRE(ops.size() == s.size());
  const Time start = r.sim.tasks[0].start;
  for (OpId id = 0; id < s.size(); ++id) {
    Time ready = start + from_seconds(2e-6);  // the launch
    for (DepIndex d = s.dep_begin[id]; d < s.dep_begin[id + 1]; ++d)
      ready = std::max(ready, ops[s.deps[d]].end + from_seconds(3e-7));
    INFO("op " << id << " step " << s.ops[id].step);
    CHECK(ops[id].start == ready);  // one op with dependencies per rank and step: no queue
  }
}

TEST_CASE("a bandwidth curve sets each transfer's pace by its size", "[cost]") {
  const nlohmann::json cost = {{"bandwidth_curve", {{1024, 1e9}, {1 << 20, 10e9}}}};
  // 4 MiB: 1 MiB chunks, at the curve's top, which is the links' own 10 GB/s.
  CHECK(ring_time("ideal", 4 << 20, cost) == Approx(ring_time("ideal", 4 << 20, nullptr)));
  // 128 KiB: 32 KiB chunks at 5.5 GB/s instead of 10.
  const double chunk = 32 * 1024;
  CHECK(ring_time("ideal", 128 * 1024, cost) ==
        Approx(ring_time("ideal", 128 * 1024, nullptr) + 6 * (chunk / 5.5e9 - chunk / 10e9))
            .margin(1e-11));
}

TEST_CASE("reductions pace the transfers that reduce, for their own dtype only", "[cost]") {
  const std::int64_t n = 4 << 20;
  const double chunk = static_cast<double>(n) / 4;
  const double base = ring_time("ideal", n, nullptr);
  // Reduce-scatter's 3 steps reduce at 2 GB/s; all-gather's 3 copy at the link's 10.
  const double slow = base + 3 * (chunk / 2e9 - chunk / 10e9);
  CHECK(ring_time("ideal", n, {{"reduce", {{"float32.sum", {{1, 2e9}}}}}}) ==
        Approx(slow).margin(1e-11));
  CHECK(ring_time("ideal", n, {{"reduce", {{"any", {{1, 2e9}}}}}}) == Approx(slow).margin(1e-11));
  CHECK(ring_time("ideal", n, {{"reduce", {{"float64.sum", {{1, 2e9}}}}}}) == Approx(base));
  // Faster than the link: the link still sets the pace.
  CHECK(ring_time("ideal", n, {{"reduce", {{"any", {{1, 50e9}}}}}}) == Approx(base));
}

TEST_CASE("local ops cost their bytes at the local rates", "[cost]") {
  CostModel m;
  CHECK(local_op_time(m, 1 << 20, nullptr) == 0);
  m.local_copy = SizeCurve({{1, 1e9}});
  CHECK(to_seconds(local_op_time(m, 1000, nullptr)) == Approx(1e-6));
  const SizeCurve reduce({{1, 0.5e9}});
  CHECK(to_seconds(local_op_time(m, 1000, &reduce)) == Approx(2e-6));
}

TEST_CASE("a cost model's JSON round-trips and bad terms name their place", "[cost]") {
  const nlohmann::json cost = {
      {"launch_s", 5e-6},
      {"op_overhead_s", 2.9e-7},
      {"links", {{"nvlink", {{"efficiency", 0.824}, {"latency_s", 3.4e-6}}}}},
      {"reduce", {{"float32.sum", {{1024, 3e10}, {1 << 25, 1e10}}}}},
      {"local_copy", {{1, 2e10}}}};
  CostModel m;
  read_cost_model(JsonView(cost, "cost"), m);
  CHECK(cost_model_json(m) == cost);

  const auto error = cost_error;
  CHECK_THAT(error({{"links", {{"nvlnk", {{"efficiency", 0.5}}}}}}),
             Catch::Contains("network.cost.links.nvlnk") && Catch::Contains("not a link kind"));
  CHECK_THAT(error({{"links", {{"nvlink", {{"efficiency", 1.5}}}}}}),
             Catch::Contains("network.cost.links.nvlink.efficiency"));
  CHECK_THAT(error({{"bandwidth_curve", {{2048, 1e9}, {1024, 2e9}}}}),
             Catch::Contains("network.cost.bandwidth_curve[1][0]") && Catch::Contains("increase"));
  CHECK_THAT(error({{"reduce", {{"float32", {{1, 1e9}}}}}}),
             Catch::Contains("network.cost.reduce.float32"));
  CHECK_THAT(error({{"launch", 1e-6}}), Catch::Contains("network.cost"));
}

TEST_CASE("stated machine terms replace NCCL's defaults for the same quantity, never add",
          "[cost][nccl]") {
  const Topology t = load_topology_argument("dgx-h100", ".");
  const auto nvlink = static_cast<std::size_t>(LinkKind::NvLink);
  const auto ib = static_cast<std::size_t>(LinkKind::Ib);
  const double usable = nvlink_usable_fraction(gpu_arch(t, t.gpu_of_rank(0)));
  // NCCL's own ring/Simple entries, stated: the same costs as stating nothing.
  CostModel restated;
  restated.launch = from_seconds(nccl_base_latency_us(NcclAlgo::Ring, Protocol::Simple) * 1e-6);
  restated.stated.launch = true;
  restated.link(LinkKind::NvLink).latency =
      from_seconds(nccl_hop_latency_us(HopClass::NvLink, NcclAlgo::Ring, Protocol::Simple) * 1e-6);
  restated.link(LinkKind::NvLink).efficiency = usable;
  restated.stated.latency[nvlink] = restated.stated.efficiency[nvlink] = true;
  // Twice this machine's launch and network latency, a slower NVLink.
  CostModel slower = restated;
  slower.launch = restated.launch * 2;
  slower.link(LinkKind::Ib).latency =
      from_seconds(2 * nccl_hop_latency_us(HopClass::Net, NcclAlgo::Ring, Protocol::Simple) * 1e-6);
  slower.stated.latency[ib] = true;
  slower.link(LinkKind::NvLink).efficiency = 0.5;
  const auto restated_ptr = std::make_shared<const CostModel>(restated);
  const auto slower_ptr = std::make_shared<const CostModel>(slower);
  for (NcclAlgo a : kNcclAlgos)
    for (Protocol p : kProtocols) {
      INFO(name_of(a) << "/" << name_of(p));
      const auto d = protocol_cost(nullptr, p, a, t);
      const auto r = protocol_cost(restated_ptr, p, a, t);
      const auto s = protocol_cost(slower_ptr, p, a, t);
      CHECK(std::llabs(r->launch - d->launch) <= 1);  // 1 ps of rounding
      for (std::size_t k = 0; k < kLinkKindCount; ++k) {
        CHECK(std::llabs(r->links[k].latency - d->links[k].latency) <= 1);
        CHECK(r->links[k].efficiency == Approx(d->links[k].efficiency).epsilon(1e-12));
      }
      // Scaled, not added: NCCL's per-algorithm and per-protocol ratios kept.
      // The NVLink latency NVLS (once) and CollNetDirect (twice) pay per collective stays
      // NCCL's here (NVLink's is not stated); the rest doubles.
      const double nvlink_once =
          (a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree ? 1.0
           : a == NcclAlgo::CollNetDirect                 ? 2.0
                                                          : 0.0) *
          static_cast<double>(from_seconds(nccl_hop_latency_us(HopClass::NvLink, a, p) * 1e-6));
      CHECK(s->launch ==
            Approx(2.0 * (static_cast<double>(d->launch) - nvlink_once) + nvlink_once).margin(2));
      CHECK(s->links[ib].latency ==
            Approx(2.0 * static_cast<double>(d->links[ib].latency)).margin(2));
      CHECK(s->links[nvlink].efficiency ==
            Approx(0.5 * protocol_efficiency(p)).epsilon(1e-12));  // no NCCL share on top
    }
}

TEST_CASE("a bandwidth curve measured on one algorithm's transfers gives the others its last rate",
          "[cost]") {
  // 4 ranks on a 10 GB/s switch: a ring's transfers of a 16 MiB all-reduce are 4 MiB, a
  // naive one's 16 MiB; the curve reads 2 GB/s below 1 MiB and 8 GB/s from 64 MiB.
  const nlohmann::json curve = {{1 << 20, 2e9}, {64 << 20, 8e9}};
  const auto time = [&](const std::string& algorithm, const nlohmann::json& entry) {
    nlohmann::json doc = {
        {"topology", {{"preset", "switch"}, {"gpus", 4}, {"bandwidth", "10GB/s"}}},
        {"network", {{"model", "flow"}, {"cost", {{"links", every_kind(entry)}}}}},
        {"collectives",
         {{{"name", "ar"}, {"op", "all_reduce"}, {"algorithm", algorithm}, {"bytes", 16 << 20}}}}};
    return run_scenario(parse_scenario(doc, ".")).outcomes[0].time_s;
  };
  const nlohmann::json everyone = {{"bandwidth_curve", curve}};
  nlohmann::json ring_only = everyone;
  ring_only["bandwidth_curve_algorithms"] = {"ring"};
  const nlohmann::json flat = {{"bandwidth_curve", {{64 << 20, 8e9}}}};
  // The ring reads the curve as before; another algorithm the curve's last rate only.
  CHECK(time("ring", ring_only) == time("ring", everyone));
  CHECK(time("ring", ring_only) != time("ring", flat));
  CHECK(time("halving_doubling", ring_only) == time("halving_doubling", flat));
  CHECK(time("halving_doubling", ring_only) < time("halving_doubling", everyone));

  CostModel m;
  m.link(LinkKind::NvLink).bandwidth = SizeCurve({{1 << 20, 2e9}, {64 << 20, 8e9}});
  m.link(LinkKind::NvLink).curve_algorithms = {"ring"};
  const auto shared = std::make_shared<const CostModel>(m);
  CHECK(CostModel::for_algorithm(shared, "ring") == shared);  // nothing changes: no copy
  const auto other = CostModel::for_algorithm(shared, "nvls");
  CHECK(other->link(LinkKind::NvLink).bandwidth.size() == 1);
  CHECK(other->link(LinkKind::NvLink).bandwidth.at(1) == 8e9);
  // Written and read back; a list without a curve, or a name no algorithm has, is refused.
  CHECK(cost_model_json(m)["links"]["nvlink"]["bandwidth_curve_algorithms"] ==
        nlohmann::json{"ring"});
  const auto error = cost_error;
  CHECK_THAT(error({{"links", {{"nvlink", {{"bandwidth_curve_algorithms", {"ring"}}}}}}}),
             Catch::Contains("network.cost.links.nvlink.bandwidth_curve_algorithms") &&
                 Catch::Contains("there is none"));
  CHECK_THAT(
      error(
          {{"links",
            {{"nvlink", {{"bandwidth_curve", curve}, {"bandwidth_curve_algorithms", {"rign"}}}}}}}),
      Catch::Contains("bandwidth_curve_algorithms[0]") && Catch::Contains("did you mean \"ring\""));
  CHECK_THAT(
      error(
          {{"links",
            {{"nvlink", {{"bandwidth_curve", curve}, {"bandwidth_curve_algorithms", {"p2p"}}}}}}}),
      Catch::Contains("collsim runs them as \"direct\""));
}
