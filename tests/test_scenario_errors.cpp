// Bad input: one line naming the JSON path and what was expected.
#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_view.h"
#include "helpers.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"

using namespace collsim;
using collsim::test::error_of;

namespace {

std::string with_collective(const std::string& collective) {
  return R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "100GB/s"}, "collectives": [)" +
         collective + "]}";
}

}  // namespace

TEST_CASE("a good scenario has no error") {
  CHECK(error_of(with_collective(R"({"op": "all_reduce", "bytes": "1MiB"})")) == "no error");
}

TEST_CASE("malformed JSON names line and column") {
  const std::string e = error_of("{\n  \"topology\": \"dgx-h100\",\n  \"collectives\": [,]\n}");
  CHECK_THAT(e, Catch::StartsWith("scenario.json: malformed JSON at line 3, column 19"));
}

TEST_CASE("unknown fields suggest the nearest known one") {
  CHECK(error_of(with_collective(R"({"op": "all_reduce", "byts": "1MiB"})")) ==
        "collectives[0].byts: unknown field; did you mean \"bytes\"?");
  CHECK(error_of(R"({"topology": "dgx-h100", "colectives": []})") ==
        "colectives: unknown field; did you mean \"collectives\"?");
  CHECK(error_of(R"({"topology": "dgx-h100", "network": {"alfa": "5us"}, "collectives": []})") ==
        "network.alfa: unknown field; did you mean \"alpha\"?");
}

TEST_CASE("bad units and values name the path and the expectation") {
  CHECK(error_of(with_collective(R"({"op": "all_reduce", "bytes": -5})")) ==
        "collectives[0].bytes: expected a size like \"64MiB\", \"1GB\" or a byte count, got -5");
  CHECK(error_of(with_collective(R"({"op": "all_reduce", "bytes": "12 parsecs"})")) ==
        "collectives[0].bytes: expected a size like \"64MiB\", \"1GB\" or a byte count, got \"12 "
        "parsecs\"");
  CHECK(
      error_of(
          R"({"topology": "dgx-h100", "network": {"alpha": "5 furlongs"}, "collectives": [{"op": "all_reduce", "bytes": 64}]})") ==
      "network.alpha: expected a duration like \"5us\", \"1.5ms\" or \"100ns\", got \"5 "
      "furlongs\"");
  CHECK(error_of(with_collective(R"({"op": "all_reduce", "bytes": 6})")) ==
        "collectives[0].bytes: 6 bytes is not a whole number of float32 elements (4 bytes each)");
  CHECK(error_of(with_collective(R"({"op": "all_reduse", "bytes": 64})"))
            .starts_with(
                "collectives[0].op: unknown value \"all_reduse\"; did you mean \"all_reduce\"?"));
  CHECK(error_of(with_collective(R"({"op": "barrier", "bytes": 8})")) ==
        "collectives[0].bytes: a barrier carries no data: leave \"bytes\" out or make it 0");
  CHECK(error_of(with_collective(R"({"op": "barrier", "bytes": 0})")) == "no error");
  CHECK(error_of(with_collective(R"({"op": "scatter", "algorithm": "ring", "bytes": 64})")) ==
        "collectives[0].algorithm: no algorithm \"ring\" for scatter; available: binomial_tree, "
        "direct, auto, nccl");
}

TEST_CASE("zero or negative bandwidth") {
  for (const char* bw : {"0GB/s", "-3GB/s"}) {
    const std::string text =
        std::string(R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": ")") + bw +
        R"("}, "collectives": [{"op": "all_reduce", "bytes": 64}]})";
    CHECK(error_of(text) ==
          std::string("topology.bandwidth: expected a positive bandwidth like \"450GB/s\" or "
                      "\"400Gbps\", got \"") +
              bw + "\"");
  }
}

TEST_CASE("a link kind's efficiency is a share from a millionth to all of its rate") {
  // 1e-300 was taken, and the run then failed at the clock's end, naming no field.
  const auto with_efficiency = [](const char* e) {
    return std::string(R"({"topology": "dgx-h100", "network": {"model": "flow", "cost": {"links":
        {"nvlink": {"efficiency": )") +
           e + R"(}}}}, "collectives": [{"op": "all_reduce", "bytes": 64}]})";
  };
  for (const char* bad : {"1e-300", "0", "-0.5", "1.5"}) {
    INFO(bad);
    CHECK(error_of(with_efficiency(bad))
              .starts_with("network.cost.links.nvlink.efficiency: expected a share of the "
                           "bandwidth from 1e-6 to 1"));
  }
  for (const char* good : {"1e-6", "0.85", "1"})
    CHECK(error_of(with_efficiency(good)) == "no error");
}

TEST_CASE("ranks out of range, repeated, and unknown 'after'") {
  CHECK(error_of(with_collective(R"({"op": "all_reduce", "bytes": 64, "ranks": [0, 4]})")) ==
        "collectives[0].ranks[1]: expected an integer in 0..3, got 4");
  CHECK(error_of(with_collective(R"({"op": "all_reduce", "bytes": 64, "ranks": [1, 1]})")) ==
        "collectives[0].ranks[1]: rank 1 is listed twice");
  CHECK(
      error_of(with_collective(
          R"({"name": "grads", "op": "all_reduce", "bytes": 64}, {"op": "all_reduce", "bytes": 64, "after": ["grad"]})")) ==
      "collectives[1].after[0]: no earlier collective named \"grad\"; did you mean \"grads\"?");
}

TEST_CASE("a topology where two ranks cannot reach each other") {
  const std::string text = R"({
    "topology": {"nodes": [{"name": "g0", "kind": "gpu"}, {"name": "g1", "kind": "gpu"}, {"name": "g2", "kind": "gpu"}],
                 "links": [{"src": "g0", "dst": "g1", "bandwidth": "1GB/s", "kind": "nvlink"}]},
    "collectives": [{"op": "all_reduce", "bytes": 64}]})";
  CHECK(error_of(text) ==
        "topology: rank 0 (g0) cannot reach rank 2 (g2), which collectives[0] needs; every pair of "
        "ranks needs a "
        "directed path");
  // A subset that is connected is fine.
  const std::string subset = R"({
    "topology": {"nodes": [{"name": "g0", "kind": "gpu"}, {"name": "g1", "kind": "gpu"}, {"name": "g2", "kind": "gpu"}],
                 "links": [{"src": "g0", "dst": "g1", "bandwidth": "1GB/s", "kind": "nvlink"}]},
    "collectives": [{"op": "all_reduce", "bytes": 64, "ranks": [0, 1]}]})";
  CHECK(error_of(subset) == "no error");
}

TEST_CASE("missing scenario and topology files") {
  try {
    load_scenario("/nonexistent/scenario.json");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "/nonexistent/scenario.json: no such scenario file");
  }
  CHECK_THAT(
      error_of(
          R"({"topology": "no-such-cluster", "collectives": [{"op": "all_reduce", "bytes": 64}]})"),
      Catch::StartsWith("topology: no topology file \"no-such-cluster\"") &&
          Catch::Contains("dgx-h100"));
}

TEST_CASE("a default name an earlier collective or job took is said, not a missing name") {
  // It once read: collectives[1]: missing required field "name", an optional field.
  CHECK(error_of(with_collective(R"({"name": "all_reduce#1", "op": "all_reduce", "bytes": 64},
                                    {"op": "all_reduce", "bytes": 64})")) ==
        "collectives[1]: its default name \"all_reduce#1\" is taken by an earlier collective; "
        "give it a \"name\"");
  CHECK(error_of(with_collective(R"({"name": "x", "op": "all_reduce", "bytes": 64},
                                    {"name": "x", "op": "all_reduce", "bytes": 64})")) ==
        "collectives[1].name: another collective is already named \"x\"");
  // "x" stands for "x.dispatch" (a routed all-to-all's parts): the clash names it, where it
  // said "already named x" of a scenario with no "x".
  CHECK(error_of(with_collective(R"({"name": "x.dispatch", "op": "all_reduce", "bytes": 64},
                                    {"name": "x", "op": "all_reduce", "bytes": 64})")) ==
        "collectives[1].name: \"x\" is taken: a name before a dot stands for the collectives it "
        "starts (a routed all-to-all's \"x.dispatch\"), and \"x.dispatch\" is one");
  CHECK(error_of(R"({"topology": {"preset": "switch", "gpus": 8, "bandwidth": "100GB/s"},
                     "workload": [{"gradients": "1MiB", "compute": "1ms", "name": "job1",
                                   "ranks": [0, 1, 2, 3]},
                                  {"gradients": "1MiB", "compute": "1ms",
                                   "ranks": [4, 5, 6, 7]}]})") ==
        "workload[1]: its default name \"job1\" is taken by an earlier job; give it a \"name\"");
}

TEST_CASE("a topology whose GPUs name their host only in part is refused at the node left out") {
  // The GPUs left out sat in host -1, which the planners took for a server of its own.
  const auto topology = [](const std::string& third_host) {
    return R"({"topology": {"name": "t", "nodes": [
      {"name": "sw", "kind": "switch"},
      {"name": "g0", "kind": "gpu", "host": 0}, {"name": "g1", "kind": "gpu", "host": 0},
      {"name": "g2", "kind": "gpu")" +
           third_host + R"(}],
      "links": [{"src": "g0", "dst": "sw", "bandwidth": "10GB/s", "kind": "nvlink"},
                {"src": "g1", "dst": "sw", "bandwidth": "10GB/s", "kind": "nvlink"},
                {"src": "g2", "dst": "sw", "bandwidth": "10GB/s", "kind": "nvlink"}]},
      "collectives": [{"op": "all_reduce", "bytes": 64}]})";
  };
  CHECK(error_of(topology("")) ==
        "topology.nodes[3]: names no \"host\", while nodes[1] (\"g0\") does: give every GPU and "
        "NIC its host, or none (collsim then finds the servers from the links inside them)");
  CHECK(error_of(topology(R"(, "host": 1)")) == "no error");
}

TEST_CASE("a root on a collective without one is refused") {
  // It changed the schedule's digest, not its times, so compare refused a matching log.
  CHECK(error_of(with_collective(R"({"op": "all_reduce", "bytes": 64, "root": 2})")) ==
        "collectives[0].root: all_reduce has no root; only broadcast, reduce, gather and scatter "
        "do");
  for (const char* op : {"broadcast", "reduce", "gather", "scatter"})
    CHECK(error_of(with_collective(fmt::format(R"({{"op": "{}", "bytes": 64, "root": 2}})", op))) ==
          "no error");
}

TEST_CASE("a GPU placed twice, or a collective waited on twice, is refused where it is listed") {
  CHECK(error_of(R"({"topology": {"preset": "switch", "gpus": 2, "bandwidth": "100GB/s"},
                     "placement": ["gpu1", "gpu1"],
                     "collectives": [{"op": "all_reduce", "bytes": 64}]})") ==
        "placement[1]: GPU \"gpu1\" is listed twice");
  CHECK(error_of(with_collective(R"({"name": "a", "op": "all_reduce", "bytes": 64},
                                    {"op": "all_reduce", "bytes": 64, "after": ["a", "a"]})")) ==
        "collectives[1].after[1]: \"a\" is listed twice");
  // A routed all-to-all by its name and its combine's: two names, one collective, fine.
  CHECK(error_of(with_collective(
            R"({"name": "x", "op": "all_to_all", "ranks": [0, 1],
                "routing": {"bytes_per_token": 8, "matrix": [[0, 3], [5, 0]]}},
               {"op": "all_reduce", "bytes": 64, "after": ["x", "x.combine"]})")) == "no error");
}

TEST_CASE("a whole number written with a decimal point says how to write it") {
  // "got 1.0" read as if 1.0 were an integer.
  CHECK(error_of(with_collective(R"({"op": "broadcast", "bytes": 64, "root": 1.0})")) ==
        "collectives[0].root: expected an integer in 0..3, got 1.0: write it as 1, without a "
        "decimal point or exponent");
  CHECK(error_of(with_collective(R"({"op": "broadcast", "bytes": 64, "root": 1.5})")) ==
        "collectives[0].root: expected an integer in 0..3, got 1.5");
  // 2^64 - 1 is out of range, not wrapped to -1.
  CHECK(error_of(
            with_collective(R"({"op": "broadcast", "bytes": 64, "root": 18446744073709551615})")) ==
        "collectives[0].root: expected an integer in 0..3, got 18446744073709551615");
}
