// Calibration without real runs: the curve fit on synthetic samples, the file's round
// trip through apply_calibration, the pinning plan, and the host's memory as a capacity
// the flow model shares among concurrent transfers (against the closed form).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "validate/measure/calibrate.h"
#include "validate/measure/runner.h"

using namespace collsim;

namespace calibration_test {

// Samples of a sweep whose rate follows `rate(bytes)` exactly.
Sweep sweep_of(const std::string& name, double (*rate)(double)) {
  Sweep s(name);
  for (std::int64_t n = 256; n <= (64 << 20); n *= 2) {
    const double t = static_cast<double>(n) / rate(static_cast<double>(n));
    s.samples.push_back({n, t, t, t});
  }
  return s;
}

// Bandwidth of a copy costing 1 us plus n at 20 GB/s: rises with size, monotone.
double alpha_beta_rate(double n) {
  return n / (1e-6 + n / 20e9);
}

// One 2-rank collective of `bytes` on a 10 GB/s switch under `model`, with `cost`.
double two_rank_time(const std::string& model, const std::string& op, std::int64_t bytes,
                     const nlohmann::json& cost) {
  nlohmann::json doc = {
      {"topology", {{"preset", "switch"}, {"gpus", 2}, {"bandwidth", "10GB/s"}}},
      {"network", {{"model", model}, {"cost", cost}}},
      {"collectives", {{{"name", "c"}, {"op", op}, {"algorithm", "ring"}, {"bytes", bytes}}}}};
  return run_scenario(parse_scenario(doc, ".")).outcomes[0].time_s;
}

}  // namespace calibration_test

using namespace calibration_test;

TEST_CASE("calibration curve fit recovers a known curve and drops one outlying size",
          "[calibrate]") {
  Sweep s = sweep_of("one_way", alpha_beta_rate);
  fit_curve(s);
  for (const auto& p : s.samples) {
    CHECK(s.curve.at(p.bytes) == Approx(alpha_beta_rate(static_cast<double>(p.bytes))));
    CHECK(p.fit_s == Approx(p.time_s));
  }
  CHECK(s.max_residual_pct < 1e-9);
  CHECK_FALSE(s.poor);

  // One size measured 3x too slow (a descheduled rank): the curve keeps its neighbours'
  // shape there, the residual shows it, and the fit is flagged poor.
  Sweep noisy = sweep_of("one_way", alpha_beta_rate);
  auto& bad = noisy.samples[6];
  bad.time_s *= 3;
  fit_curve(noisy);
  const double truth = alpha_beta_rate(static_cast<double>(bad.bytes));
  const auto rate_at = [&](std::size_t i) {
    return alpha_beta_rate(static_cast<double>(noisy.samples[i].bytes));
  };
  CHECK(noisy.curve.at(bad.bytes) == Approx(truth).epsilon(0.15));
  CHECK(noisy.curve.at(noisy.samples[5].bytes) == Approx(rate_at(5)));  // neighbours kept
  CHECK(noisy.max_residual_pct > 50);  // measured 3x the time its neighbours imply
  CHECK(noisy.worst_bytes == bad.bytes);
  CHECK(noisy.poor);
}

TEST_CASE("calibration file round-trips through apply_calibration", "[calibrate]") {
  Calibration c;
  c.backend = "shm";
  c.device = "test cpu";
  c.date = "2026-12-01";
  c.pinning = plan_pinning(2, {0, 1}, true);
  c.sweeps = {sweep_of("one_way", alpha_beta_rate)};
  fit_curve(c.sweeps[0]);
  for (auto& k : c.model.links) k.bandwidth = c.sweeps[0].curve;
  c.model.op_overhead = from_seconds(0.29e-6);
  c.model.host_memory = SizeCurve({{1 << 20, 40e9}, {32 << 20, 21e9}});
  c.model.reduce.push_back({"float32.sum", SizeCurve({{1024, 9e9}, {64 << 20, 19e9}})});
  c.model.reduce_memory.push_back({"float32.sum", SizeCurve({{1 << 20, 30e9}, {32 << 20, 12e9}})});
  c.model.local_copy = c.sweeps[0].curve;
  const nlohmann::json file = calibration_json(c);
  CHECK(file["alpha_s"] == 0.0);
  CHECK(file["provenance"]["pinned"] == true);
  CHECK(file["provenance"]["backend"] == "shm");
  CHECK(file["provenance"]["samples"] == c.sweeps[0].samples.size());

  Scenario s =
      parse_scenario({{"topology", {{"preset", "switch"}, {"gpus", 2}, {"bandwidth", "10GB/s"}}},
                      {"network", {{"model", "flow"}, {"alpha", "5us"}}},
                      {"collectives", {{{"name", "c"}, {"op", "all_reduce"}, {"bytes", 1024}}}}},
                     ".");
  apply_calibration(s, nlohmann::json::parse(file.dump()), "cal.json");
  CHECK(s.network.alpha == 0);  // α lives in the overhead and the curve now
  const double top = 20e9 * (64 << 20) / (1e-6 * 20e9 + (64 << 20));
  CHECK(s.topology.link(0).bandwidth == Approx(top));
  REQUIRE(s.network.cost);
  const CostModel& m = *s.network.cost;
  CHECK(m.op_overhead == from_seconds(0.29e-6));
  CHECK(m.host_memory.at(32 << 20) == 21e9);
  REQUIRE(m.reduce_rate("float32", "sum"));
  CHECK(m.reduce_rate("float32", "sum")->at(64 << 20) == 19e9);
  CHECK(m.memory_for_reduce("float32", "sum")->at(32 << 20) == 12e9);
  CHECK(m.memory_for_reduce("float64", "sum") == &m.host_memory);  // none of its own
  for (const auto& k : m.links) {
    REQUIRE(k.bandwidth.sizes().size() == c.sweeps[0].curve.sizes().size());
    CHECK(k.bandwidth.at(4096) == Approx(alpha_beta_rate(4096)));
  }
  CHECK(m.local_copy.at(1 << 20) == Approx(alpha_beta_rate(1 << 20)));
}

TEST_CASE("pinning plan: one CPU per rank, round-robin and reported when ranks outnumber them",
          "[calibrate]") {
  const Pinning own = plan_pinning(2, {4, 6}, true);
  CHECK(own.cpus == std::vector<int>{4, 6});
  CHECK_FALSE(own.shared);
  CHECK_THAT(own.note, Catch::Contains("pinned one per CPU core (CPUs 4,6)"));
  const Pinning over = plan_pinning(3, {4, 6}, true);
  CHECK(over.cpus == std::vector<int>{4, 6, 4});
  CHECK(over.shared);
  CHECK_THAT(over.note, Catch::Contains("3 ranks on 2 CPUs") && Catch::Contains("share cores"));
  const Pinning loose = plan_pinning(3, {4, 6}, false);
  CHECK(loose.cpus == std::vector<int>{-1, -1, -1});
  CHECK_THAT(loose.note, Catch::Contains("not pinned"));
  const Pinning gpus = plan_pinning(2, {0, 1}, true, 1);
  CHECK(gpus.shared);
  CHECK_THAT(gpus.note, Catch::Contains("2 ranks on 1 GPU") && Catch::Contains("share GPUs"));
}

TEST_CASE("host memory: concurrent transfers on a host share its capacity (flow model)",
          "[calibrate]") {
  const std::int64_t n = 8 << 20;  // a 2-rank all-gather: both ranks copy n/2 at once
  const double half = static_cast<double>(n) / 2;
  // No capacity: each copy at the links' 10 GB/s.
  CHECK(two_rank_time("flow", "all_gather", n, nlohmann::json::object()) == Approx(half / 10e9));
  // 6 GB/s of memory shared by two copies: 3 GB/s each.
  const nlohmann::json mem = {{"host_memory", {{1, 6e9}}}};
  CHECK(two_rank_time("flow", "all_gather", n, mem) == Approx(half / 3e9));
  // Alone (a broadcast's single copy) a transfer gets the whole memory, capped by the link.
  CHECK(two_rank_time("flow", "broadcast", n, mem) == Approx(n / 6e9));
  CHECK(two_rank_time("flow", "broadcast", n, {{"host_memory", {{1, 50e9}}}}) == Approx(n / 10e9));
  // With a bandwidth curve (transfers stretched): 5 GB/s links, memory 6 GB/s for two.
  const nlohmann::json both = {{"bandwidth_curve", {{1, 5e9}}}, {"host_memory", {{1, 6e9}}}};
  CHECK(two_rank_time("flow", "all_gather", n, both) == Approx(half / 3e9));
  // The capacity follows the transfer size: 4 MiB copies read it at 4 MiB.
  const nlohmann::json curve = {{"host_memory", {{1 << 20, 40e9}, {4 << 20, 8e9}}}};
  CHECK(two_rank_time("flow", "all_gather", n, curve) == Approx(half / 4e9));
  // Reductions see the memory through their own curve: a 2-rank all-reduce's two
  // reduces share 4 GB/s (2 each), then its two copies share 6 (3 each).
  const nlohmann::json reduce_mem = {{"host_memory", {{1, 6e9}}},
                                     {"reduce_memory", {{"float32.sum", {{1, 4e9}}}}}};
  CHECK(two_rank_time("flow", "all_reduce", n, reduce_mem) == Approx(half / 2e9 + half / 3e9));
  // Another dtype's entry does not apply: the reduces share host_memory like copies.
  const nlohmann::json other = {{"host_memory", {{1, 6e9}}},
                                {"reduce_memory", {{"float64.sum", {{1, 4e9}}}}}};
  CHECK(two_rank_time("flow", "all_reduce", n, other) == Approx(2 * half / 3e9));
  // The ideal model has no contention by definition: it ignores the capacity.
  CHECK(two_rank_time("ideal", "all_gather", n, mem) == Approx(half / 10e9));
}

TEST_CASE("a calibration file with a misspelled or unknown key is refused, naming the nearest",
          "[calibrate]") {
  const auto error = [](const char* file) {
    Scenario s = parse_scenario(
        {{"topology", {{"preset", "switch"}, {"gpus", 2}, {"bandwidth", "10GB/s"}}},
         {"collectives", {{{"name", "c"}, {"op", "all_reduce"}, {"bytes", 1024}}}}},
        ".");
    try {
      apply_calibration(s, nlohmann::json::parse(file), "cal.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Once silently ignored: the scenario ran with its own alpha and bandwidths.
  CHECK(error(R"({"aplha_s": 1e-6})") == "cal.json:aplha_s: unknown field; did you mean \"alpha_s\"?");
  CHECK(error(R"({"bandwith_Bps": 1e9})") ==
        "cal.json:bandwith_Bps: unknown field; did you mean \"bandwidth_Bps\"?");
  CHECK(error(R"({"linkz": {}})") == "cal.json:linkz: unknown field; did you mean \"links\"?");
  CHECK(error(R"({"links": {"nvlink": {"bandwith_Bps": 1e9}}})") ==
        "cal.json:links.nvlink.bandwith_Bps: unknown field; did you mean \"bandwidth_Bps\"?");
  CHECK(error(R"({"reduce": {"flaot32.sum": [[1, 1e9]]}})") ==
        "cal.json:reduce.flaot32.sum: \"flaot32\" is not an element type; did you mean "
        "\"float32\"?");
  CHECK(error(R"({"reduce_memory": {"float32.summ": [[1, 1e9]]}})") ==
        "cal.json:reduce_memory.float32.summ: \"summ\" is not a reduction; did you mean \"sum\"?");
  // What collsim calibrate and calibrate --nccl-tests write beside the cost keys is known.
  CHECK(error(R"({"alpha_s": 0, "bandwidth_Bps": 1e9, "provenance": {}, "overhead": {},
                  "alpha_beta": {}, "sweeps": {}, "backend": "shm", "device": "cpu",
                  "date": "2026-01-01", "ranks": 2, "fit": {}, "reduce": {"any": [[1, 1e9]]}})") ==
        "no error");
  // Numbers in range: no negative or infinite time, no zero bandwidth.
  CHECK_THAT(error(R"({"alpha_s": -1})"), Catch::StartsWith("cal.json:alpha_s: expected a duration"));
  CHECK_THAT(error(R"({"launch_s": 1e300})"),
             Catch::StartsWith("cal.json:launch_s: expected a duration"));
  CHECK_THAT(error(R"({"bandwidth_curve": [[1024, 0]]})"),
             Catch::StartsWith("cal.json:bandwidth_curve[0][1]: expected a bandwidth"));
}

TEST_CASE("a per-kind bandwidth_Bps inline in network.cost sets the links, as in a calibration",
          "[calibrate]") {
  // It was accepted inline and silently ignored (the loader read it only from files).
  const nlohmann::json links = {{"links", {{"nvlink", {{"bandwidth_Bps", 5e9}}}}}};
  const double inline_s = two_rank_time("ideal", "all_reduce", 1 << 20, links);
  const double nominal_s = two_rank_time("ideal", "all_reduce", 1 << 20, nlohmann::json::object());
  CHECK(inline_s == Approx(2 * nominal_s));  // 5 GB/s where the switch says 10
  Scenario s =
      parse_scenario({{"topology", {{"preset", "switch"}, {"gpus", 2}, {"bandwidth", "10GB/s"}}},
                      {"network", {{"model", "ideal"}}},
                      {"collectives", {{{"name", "c"}, {"op", "all_reduce"}, {"bytes", 1024}}}}},
                     ".");
  apply_calibration(s, links, "cal.json");
  CHECK(s.topology.link(0).bandwidth == 5e9);
  CHECK(run_scenario(s).outcomes[0].time_s ==
        Approx(two_rank_time("ideal", "all_reduce", 1024, links)).epsilon(0));
  // Only the links of that kind: on a DGX the NVLink ones, not PCIe's or the NICs'.
  const Scenario dgx =
      parse_scenario({{"topology", "dgx-h100"},
                      {"network", {{"cost", links}}},
                      {"collectives", {{{"name", "c"}, {"op", "all_reduce"}, {"bytes", 1024}}}}},
                     ".");
  const Topology nominal =
      parse_scenario(
          {{"topology", "dgx-h100"}, {"collectives", {{{"op", "all_reduce"}, {"bytes", 4}}}}}, ".")
          .topology;
  int nvlinks = 0, others = 0;
  for (LinkId l = 0; l < static_cast<LinkId>(dgx.topology.links().size()); ++l) {
    const Link& link = dgx.topology.link(l);
    if (link.kind == LinkKind::NvLink) {
      ++nvlinks;
      CHECK(link.bandwidth == 5e9);
    } else {
      ++others;
      CHECK(link.bandwidth == nominal.link(l).bandwidth);
    }
  }
  CHECK(nvlinks > 0);
  CHECK(others > 0);
}

TEST_CASE("a calibration that describes none of the topology's links is refused", "[calibrate]") {
  // Fitted on NVLink and InfiniBand; applied to a switch of PCIe links only its launch
  // would change anything.
  const nlohmann::json other = {
      {"launch_s", 12e-6},
      {"links", {{"nvlink", {{"efficiency", 0.7}}}, {"ib", {{"efficiency", 0.9}}}}}};
  const auto on = [](const char* kind) {
    return parse_scenario(
        {{"topology",
          {{"nodes", {{{"name", "a"}, {"kind", "gpu"}}, {{"name", "b"}, {"kind", "gpu"}}}},
           {"links", {{{"src", "a"}, {"dst", "b"}, {"bandwidth", "16GB/s"}, {"kind", kind}}}}}},
         {"collectives", {{{"name", "c"}, {"op", "all_reduce"}, {"bytes", 1024}}}}},
        ".");
  };
  Scenario pcie = on("pcie");
  try {
    apply_calibration(pcie, other, "cal.json");
    FAIL("applied");
  } catch (const InputError& e) {
    CHECK_THAT(
        std::string(e.what()),
        Catch::StartsWith("cal.json:links: this calibration describes ib and nvlink links") &&
            Catch::Contains("has none of them"));
  }
  Scenario nvlink = on("nvlink");  // one of its kinds: the file describes these links
  apply_calibration(nvlink, other, "cal.json");
  CHECK(nvlink.network.cost->link(LinkKind::NvLink).efficiency == 0.7);
}
