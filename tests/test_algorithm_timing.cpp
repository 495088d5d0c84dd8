// The closed forms of docs/models.md for trees, pipelines and hierarchies, by simulation
// under the ideal model; traffic of the star algorithms; ring numerics.
#include <catch2/catch.hpp>
#include <cmath>

#include "helpers.h"
#include "replay/verify.h"

using namespace collsim;
using namespace collsim::test;

namespace {

constexpr double kAlpha = 5e-6;
constexpr double kSlack = 1e-9;  // picosecond rounding over a few hundred transfers

int ceil_log2(int k) {
  int l = 0;
  while ((1 << l) < k) ++l;
  return l;
}

double time_of(const char* algorithm, CollectiveOp op, int K, std::int64_t bytes, double beta,
               AlgorithmOptions opt = {}) {
  const Schedule s = generate(op, algorithm, shape_of(op, K, bytes / 4), opt);
  return simulated_seconds(s, make_switch_topology(K, beta, 0), kAlpha);
}

// Two-tier cluster: g GPUs per node on an NVSwitch (beta_in), and one NIC per GPU
// (beta_out) on a single leaf switch. Inside a node the NVSwitch path is shorter.
Topology two_tier(int nodes, int g, double beta_in, double beta_out) {
  Topology t;
  const NodeId leaf = t.add_node({"leaf", NodeKind::Leaf});
  for (int n = 0; n < nodes; ++n) {
    const NodeId sw = t.add_node({"nvswitch" + std::to_string(n), NodeKind::NvSwitch, -1, n});
    for (int i = 0; i < g; ++i) {
      const NodeId gpu = t.add_node({"gpu" + std::to_string(n * g + i), NodeKind::Gpu, -1, n});
      const NodeId nic = t.add_node({"nic" + std::to_string(n * g + i), NodeKind::Nic, -1, n});
      t.add_duplex(gpu, sw, beta_in, 0, LinkKind::NvLink);
      t.add_duplex(gpu, nic, beta_out, 0, LinkKind::Pcie);
      t.add_duplex(nic, leaf, beta_out, 0, LinkKind::Ib);
    }
  }
  t.assign_ranks();
  return t;
}

}  // namespace

TEST_CASE("dissemination barrier: ceil(log2 K) alpha under every network model") {
  for (const char* model : {"ideal", "flow", "packet"})
    for (int K : {1, 2, 3, 4, 5, 8, 13, 16, 31, 64}) {
      INFO(model << " K=" << K);
      const Schedule s =
          generate(CollectiveOp::Barrier, "dissemination", shape_of(CollectiveOp::Barrier, K, 0));
      CHECK(s.num_steps == ceil_log2(K));
      CHECK(std::fabs(simulated_seconds(s, make_switch_topology(K, 25e9, 0), kAlpha, model) -
                      ceil_log2(K) * kAlpha) < kSlack);
    }
}

TEST_CASE("dissemination barrier: each round leaves once the last one's signal has arrived") {
  // Links that take L to cross and no alpha: a signal crosses two links to the switch and
  // out, and a rank's next round waits for what it heard. The rounds all left at once under
  // ideal and flow (a signal without data overlapped nothing the next round reads), one
  // round's latency for all of them.
  const Time L = from_seconds(0.5e-6);
  for (const char* model : {"ideal", "flow", "packet"})
    for (int K : {2, 3, 5, 8, 13, 16}) {
      INFO(model << " K=" << K);
      const Schedule s =
          generate(CollectiveOp::Barrier, "dissemination", shape_of(CollectiveOp::Barrier, K, 0));
      CHECK(std::fabs(simulated_seconds(s, make_switch_topology(K, 25e9, L), 0, model) -
                      ceil_log2(K) * 2 * to_seconds(L)) < kSlack);
    }
}

TEST_CASE("binomial tree all-reduce: 2 ceil(log2 K) (alpha + N/beta)") {
  for (int K : {2, 3, 4, 5, 8, 13, 16, 31, 64}) {
    const std::int64_t bytes = 1 << 20;
    const double expected = 2.0 * ceil_log2(K) * (kAlpha + bytes / 25e9);
    INFO("K=" << K);
    CHECK(std::fabs(time_of("binomial_tree", CollectiveOp::AllReduce, K, bytes, 25e9) - expected) <
          kSlack);
  }
}

TEST_CASE("a tree's parent takes its two children at once: one latency per level") {
  // K = 3 on a switch whose links each take L to cross (no alpha): each of the double binary
  // tree's trees is a root with two children, moving N/2. The second child's reduction
  // waits for the first's bytes to leave, not to land (reductions commute; NCCL receives
  // from every child at once): up 2L + 2T, down 2L + T. Ordering the children one after the
  // other would pay the latency twice going up.
  const double L = 3e-6;
  for (std::int64_t bytes : {std::int64_t{4096}, std::int64_t{1} << 20, std::int64_t{64} << 20}) {
    const Schedule s = generate(CollectiveOp::AllReduce, "double_binary_tree",
                                shape_of(CollectiveOp::AllReduce, 3, bytes / 4));
    const double T = bytes / 2.0 / 25e9;
    INFO(bytes << " bytes");
    CHECK(simulated_seconds(s, make_switch_topology(3, 25e9, from_seconds(L)), 0) ==
          Approx(4 * L + 3 * T).margin(kSlack));
  }
}

TEST_CASE("what reads a parent's sum waits for every child's data, the far one's too") {
  // Child 0 is behind a link of 50 us, child 2 next to the parent: the second reduction
  // starts once the first's bytes have left and lands long before them; the parent's
  // forward (a copy of its sum to rank 2) must still wait for child 0's data.
  Topology t;
  const NodeId sw = t.add_node({"switch", NodeKind::NvSwitch});
  for (int g = 0; g < 3; ++g) {
    const NodeId gpu = t.add_node({"gpu" + std::to_string(g), NodeKind::Gpu});
    t.add_duplex(gpu, sw, 25e9, from_seconds(g == 0 ? 50e-6 : 0.0), LinkKind::NvLink);
  }
  t.assign_ranks();
  const std::int64_t count = 1 << 18;
  auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllReduce, 3, count), "test", {count});
  b.reduce({0, 0, 0}, {1, 0, 0}, count);
  b.next_step();
  b.reduce({2, 0, 0}, {1, 0, 0}, count);
  b.next_step();
  b.copy({1, 0, 0}, {2, 0, 0}, count);
  const Schedule s = b.finish();
  const auto r = simulate(s, t, 0);
  const auto& ops = r.tasks[0].ops;
  const double T = count * 4 / 25e9;
  CHECK(to_seconds(ops[1].start) == Approx(T).margin(kSlack));  // once op 0's bytes left
  CHECK(ops[1].end < ops[0].end);
  CHECK(ops[2].start >= ops[0].end);
  CHECK(to_seconds(ops[2].end) == Approx(50e-6 + 2 * T).margin(kSlack));
}

TEST_CASE(
    "docs/models.md: pipelined ring broadcast, K=8, 64 MB, 25 GB/s: S=1 17.96 ms, S=64 3.15 ms") {
  const std::int64_t bytes = 64'000'000;
  for (int S : {1, 2, 7, 64, 100}) {
    AlgorithmOptions opt;
    opt.segments = S;
    const double t = time_of("ring", CollectiveOp::Broadcast, 8, bytes, 25e9, opt);
    const Partition seg{bytes / 4, S};
    const double expected = (8 - 2 + S) * (kAlpha + seg.max_size() * 4 / 25e9);
    INFO("S=" << S);
    CHECK(std::fabs(t - expected) < kSlack);
    if (S == 1) CHECK(t * 1e3 == Approx(17.955).margin(1e-9));  // docs/models.md rounds it to 17.96
    if (S == 64) CHECK(t * 1e3 == Approx(3.15).margin(0.005));
  }
}

TEST_CASE("docs/models.md: ring vs binomial tree crossover near 235 KB at K=8, 5 us, 25 GB/s") {
  auto ring_minus_tree = [](std::int64_t bytes) {
    return time_of("ring", CollectiveOp::AllReduce, 8, bytes, 25e9) -
           time_of("binomial_tree", CollectiveOp::AllReduce, 8, bytes, 25e9);
  };
  std::int64_t lo = 4 * 1000, hi = 4 * 1'000'000;  // tree faster at lo, ring at hi
  REQUIRE(ring_minus_tree(lo) > 0);
  REQUIRE(ring_minus_tree(hi) < 0);
  while (hi - lo > 4 * 8) {
    const std::int64_t mid = (lo + hi) / 2 / 32 * 32;
    (ring_minus_tree(mid) > 0 ? lo : hi) = mid;
  }
  CHECK(static_cast<double>(hi) == Approx(235'294).epsilon(0.002));
}

TEST_CASE("halving-doubling on a power of two: 2 log2 K alpha + 2 (K-1)/K N/beta") {
  for (int K : {2, 4, 8, 32, 128}) {
    const std::int64_t bytes = std::int64_t{K} * 4096;
    const double expected = 2 * ceil_log2(K) * kAlpha + 2.0 * (K - 1) / K * bytes / 100e9;
    INFO("K=" << K);
    CHECK(std::fabs(time_of("halving_doubling", CollectiveOp::AllReduce, K, bytes, 100e9) -
                    expected) < kSlack);
  }
}

TEST_CASE("hierarchical all-reduce equals the sum of its levels") {
  const double beta_in = 450e9, beta_out = 50e9;
  for (auto [nodes, g] : {std::pair{2, 4}, std::pair{4, 8}, std::pair{3, 2}}) {
    const int K = nodes * g;
    const std::int64_t bytes = std::int64_t{K} * 4 * 1024;
    AlgorithmOptions opt;
    opt.levels = {{g, "ring", {}}, {nodes, "ring", {}}};
    const Schedule s = generate(CollectiveOp::AllReduce, "hierarchical",
                                shape_of(CollectiveOp::AllReduce, K, bytes / 4), opt);
    const double N = static_cast<double>(bytes);
    const double expected = 2 * (g - 1) * (kAlpha + N / (g * beta_in)) +
                            2 * (nodes - 1) * (kAlpha + (N / g) / (nodes * beta_out));
    INFO(nodes << " nodes x " << g);
    CHECK(std::fabs(simulated_seconds(s, two_tier(nodes, g, beta_in, beta_out), kAlpha) -
                    expected) < kSlack);
  }
}

TEST_CASE(
    "traffic: naive root moves (K-1)N each way, parameter server 2KN at the server and 2N per "
    "worker") {
  for (int K : {2, 5, 8}) {
    const std::int64_t count = 1000, N = count * 4;
    for (const char* algorithm : {"naive", "parameter_server"}) {
      const Schedule s =
          generate(CollectiveOp::AllReduce, algorithm, shape_of(CollectiveOp::AllReduce, K, count));
      std::vector<std::int64_t> sent(K), received(K);
      for (const Op& op : s.ops) {
        if (op.is_local()) continue;
        sent[op.src_rank] += s.bytes(op);
        received[op.dst_rank] += s.bytes(op);
      }
      INFO(algorithm << " K=" << K);
      CHECK(sent[0] == (K - 1) * N);
      CHECK(received[0] == (K - 1) * N);
      CHECK(sent[0] + received[0] ==
            2 * (K - 1) * N);  // the server serves K-1 workers: 2KN for K workers
      for (int w = 1; w < K; ++w) CHECK(sent[w] + received[w] == 2 * N);
    }
  }
}

TEST_CASE(
    "docs/models.md numerics: ring all-reduce of 8 x 4096 float32 differs from a sequential sum "
    "in "
    "about half "
    "the elements, and every rank agrees bitwise") {
  const Schedule s =
      generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, 8, 4096));
  const FloatNumerics n = float_numerics(s, 42);
  CHECK(n.elements == 4096);
  CHECK(n.replicas_identical);
  CHECK(n.differ_from_sequential > 4096 * 0.3);
  CHECK(n.differ_from_sequential < 4096 * 0.7);
  // A tree reduces in a different order again, and also agrees across ranks.
  CHECK(float_numerics(generate(CollectiveOp::AllReduce, "binomial_tree", s.shape), 42)
            .replicas_identical);
}
