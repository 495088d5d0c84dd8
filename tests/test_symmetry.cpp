// Symmetry: a schedule folded by a turn of its ranks is what fold_by_rotation reads off
// the full schedule, and playing the fold gives the full run's figures bit for bit;
// where the turn breaks (unequal chunks, a slow link, a second switch, a tree) nothing
// is folded.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "plan/plan.h"
#include "same_traffic.h"
#include "schedule/generators/channels.h"
#include "schedule/quotient.h"
#include "simulate/run_scenario.h"
#include "simulate/streamed.h"
#include "simulate/symmetric.h"

using namespace collsim;
using namespace collsim::test;

namespace symmetry_test {

constexpr CollectiveOp kRingOps[] = {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter,
                                     CollectiveOp::AllGather};

// `offsets`: whether the ranges each op moves must agree too (a widened fold keeps its
// representative's ranges on every turn: what moves does not change when).
void require_same_quotient(const QuotientSchedule& a, const QuotientSchedule& b,
                           bool offsets = true) {
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    INFO("op " << i);
    CHECK(a.ops[i].src_rank == b.ops[i].src_rank);
    CHECK(a.ops[i].dst_rank == b.ops[i].dst_rank);
    if (offsets) {
      CHECK(a.ops[i].src_offset == b.ops[i].src_offset);
      CHECK(a.ops[i].dst_offset == b.ops[i].dst_offset);
    }
    CHECK(a.ops[i].count == b.ops[i].count);
    CHECK(a.ops[i].step == b.ops[i].step);
    CHECK(a.ops[i].kind == b.ops[i].kind);
    CHECK(a.ops[i].channel == b.ops[i].channel);
  }
  CHECK(a.dep_begin == b.dep_begin);
  CHECK(a.deps == b.deps);
  CHECK(a.num_steps == b.num_steps);
  CHECK(a.period == b.period);
}

void require_same_run(const StreamedResult& full, const StreamedResult& folded) {
  REQUIRE(folded.end == full.end);
  CHECK(folded.ops_start == full.ops_start);
  CHECK(folded.ops_end == full.ops_end);
  CHECK(folded.ops == full.ops);
  CHECK(folded.steps == full.steps);
  require_same_traffic(full, folded);
}

QuotientSchedule ring_fold(int K) {
  const auto q = find_algorithm(CollectiveOp::AllReduce, "ring")
                     ->quotient(shape_of(CollectiveOp::AllReduce, K, 64 * std::int64_t{K}), {});
  REQUIRE(q);
  return *q;
}

// A network model with a 1 us start-up and 4 KiB packets.
NetworkParams network_params(NetworkModelKind kind) {
  NetworkParams params;
  params.model = kind;
  params.alpha = from_seconds(1e-6);
  params.packet_bytes = 4096;
  return params;
}

std::vector<NodeId> rank_gpus(const Topology& t, int K) {
  std::vector<NodeId> gpus;
  for (int r = 0; r < K; ++r) gpus.push_back(t.gpu_of_rank(r));
  return gpus;
}

}  // namespace symmetry_test

using namespace symmetry_test;

TEST_CASE("every algorithm's own fold is the one read off its full schedule", "[symmetry]") {
  int folds = 0;
  for (const AlgorithmEntry& e : algorithm_catalogue()) {
    if (!e.quotient) continue;
    ++folds;
    for (int K : {2, 3, 6, 11, 32})
      for (int channels : {1, 2, 3}) {
        if (channels > 1 && !e.takes("channels")) continue;
        INFO(e.algorithm << " " << name_of(e.op) << " K=" << K << " channels=" << channels);
        AlgorithmOptions o;
        o.channels = channels;
        for (std::int64_t count :
             {12 * std::int64_t{K}, 12 * std::int64_t{K} + 5, std::int64_t{1}}) {
          const CollectiveShape shape = shape_of(e.op, K, count);
          const auto own = e.quotient(shape, o);
          if (!own) continue;  // not symmetric for this shape: the full run is timed instead
          std::string why;
          const auto read = fold_by_rotation(e.generate(shape, o), own->period, &why);
          INFO("count " << count << ": " << why);
          REQUIRE(read);
          require_same_quotient(*own, *read);
        }
      }
  }
  CHECK(folds >= 5);  // the filter found the ring's three and the all-to-alls
}

TEST_CASE(
    "a fold by one rank, widened to a turn of several, is the one read off the full "
    "schedule",
    "[symmetry]") {
  int widened = 0;
  for (const AlgorithmEntry& e : algorithm_catalogue()) {
    if (!e.quotient) continue;
    for (int K : {4, 6, 12, 16})
      for (int channels : {1, 3}) {
        if (channels > 1 && !e.takes("channels")) continue;
        AlgorithmOptions o;
        o.channels = channels;
        const CollectiveShape shape = shape_of(e.op, K, 12 * std::int64_t{K});
        const auto own = e.quotient(shape, o);
        REQUIRE(own);
        const Schedule full = e.generate(shape, o);
        for (int period = 2; period < K; ++period) {
          if (K % period != 0) continue;
          INFO(e.algorithm << " " << name_of(e.op) << " K=" << K << " channels=" << channels
                           << " period " << period);
          std::string why;
          const auto read = fold_by_rotation(full, period, &why);
          INFO(why);
          REQUIRE(read);
          const QuotientSchedule wide = widen(*own, period);
          require_same_quotient(wide, *read, false);
          CHECK(wide.full_size() == full.size());
          ++widened;
        }
      }
  }
  CHECK(widened >= 30);
  CHECK_THROWS_AS(widen(*find_algorithm(CollectiveOp::AllReduce, "ring")
                             ->quotient(shape_of(CollectiveOp::AllReduce, 6, 72), {}),
                        4),
                  std::invalid_argument);
}

TEST_CASE("a ring's own fold is the one read off its full schedule", "[symmetry]") {
  for (CollectiveOp op : kRingOps) {
    const AlgorithmEntry* e = find_algorithm(op, "ring");
    REQUIRE(e);
    REQUIRE(e->quotient);
    for (int K : {1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64}) {
      INFO(name_of(op) << " K=" << K);
      const AlgorithmOptions o;
      const CollectiveShape even = shape_of(op, K, 6 * std::int64_t{K});
      const auto own = e->quotient(even, o);
      std::string why;
      const auto read = fold_by_rotation(e->generate(even, o), 1, &why);
      INFO(why);
      REQUIRE(read);
      REQUIRE(own);
      require_same_quotient(*own, *read);
      CHECK(own->full_size() == e->generate(even, o).size());
      if (K == 1) continue;  // no ops: nothing can be uneven
      // Unequal chunks turn into other counts: neither fold exists.
      const CollectiveShape uneven = shape_of(op, K, 6 * std::int64_t{K} + 1);
      CHECK(!e->quotient(uneven, o));
      CHECK(!fold_by_rotation(e->generate(uneven, o), 1));
      // Unequal chunks that repeat every p chunks (6K + K/p elements: chunk i starts at
      // floor(i count / K)) fold by a turn of p ranks, and of no fewer; in channels too.
      for (int p = 2; p < K; ++p) {
        if (K % p != 0) continue;
        const CollectiveShape periodic = shape_of(op, K, 6 * std::int64_t{K} + K / p);
        for (int channels : {1, 3}) {
          INFO("period " << p << ", " << channels << " channel(s)");
          AlgorithmOptions split = o;
          split.channels = channels;
          const auto own_periodic = e->quotient(periodic, split);
          const auto read_periodic = fold_by_rotation(e->generate(periodic, split), p, &why);
          INFO(why);
          REQUIRE(own_periodic);
          REQUIRE(read_periodic);
          CHECK(own_periodic->period == p);
          require_same_quotient(*own_periodic, *read_periodic);
          const int fewer = p % 2 == 0 ? p / 2 : 1;  // a divisor of p below it
          CHECK(!fold_by_rotation(e->generate(periodic, split), fewer));
        }
      }
      // In channels, each its lane of every chunk, the ranks in order.
      for (int channels : {2, 3}) {
        AlgorithmOptions split = o;
        split.channels = channels;
        const auto own_split = e->quotient(even, split);
        const auto read_split = fold_by_rotation(e->generate(even, split), 1, &why);
        INFO(channels << " channels: " << why);
        REQUIRE(own_split);
        REQUIRE(read_split);
        require_same_quotient(*own_split, *read_split);
      }
      // A channel in the other direction is the same turned by one rank too.
      AlgorithmOptions ordered = o;
      ordered.channels = 2;
      ordered.orders = {std::vector<int>(K), std::vector<int>(K)};
      for (int r = 0; r < K; ++r) ordered.orders[0][r] = ordered.orders[1][K - 1 - r] = r;
      const auto own_ordered = e->quotient(even, ordered);
      const auto read_ordered = fold_by_rotation(e->generate(even, ordered), 1, &why);
      INFO("identity and reversed orders: " << why);
      REQUIRE(own_ordered);
      REQUIRE(read_ordered);
      require_same_quotient(*own_ordered, *read_ordered);
      // An order no turn below K maps onto itself: no fold.
      if (K >= 4) {
        AlgorithmOptions odd = o;
        odd.orders = {std::vector<int>(K)};
        std::iota(odd.orders[0].begin(), odd.orders[0].end(), 0);
        std::swap(odd.orders[0][1], odd.orders[0][2]);
        CHECK(!e->quotient(even, odd));
        CHECK(!fold_by_rotation(e->generate(even, odd), 1));
      }
    }
  }
}

TEST_CASE("rings in rail orders fold by a turn of two hosts, and widen from there", "[symmetry]") {
  // Channel c enters even hosts at rail c and odd hosts the other way round
  // (channels.h): the same turned by two hosts, not by one.
  for (CollectiveOp op : kRingOps) {
    const AlgorithmEntry* e = find_algorithm(op, "ring");
    for (const auto& [hosts, gpus, channels] :
         {std::tuple{4, 2, 2}, std::tuple{4, 4, 4}, std::tuple{6, 2, 1}, std::tuple{8, 2, 3},
          std::tuple{4, 3, 2}}) {
      const int K = hosts * gpus;
      INFO(name_of(op) << " " << hosts << " hosts of " << gpus << " GPUs, " << channels
                       << " channels");
      std::vector<int> host_of, rail_of;
      for (int r = 0; r < K; ++r) host_of.push_back(r / gpus), rail_of.push_back(r % gpus);
      AlgorithmOptions o;
      o.channels = channels;
      o.orders = rail_orders(host_of, rail_of, channels);
      REQUIRE(!o.orders.empty());
      const CollectiveShape shape = shape_of(op, K, 6 * std::int64_t{K} * channels);
      const auto own = e->quotient(shape, o);
      REQUIRE(own);
      CHECK(own->period == 2 * gpus);
      const Schedule full = e->generate(shape, o);
      std::string why;
      const auto read = fold_by_rotation(full, own->period, &why);
      INFO(why);
      REQUIRE(read);
      require_same_quotient(*own, *read);
      CHECK(!fold_by_rotation(full, gpus));  // one host's turn does not map it
      for (int period = 2 * own->period; period < K; period += own->period) {
        if (K % period != 0) continue;
        INFO("widened to " << period);
        const auto wide_read = fold_by_rotation(full, period, &why);
        REQUIRE(wide_read);
        require_same_quotient(e->fold_at(shape, o, *own, period), *wide_read);
      }
    }
  }
}

TEST_CASE("an all-to-all folds where every rank sends alike, and only there", "[symmetry]") {
  const int K = 6;
  auto circulant = std::make_shared<std::vector<std::int64_t>>(K * K);
  for (int src = 0; src < K; ++src)
    for (int dst = 0; dst < K; ++dst) (*circulant)[src * K + dst] = 10 + ((dst - src + K) % K) * 3;
  auto skewed = std::make_shared<std::vector<std::int64_t>>(*circulant);
  (*skewed)[2 * K + 5] += 1;  // one pair sends one element more
  auto even = std::make_shared<std::vector<std::int64_t>>(K * K, 7);
  for (const char* name : {"direct", "pairwise"}) {
    INFO(name);
    const AlgorithmEntry& e = *find_algorithm(CollectiveOp::AllToAll, name);
    const bool direct = std::string_view(name) == "direct";
    CollectiveShape shape = shape_of(CollectiveOp::AllToAll, K, 0);
    // Rounds of different sizes: pairwise folds them; direct, which puts them on a link
    // together, only folds equal blocks (the flow model's sums, symmetric.h).
    for (const auto& matrix : {circulant, even}) {
      shape.matrix = matrix;
      const auto own = e.quotient(shape, {});
      const auto read = fold_by_rotation(e.generate(shape, {}), 1);
      REQUIRE(read);
      if (direct && matrix == circulant) {
        CHECK(!own);
        continue;
      }
      REQUIRE(own);
      require_same_quotient(*own, *read);
    }
    shape.matrix = skewed;
    CHECK(!e.quotient(shape, {}));
    CHECK(!fold_by_rotation(e.generate(shape, {}), 1));
    // Said as what breaks it: the routing's sizes, not chunks or channel orders.
    CollectiveSpec spec;
    spec.algorithm = name;
    spec.shape = shape;
    std::string why;
    CHECK_FALSE(run_quotient(spec, why));
    CHECK_THAT(why, Catch::StartsWith(std::string(name) + "'s sizes come from its routing") &&
                        Catch::Contains(direct ? "every pair of ranks sends the same"
                                               : "a circulant matrix"));
  }
}

TEST_CASE("schedules a turn does not map onto themselves are not folded", "[symmetry]") {
  std::string why;
  const auto tree =
      generate(CollectiveOp::Broadcast, "binomial_tree", shape_of(CollectiveOp::Broadcast, 8, 64));
  CHECK(!fold_by_rotation(tree, 1, &why));
  CHECK(why.find("no image") != std::string::npos);
  // One op moved to another step: its turned images no longer match it.
  Schedule ring =
      generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, 4, 64));
  REQUIRE(fold_by_rotation(ring, 1));
  Schedule broken = ring;
  broken.ops[5].count -= 1;
  CHECK(!fold_by_rotation(broken, 1));
  // A dependency dropped from one op only.
  Schedule fewer = ring;
  const OpId last = fewer.size() - 1;
  fewer.deps.erase(fewer.deps.begin() + static_cast<std::ptrdiff_t>(fewer.dep_begin[last]));
  fewer.dep_begin[last + 1] -= 1;
  CHECK(!fold_by_rotation(fewer, 1, &why));
  CHECK(why.find("waits on other ops") != std::string::npos);
  CHECK(!fold_by_rotation(ring, 3));  // 3 does not divide 4
}

TEST_CASE("a folded run is the full run, bit for bit, on every model that times by links",
          "[symmetry]") {
  auto cost = std::make_shared<CostModel>();
  cost->launch = from_seconds(7e-6);
  cost->op_overhead = from_seconds(0.4e-6);
  cost->nccl_floor = from_seconds(9e-6);
  cost->link(LinkKind::NvLink).efficiency = 0.8;
  cost->link(LinkKind::NvLink).latency = from_seconds(0.3e-6);
  cost->link(LinkKind::NvLink).bandwidth = SizeCurve({{1024, 20e9}, {64 << 10, 45e9}});
  cost->reduce.push_back({"float32.sum", SizeCurve({{1024, 9e9}, {64 << 20, 19e9}})});
  for (NetworkModelKind kind :
       {NetworkModelKind::Ideal, NetworkModelKind::Flow, NetworkModelKind::Packet}) {
    if (!info_of(kind).times_by_links) continue;
    NetworkParams params;
    params.model = kind;
    params.alpha = from_seconds(2e-6);
    params.packet_bytes = 4096;
    for (const AlgorithmEntry& e : algorithm_catalogue()) {
      if (!e.quotient) continue;  // every algorithm's own fold is played against its full run
      const CollectiveOp op = e.op;
      for (int K : {2, 3, 5, 8, 16})
        for (int channels : {1, 3})
          for (const std::shared_ptr<const CostModel>& c :
               {std::shared_ptr<const CostModel>{}, std::shared_ptr<const CostModel>(cost)}) {
            INFO(name_of(kind) << " " << name_of(op) << " K=" << K << " channels " << channels
                               << " cost " << (c != nullptr));
            if (channels > 1 && !e.takes("channels")) continue;
            AlgorithmOptions o;
            o.channels = channels;
            const Topology topo = make_switch_topology(K, 50e9, from_seconds(1e-7));
            // Equal blocks, and (where the fold allows it) unequal ones: all-to-all rounds;
            // a ring's chunks in two sizes, alike every two ranks (2048K + K/2 elements).
            const std::int64_t count = 2048 * std::int64_t{K} + (op == CollectiveOp::AllToAll ? 5
                                                                 : e.algorithm == "ring" ? K / 2
                                                                                         : 0);
            const CollectiveShape shape = shape_of(op, K, count);
            const StreamedCollective collective{rank_gpus(topo, K), c};
            Router r1(topo);
            auto m1 = make_network_model(params, topo, r1);
            const StreamedResult full =
                simulate_streamed(topo, r1, *m1, collective, [&] { return e.generate(shape, o); });
            Router r2(topo);
            auto m2 = make_network_model(params, topo, r2);
            const auto own = e.quotient(shape, o);
            // Rings of more than two ranks in two chunk sizes fold by two ranks.
            if (e.algorithm == "ring" && K % 2 == 0 && K > 2) REQUIRE(own);
            if (!own) continue;  // direct in unequal blocks: not folded
            REQUIRE(fold_problem(topo, r2, collective, kind, *own).empty());
            const StreamedResult folded = simulate_folded(topo, r2, *m2, kind, collective, *own);
            require_same_run(full, folded);
            CHECK(folded.events < full.events);
          }
    }
  }
}

TEST_CASE("a network a turn of the ranks does not map onto itself is not folded", "[symmetry]") {
  const QuotientSchedule ring4 = ring_fold(4);
  const auto problem = [&](const Topology& t, std::shared_ptr<const CostModel> cost,
                           NetworkModelKind kind, const QuotientSchedule& q) {
    Router router(t);
    return fold_problem(t, router, {rank_gpus(t, q.shape.ranks), std::move(cost)}, kind, q);
  };
  Topology slow = make_switch_topology(4, 50e9, from_seconds(1e-7));
  const auto gpus = rank_gpus(slow, 4);
  for (LinkId l = 0; l < static_cast<LinkId>(slow.links().size()); ++l)
    if (slow.link(l).src == gpus[2]) slow.set_bandwidth(l, 25e9);  // one slow link
  CHECK_THAT(problem(slow, nullptr, NetworkModelKind::Ideal, ring4), Catch::Contains("differ"));
  Topology slow_down = make_switch_topology(4, 50e9, from_seconds(1e-7));
  for (LinkId l = 0; l < static_cast<LinkId>(slow_down.links().size()); ++l)
    if (slow_down.link(l).dst == gpus[3]) slow_down.set_bandwidth(l, 25e9);  // one way only
  CHECK_THAT(problem(slow_down, nullptr, NetworkModelKind::Ideal, ring4),
             Catch::Contains("differ"));
  // Two ranks on one GPU: its overhead queue is not turned onto another's.
  Topology shared = make_switch_topology(4, 50e9, from_seconds(1e-7));
  {
    Router router(shared);
    const std::vector<NodeId> twice{gpus[0], gpus[1], gpus[1], gpus[3]};
    CHECK_THAT(fold_problem(shared, router, {twice, nullptr}, NetworkModelKind::Ideal, ring4),
               Catch::Contains("share a GPU"));
  }

  // Under flow, a host's memory is shared by its GPUs' transfers: not a link of an orbit.
  auto memory = std::make_shared<CostModel>();
  memory->host_memory = SizeCurve({{1 << 20, 40e9}});
  const Topology plain = make_switch_topology(4, 50e9, from_seconds(1e-7));
  CHECK_THAT(problem(plain, memory, NetworkModelKind::Flow, ring4), Catch::Contains("memory"));
  CHECK(problem(plain, memory, NetworkModelKind::Ideal, ring4).empty());

  // Servers on rail leaves: a turn by one rank moves a GPU between NVLink and the network;
  // a turn by a server, here, sends both turns of a transfer up one leaf's one uplink.
  ClusterParams p;
  p.nodes = 2;
  p.server.gpus = 4;
  const Topology cluster = make_cluster_topology(p);
  CHECK_THAT(problem(cluster, nullptr, NetworkModelKind::Ideal, ring_fold(8)),
             Catch::Contains("differ in length"));
  CHECK_THAT(problem(cluster, nullptr, NetworkModelKind::Ideal, widen(ring_fold(8), 4)),
             Catch::Contains("do not map leaf3.0->spine0 onto one link each"));

  const Topology fine = make_switch_topology(4, 50e9, from_seconds(1e-7));
  CHECK(problem(fine, nullptr, NetworkModelKind::Flow, ring4).empty());
  CHECK(problem(fine, nullptr, NetworkModelKind::Flow, widen(ring4, 2)).empty());
  // Only some of the switch's GPUs in the collective: still alike.
  const Topology bigger = make_switch_topology(8, 50e9, from_seconds(1e-7));
  CHECK(problem(bigger, nullptr, NetworkModelKind::Flow, ring4).empty());
}

TEST_CASE("servers on rail leaves fold by a turn of whole servers or leaves, bit for bit",
          "[symmetry]") {
  // Wherever a fold is found, its run is the full run's; where servers fill their leaves
  // evenly and one spine routes every pair, one is found, a server's GPUs or a leaf's
  // servers per representative group.
  int folded = 0;
  // Overheads on each rank's queue and costs per link kind, as NCCL's protocols add them.
  auto cost = std::make_shared<CostModel>();
  cost->launch = from_seconds(5e-6);
  cost->op_overhead = from_seconds(0.7e-6);
  cost->link(LinkKind::NvLink).efficiency = 0.8;
  cost->link(LinkKind::Ib).latency = from_seconds(2e-6);
  cost->link(LinkKind::Ib).efficiency = 0.9;
  for (NetworkModelKind kind :
       {NetworkModelKind::Ideal, NetworkModelKind::Flow, NetworkModelKind::Packet}) {
    const NetworkParams params = network_params(kind);
    // nodes, GPUs a node, leaf radix (servers a leaf: radix / 2), spines, and whether a
    // fold must be found (1), must not (0), or may be (-1; then it must be exact).
    for (const auto& [nodes, gpus, radix, spines, expect] :
         {std::tuple{4, 2, 4, 1, 1}, std::tuple{6, 2, 4, 1, 1}, std::tuple{8, 2, 4, 1, 1},
          std::tuple{4, 1, 64, 1, 1}, std::tuple{3, 2, 4, 1, 0}, std::tuple{2, 4, 64, 1, 0},
          std::tuple{4, 2, 4, 2, -1}}) {
      ClusterParams p;
      p.nodes = nodes;
      p.server.gpus = gpus;
      p.radix = radix;
      p.spines = spines;
      const Topology t = make_cluster_topology(p);
      const int K = nodes * gpus;
      for (const AlgorithmEntry& e : algorithm_catalogue()) {
        if (!e.quotient) continue;
        const CollectiveShape shape = shape_of(e.op, K, 4096 * std::int64_t{K});
        const auto own = e.quotient(shape, {});
        REQUIRE(own);
        const bool costed = e.op == CollectiveOp::AllReduce;  // the others plain
        INFO(name_of(kind) << " " << e.algorithm << " " << name_of(e.op) << " on " << t.name
                           << " spines " << spines << (costed ? " with costs" : ""));
        const StreamedCollective collective{rank_gpus(t, K),
                                            costed ? cost : std::shared_ptr<CostModel>{}};
        Router r1(t);
        std::string why;
        const auto fold = fold_for_network(t, r1, collective, kind, *own, why);
        INFO("not folded: " << why);
        if (kind == NetworkModelKind::Packet) {  // folded by one rank only
          CHECK(fold.has_value() == (expect == 1 && gpus == 1));
          if (!fold) CHECK_THAT(why, Catch::Contains("packet model"));
        } else if (expect >= 0) {
          CHECK(fold.has_value() == (expect == 1));
        }
        if (!fold) continue;
        ++folded;
        // The least turn that maps the network onto itself: one rank on a leaf alone, else
        // a leaf's servers.
        if (expect == 1) CHECK(fold->period == (gpus == 1 ? 1 : gpus * radix / 2));
        auto m1 = make_network_model(params, t, r1);
        const StreamedResult folded_run = simulate_folded(t, r1, *m1, kind, collective, *fold);
        Router r2(t);
        auto m2 = make_network_model(params, t, r2);
        const StreamedResult full =
            simulate_streamed(t, r2, *m2, collective, [&] { return e.generate(shape, {}); });
        require_same_run(full, folded_run);
      }
    }
  }
  CHECK(folded >= 30);
}

TEST_CASE("clusters with several spines fold under D-mod-k routing, bit for bit", "[symmetry]") {
  // ECMP's hash sends the turns of a transfer over spines in no common pattern; D-mod-k
  // picks the spine by the destination's rank, so ranks a multiple of the spines apart
  // route alike, and a leaf's servers turn onto the next leaf's.
  int folded = 0;
  for (NetworkModelKind kind : {NetworkModelKind::Ideal, NetworkModelKind::Flow}) {
    NetworkParams params;
    params.model = kind;
    params.alpha = from_seconds(1e-6);
    params.routing = RoutingPolicy::DestinationModK;
    // nodes, GPUs a node, spines (radix 8: four servers a leaf, four uplinks)
    for (const auto& [nodes, gpus, spines] :
         {std::tuple{8, 2, 2}, std::tuple{8, 2, 4}, std::tuple{12, 1, 4}, std::tuple{16, 2, 4}}) {
      ClusterParams p;
      p.nodes = nodes;
      p.server.gpus = gpus;
      p.radix = 8;
      p.spines = spines;
      const Topology t = make_cluster_topology(p);
      const int K = nodes * gpus;
      for (CollectiveOp op : kRingOps) {
        const AlgorithmEntry& e = *find_algorithm(op, "ring");
        const CollectiveShape shape = shape_of(op, K, 2048 * std::int64_t{K});
        const auto own = e.quotient(shape, {});
        REQUIRE(own);
        INFO(name_of(kind) << " " << name_of(op) << " on " << t.name << ", " << spines
                           << " spines");
        const StreamedCollective collective{rank_gpus(t, K), nullptr};
        Router r1(t, params.routing);
        std::string why;
        const auto fold = fold_for_network(t, r1, collective, kind, *own, why, [&](int period) {
          return e.fold_at(shape, {}, *own, period);
        });
        INFO(why);
        REQUIRE(fold);
        // Whole servers, a leaf's at most (a server when its port turns onto the next
        // server's spine: as many spines as servers a leaf).
        CHECK(fold->period % gpus == 0);
        CHECK((gpus * 4) % fold->period == 0);
        ++folded;
        auto m1 = make_network_model(params, t, r1);
        const StreamedResult folded_run = simulate_folded(t, r1, *m1, kind, collective, *fold);
        Router r2(t, params.routing);
        auto m2 = make_network_model(params, t, r2);
        require_same_run(
            simulate_streamed(t, r2, *m2, collective, [&] { return e.generate(shape, {}); }),
            folded_run);
        // The same cluster under ECMP: the turns of a transfer take spines by a hash, where
        // a server's GPUs send over several (one GPU a server: one transfer a leaf crosses
        // the spines, and any spines do).
        if (gpus == 1) continue;
        Router ecmp(t, RoutingPolicy::Ecmp);
        std::string ecmp_why;
        CHECK(!fold_for_network(t, ecmp, collective, kind, *own, ecmp_why,
                                [&](int period) { return e.fold_at(shape, {}, *own, period); }));
      }
    }
  }
  CHECK(folded == 2 * 4 * static_cast<int>(std::size(kRingOps)));
}

TEST_CASE("rings in rail orders fold on a cluster, bit for bit", "[symmetry]") {
  // One channel per rail, each entering and leaving every host on its rail (what
  // "channels": "auto" and NCCL's rings run on a cluster): alike by a leaf's servers.
  for (NetworkModelKind kind : {NetworkModelKind::Ideal, NetworkModelKind::Flow}) {
    NetworkParams params;
    params.model = kind;
    params.alpha = from_seconds(1e-6);
    for (const auto& [nodes, gpus] : {std::pair{4, 2}, std::pair{8, 2}, std::pair{6, 4}}) {
      ClusterParams p;
      p.nodes = nodes;
      p.server.gpus = gpus;
      p.radix = 4;  // two servers a leaf
      const Topology t = make_cluster_topology(p);
      const int K = nodes * gpus;
      std::vector<int> host_of, rail_of;
      for (int r = 0; r < K; ++r) host_of.push_back(r / gpus), rail_of.push_back(r % gpus);
      AlgorithmOptions o;
      o.channels = gpus;
      o.orders = rail_orders(host_of, rail_of, gpus);
      for (CollectiveOp op : kRingOps)
        // Equal chunks, and chunks in two sizes alike every two servers (as the orders are).
        for (std::int64_t extra : {0, K / (2 * gpus)}) {
          const AlgorithmEntry& e = *find_algorithm(op, "ring");
          INFO(name_of(kind) << " " << name_of(op) << " on " << t.name << ", " << extra
                             << " elements over equal chunks");
          const CollectiveShape shape = shape_of(op, K, 1024 * std::int64_t{K} * gpus + extra);
          const auto own = e.quotient(shape, o);
          REQUIRE(own);
          const StreamedCollective collective{rank_gpus(t, K), nullptr};
          Router r1(t);
          std::string why;
          const auto fold = fold_for_network(t, r1, collective, kind, *own, why, [&](int period) {
            return e.fold_at(shape, o, *own, period);
          });
          INFO(why);
          REQUIRE(fold);
          CHECK(fold->period == 2 * gpus);  // two servers a leaf, and the orders' turn
          auto m1 = make_network_model(params, t, r1);
          const StreamedResult folded = simulate_folded(t, r1, *m1, kind, collective, *fold);
          Router r2(t);
          auto m2 = make_network_model(params, t, r2);
          const StreamedResult full =
              simulate_streamed(t, r2, *m2, collective, [&] { return e.generate(shape, o); });
          require_same_run(full, folded);
          // The same fold made a step at a time.
          const auto streamed = e.quotient_stream(shape, o, fold->period);
          REQUIRE(streamed);
          Router r3(t);
          auto m3 = make_network_model(params, t, r3);
          require_same_run(full, simulate_folded(t, r3, *m3, kind, collective, *streamed));
        }
    }
  }
}

TEST_CASE("a fold's stand-in routes need not be chains of links", "[symmetry]") {
  // Four switches in a ring, a GPU on each: each class of links is played on one of its
  // links, and the route of a transfer can then name links that do not meet.
  Topology t;
  const int K = 4;
  std::vector<NodeId> gpus, switches;
  for (int i = 0; i < K; ++i) {
    gpus.push_back(t.add_node({fmt::format("gpu{}", i), NodeKind::Gpu, i, i}));
    switches.push_back(t.add_node({fmt::format("sw{}", i), NodeKind::Switch}));
  }
  for (int i = 0; i < K; ++i) t.add_duplex(gpus[i], switches[i], 50e9, 0, LinkKind::NvLink);
  for (int i = 0; i < K; ++i)
    t.add_duplex(switches[i], switches[(i + 1) % K], 25e9, from_seconds(1e-6), LinkKind::Ib);
  t.assign_ranks();
  for (NetworkModelKind kind :
       {NetworkModelKind::Ideal, NetworkModelKind::Flow, NetworkModelKind::Packet}) {
    INFO(name_of(kind));
    NetworkParams params;
    params.model = kind;
    params.packet_bytes = 4096;
    const AlgorithmEntry& e = *find_algorithm(CollectiveOp::AllReduce, "ring");
    const CollectiveShape shape = shape_of(CollectiveOp::AllReduce, K, 4096 * K);
    const StreamedCollective collective{rank_gpus(t, K), nullptr};
    Router r1(t);
    std::string why;
    const auto fold = fold_for_network(t, r1, collective, kind, *e.quotient(shape, {}), why);
    INFO(why);
    REQUIRE(fold);
    CHECK(fold->period == 1);
    auto m1 = make_network_model(params, t, r1);
    const StreamedResult folded = simulate_folded(t, r1, *m1, kind, collective, *fold);
    Router r2(t);
    auto m2 = make_network_model(params, t, r2);
    require_same_run(
        simulate_streamed(t, r2, *m2, collective, [&] { return e.generate(shape, {}); }), folded);
  }
}

// A folded run's collective as the full run's: the fold's note taken out, the full run's
// schedule digest put in (a fold never makes the schedule).
void as_full_run(nlohmann::json& folded, const nlohmann::json& full) {
  folded.erase("symmetry");
  folded["schedule_digest"] = full["schedule_digest"];
}

TEST_CASE("run --symmetry gives what run gives, less the digest, and says what it folded",
          "[symmetry][cli]") {
  const auto dir = temp_dir("symmetry");
  const auto write = [&](const std::string& name, const std::string& topology, std::int64_t bytes) {
    std::ofstream(dir / name) << R"({"topology": )" << topology
                              << R"(, "network": {"model": "flow", "alpha": "1us"},
      "collectives": [{"name": "ar", "op": "all_reduce", "algorithm": "ring", "bytes": )"
                              << bytes << R"(},
                      {"name": "ag", "op": "all_gather", "algorithm": "ring", "bytes": 4100,
                       "after": ["ar"]}]})";
    return (dir / name).string();
  };
  const std::string star = R"({"preset": "switch", "gpus": 16, "bandwidth": "100GB/s"})";
  // What the first collective's note starts with; the second, small one is never folded.
  for (const auto& [file, note_of_first] :
       {std::pair{write("even.json", star, 16 * 4 * 1000), "folded: 16 ranks alike"},
        std::pair{write("uneven.json", star, 16 * 4 * 1000 + 4), "not folded: "},
        std::pair{write("cluster.json", R"({"preset": "cluster", "nodes": 2, "gpus_per_node": 8})",
                        16 * 4 * 1000),
                  "not folded: "},
        // Two servers a leaf, four leaves a rail: turns by a leaf's servers.
        std::pair{write("leaves.json",
                        R"({"preset": "cluster", "nodes": 8, "gpus_per_node": 2, "radix": 4})",
                        16 * 4 * 1000),
                  "folded: 4 groups of 4 ranks alike"}}) {
    INFO(file);
    const Outcome plain = run_collsim("run --format json " + file);
    const Outcome folded = run_collsim("run --symmetry --format json " + file);
    REQUIRE(plain.status == 0);
    REQUIRE(folded.status == 0);
    auto a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(folded.out);
    for (std::size_t i = 0; i < 2; ++i) {
      const std::string note = b["collectives"][i]["symmetry"];
      CHECK(note.starts_with(i == 0 ? note_of_first : "not folded: "));
      // A ring makes its fold a step at a time: run plays it so, never stored first.
      if (note.starts_with("folded")) CHECK(note.ends_with("as they were made"));
      CHECK(b["collectives"][i]["schedule_digest"].is_null() == note.starts_with("folded"));
      as_full_run(b["collectives"][i], a["collectives"][i]);
    }
    CHECK(a == b);
  }
  const Outcome refused = run_collsim("run --symmetry --out " + (dir / "o").string() + " " +
                                      (dir / "even.json").string());
  CHECK(refused.status != 0);
  CHECK(refused.err.find("--symmetry") != std::string::npos);
}

TEST_CASE("a fold is the full run where max-min gives alike flows rates an ulp apart",
          "[symmetry][cli]") {
  // Found by tools/symmetry_fuzz.py: a direct all-to-all over the leaves of a cluster under
  // flow. The solver sums shares in list order, so the full run's flows, alike by a turn,
  // got rates an ulp apart; those whose rate changed by an ulp at a later resolve took a
  // new finish from ceil(remaining bytes), a byte's time or more away (5.13932 us full,
  // 5.13904 us folded). Rates that differ by rounding alone now leave a finish as it was.
  const auto dir = temp_dir("symmetry-ulp");
  std::ofstream(dir / "a2a.json") << R"({"topology": {"preset": "cluster", "nodes": 8,
      "gpus_per_node": 4, "radix": 4, "spines": 2},
    "network": {"model": "flow", "alpha": "5us", "routing": "single"},
    "collectives": [{"name": "c0", "op": "all_to_all", "bytes": 4096, "algorithm": "direct"}]})";
  const std::string file = (dir / "a2a.json").string();
  const Outcome plain = run_collsim("run --format json " + file);
  const Outcome folded = run_collsim("run --symmetry --format json " + file);
  REQUIRE(plain.status == 0);
  REQUIRE(folded.status == 0);
  auto a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(folded.out);
  REQUIRE(std::string(b["collectives"][0]["symmetry"]).starts_with("folded: 4 groups of 8"));
  as_full_run(b["collectives"][0], a["collectives"][0]);
  CHECK(a["collectives"][0]["end_s"] == b["collectives"][0]["end_s"]);
  CHECK(a == b);
}

TEST_CASE("run folds by itself a schedule that would stream for minutes, and only such",
          "[symmetry]") {
  const auto ring_on = [](int gpus, std::string_view model) {
    return parse_scenario(parse_json_text(fmt::format(R"({{"topology": {{"preset": "switch",
      "gpus": {}, "bandwidth": "450GB/s"}}, "network": {{"model": "{}"}},
      "collectives": [{{"name": "ar", "op": "all_reduce", "algorithm": "ring",
      "channels": 1, "bytes": "1GiB"}}]}})",
                                                      gpus, model),
                                          "scenario.json"),
                          ".");
  };
  // A ring all-reduce is bounded by 2 K^2 ops (scenario.h): 2^30 from K = 23,171 on under
  // ideal; 2^24 from K = 2,897 under flow, whose ops cost twenty times as much.
  CHECK(folding_pays(ring_on(23171, "ideal")));
  CHECK(!folding_pays(ring_on(23170, "ideal")));
  CHECK(folding_pays(ring_on(2897, "flow")));
  CHECK(!folding_pays(ring_on(2896, "flow")));
  CHECK(!folding_pays(ring_on(2897, "ideal")));

  // Only the collective that pays is folded: the small one after it keeps its digest.
  const Scenario both = parse_scenario(
      parse_json_text(R"({"topology": {"preset": "switch", "gpus": 23171, "bandwidth": "450GB/s"},
        "collectives": [
          {"name": "big", "op": "all_reduce", "algorithm": "ring", "channels": 1,
           "bytes": 741472},
          {"name": "small", "op": "all_reduce", "algorithm": "ring", "ranks": [0, 1, 2, 3],
           "bytes": 4096, "after": ["big"]}]})",
                      "scenario.json"),
      ".");
  const ScenarioResult r = run_scenario_streamed(both, FoldWhen::Pays);
  REQUIRE(r.folding.size() == 2);
  CHECK(r.folding[0].folded);
  CHECK(r.folding[1].note.empty());
  CHECK(r.digests[1] != 0);
  CHECK(r.op_count(0) == 2 * std::uint64_t{23171} * 23170);
}

TEST_CASE("a fold played as it is made is the stored fold and the full run, bit for bit",
          "[symmetry]") {
  // The streamed fold (a fold too large to store: 1 GiB on 100,000 ranks) against the stored
  // one and the full run, wherever both can be stored: rings in equal chunks and in chunks
  // of two sizes, in channels, with costs, on a switch and on rail leaves where the network
  // asks a turn of a leaf's servers.
  auto cost = std::make_shared<CostModel>();
  cost->launch = from_seconds(5e-6);
  cost->op_overhead = from_seconds(0.7e-6);
  cost->link(LinkKind::NvLink).efficiency = 0.8;
  cost->link(LinkKind::Ib).latency = from_seconds(2e-6);
  ClusterParams leaves;
  leaves.nodes = 8;
  leaves.server.gpus = 2;
  leaves.radix = 4;  // two servers a leaf: a turn of 4 ranks
  const Topology topologies[] = {make_switch_topology(12, 50e9, from_seconds(1e-7)),
                                 make_cluster_topology(leaves)};
  int played = 0;
  for (NetworkModelKind kind :
       {NetworkModelKind::Ideal, NetworkModelKind::Flow, NetworkModelKind::Packet}) {
    const NetworkParams params = network_params(kind);
    for (const Topology& t : topologies) {
      const int K = t.num_ranks();
      for (CollectiveOp op : kRingOps) {
        const AlgorithmEntry* e = find_algorithm(op, "ring");
        REQUIRE(e->quotient_stream);
        // Equal chunks (alike every rank); chunks alike every 2, 3 and 4 ranks.
        for (int alike : {1, 2, 3, 4})
          for (int channels : {1, 3}) {
            if (K % alike != 0) continue;
            const std::int64_t extra = alike == 1 ? 0 : K / alike;
            const CollectiveShape shape = shape_of(op, K, 1024 * std::int64_t{K} + extra);
            AlgorithmOptions o;
            o.channels = channels;
            const bool costed = channels == 3;
            const StreamedCollective collective{rank_gpus(t, K),
                                                costed ? cost : std::shared_ptr<CostModel>{}};
            INFO(name_of(kind) << " " << name_of(op) << " on " << t.name << ", " << shape.count
                               << " elements, " << channels << " channel(s)");
            const auto stored_own = e->quotient(shape, o);
            const auto streamed_own = e->quotient_stream(shape, o, 0);
            REQUIRE(stored_own);
            REQUIRE(streamed_own);
            CHECK(streamed_own->period == alike);
            CHECK(streamed_own->period == stored_own->period);
            CHECK(streamed_own->size == stored_own->size());
            CHECK(streamed_own->full_size() == stored_own->full_size());
            std::string why, streamed_why;
            Router r1(t);
            const auto stored = fold_for_network(
                t, r1, collective, kind, *stored_own, why,
                [&](int period) { return e->fold_at(shape, o, *stored_own, period); });
            Router r2(t);
            const auto streamed = fold_stream_for_network(
                t, r2, collective, kind, *streamed_own, streamed_why,
                [&](int period) { return e->quotient_stream(shape, o, period); });
            CHECK(stored.has_value() == streamed.has_value());
            CHECK(why == streamed_why);
            if (!stored || !streamed) continue;
            ++played;
            CHECK(streamed->period == stored->period);
            auto m1 = make_network_model(params, t, r1);
            const StreamedResult stored_run =
                simulate_folded(t, r1, *m1, kind, collective, *stored);
            auto m2 = make_network_model(params, t, r2);
            const StreamedResult streamed_run =
                simulate_folded(t, r2, *m2, kind, collective, *streamed);
            Router r3(t);
            auto m3 = make_network_model(params, t, r3);
            const StreamedResult full =
                simulate_streamed(t, r3, *m3, collective, [&] { return e->generate(shape, o); });
            require_same_run(full, streamed_run);
            require_same_run(stored_run, streamed_run);
            CHECK(streamed_run.events == stored_run.events);
            CHECK(streamed_run.transfers == full.transfers);
            CHECK(streamed_run.peak_held < streamed->size);
          }
      }
    }
  }
  CHECK(played >= 60);
}

// `own` played as it is made, and `e`'s schedule of `shape` streamed in full, under the
// ideal model: {folded, full}.
std::pair<StreamedResult, StreamedResult> folded_and_full(const Topology& t,
                                                          const AlgorithmEntry& e,
                                                          const CollectiveShape& shape,
                                                          const StreamedCollective& collective,
                                                          const StreamedQuotient& own) {
  NetworkParams params;
  params.model = NetworkModelKind::Ideal;
  Router r1(t);
  auto m1 = make_network_model(params, t, r1);
  StreamedResult folded = simulate_folded(t, r1, *m1, NetworkModelKind::Ideal, collective, own);
  Router r2(t);
  auto m2 = make_network_model(params, t, r2);
  StreamedResult full =
      simulate_streamed(t, r2, *m2, collective, [&] { return e.generate(shape, {}); });
  return {std::move(folded), std::move(full)};
}

TEST_CASE("a fold of wide steps, made on a thread of its own, is the full run bit for bit",
          "[symmetry]") {
  // Chunks alike every 1,024 of 2,048 ranks: steps of 1,024 representatives, which the
  // folded simulator has made on a thread of its own (kWideStep, simulate/streamed.cpp),
  // while narrower ones are made on its own thread (the test above).
  const int K = 2048;
  const Topology t = make_switch_topology(K, 450e9, from_seconds(2.5e-6));
  auto cost = std::make_shared<CostModel>();
  cost->op_overhead = from_seconds(0.7e-6);
  for (CollectiveOp op : kRingOps) {
    INFO(name_of(op));
    const AlgorithmEntry* e = find_algorithm(op, "ring");
    const CollectiveShape shape = shape_of(op, K, 1024 * std::int64_t{K} + 2);
    const StreamedCollective collective{rank_gpus(t, K), cost};
    const auto own = e->quotient_stream(shape, {}, 0);
    REQUIRE(own);
    REQUIRE(own->period == 1024);
    const auto [folded, full] = folded_and_full(t, *e, shape, collective, *own);
    require_same_run(full, folded);
    CHECK(folded.events < full.events);  // two groups alike: the first group's events
  }
}

TEST_CASE("a ring in unequal chunks on a switch takes its largest chunk's time per step",
          "[symmetry]") {
  // Under the ideal model no transfer waits for another, and each op waits on the ops of
  // the step before: some chain of ops carries the same chunk all along (a chunk is sent
  // on, step after step), so the ring takes 2(K - 1) steps of its largest chunk, whatever
  // the others. Folded (as it is made, 3 groups of 2 ranks alike) and in full.
  const int K = 6;
  const std::int64_t count = 1000 * K + K / 3;  // chunks of 1001 and 1000 elements
  const Topology t = make_switch_topology(K, 100e9, from_seconds(0.5e-6));
  const StreamedCollective collective{rank_gpus(t, K), nullptr};
  const AlgorithmEntry* e = find_algorithm(CollectiveOp::AllReduce, "ring");
  const CollectiveShape shape = shape_of(CollectiveOp::AllReduce, K, count);
  const auto own = e->quotient_stream(shape, {}, 0);
  REQUIRE(own);
  CHECK(own->period == 3);
  const auto [folded, full] = folded_and_full(t, *e, shape, collective, *own);
  require_same_run(full, folded);
  const double step = 2 * 0.5e-6 + 1001 * 4 / 100e9;  // two links' latency, the largest chunk
  CHECK(to_seconds(full.end) == Approx(2 * (K - 1) * step).epsilon(1e-9));
}

TEST_CASE("a collective folds stored where it can, else as its fold is made", "[symmetry]") {
  // simulate_folded with an algorithm entry, as collsim run folds: its own fold stored where
  // the network keeps its ranks alike within the representatives a stored fold may hold; a
  // fold too large to store (own: nullopt) or a turn past that limit, played as it is made;
  // every one the full run, bit for bit.
  ClusterParams p;
  p.nodes = 8;
  p.server.gpus = 2;
  p.radix = 4;  // two servers a leaf: a turn of 4 ranks
  const Topology t = make_cluster_topology(p);
  const int K = t.num_ranks();
  const NetworkParams params = network_params(NetworkModelKind::Flow);
  const AlgorithmEntry& e = *find_algorithm(CollectiveOp::AllReduce, "ring");
  const CollectiveShape shape = shape_of(CollectiveOp::AllReduce, K, 1024 * std::int64_t{K});
  const StreamedCollective collective{rank_gpus(t, K), nullptr};
  Router r0(t);
  auto m0 = make_network_model(params, t, r0);
  const StreamedResult full =
      simulate_streamed(t, r0, *m0, collective, [&] { return e.generate(shape, {}); });
  struct Way {
    bool own;                 // its own fold given (else: too large to store)
    std::size_t most_stored;  // the representatives a stored fold may hold
    bool as_made;             // expected
  };
  for (const Way& way : {Way{true, kMostRepresentatives, false},
                         Way{false, kMostRepresentatives, true}, Way{true, 100, true}}) {
    INFO("own " << way.own << ", at most " << way.most_stored << " stored");
    Router r(t);
    auto m = make_network_model(params, t, r);
    std::string why;
    const std::optional<FoldedRun> run =
        simulate_folded(t, r, *m, NetworkModelKind::Flow, collective, e, shape, {},
                        way.own ? e.quotient(shape, {}) : std::nullopt, why, way.most_stored);
    INFO(why);
    REQUIRE(run);
    CHECK(run->as_made == way.as_made);
    CHECK(run->period == 4);
    CHECK(run->played * static_cast<std::uint64_t>(K / 4) == run->ops);
    require_same_run(full, run->result);
    const std::string note = run->note();
    CHECK(note.find("4 groups of 4 ranks alike") != std::string::npos);
    CHECK((note.find("as they were made") != std::string::npos) == way.as_made);
  }
  // Where no turn folds, neither way: the stored search tried every turn, and says so.
  AlgorithmOptions odd;
  odd.orders = {std::vector<int>(K)};
  std::iota(odd.orders[0].begin(), odd.orders[0].end(), 0);
  std::swap(odd.orders[0][1], odd.orders[0][2]);
  Router r(t);
  auto m = make_network_model(params, t, r);
  std::string why = "no fold of its own";
  CHECK_FALSE(simulate_folded(t, r, *m, NetworkModelKind::Flow, collective, e, shape, odd,
                              e.quotient(shape, odd), why));
  CHECK(why == "no fold of its own");
}
