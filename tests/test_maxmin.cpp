// The max-min solver on textbook systems with known answers, and the
// definition of max-min fairness checked on random systems.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "network/maxmin.h"

using namespace collsim;

namespace {

std::vector<double> solve(const std::vector<double>& capacity,
                          const std::vector<std::vector<std::int32_t>>& flows) {
  std::vector<std::span<const std::int32_t>> spans;
  for (const auto& f : flows) spans.emplace_back(f);
  std::vector<double> rates;
  MaxMinSolver solver;
  solver.solve(capacity, spans, rates);
  return rates;
}

}  // namespace

TEST_CASE("max-min: N flows on one link get B/N each") {
  for (int n : {1, 2, 3, 7, 64}) {
    const auto rates = solve({100.0}, std::vector<std::vector<std::int32_t>>(n, {0}));
    for (double r : rates) CHECK(r == Approx(100.0 / n));
  }
}

TEST_CASE("max-min: a flow crossing two bottlenecks is held by the tighter one") {
  // Link 0 (10) carries A and B; link 1 (6) carries A, C, D. Link 1 fills first at 2 each;
  // B then takes what A leaves on link 0.
  const auto r = solve({10, 6}, {{0, 1}, {0}, {1}, {1}});
  CHECK(r[0] == Approx(2));
  CHECK(r[1] == Approx(8));
  CHECK(r[2] == Approx(2));
  CHECK(r[3] == Approx(2));
}

TEST_CASE("max-min: the classic three-link line network") {
  // A long flow crosses links 0, 1, 2 (capacities 1, 2, 3); one short flow on each link.
  const auto r = solve({1, 2, 3}, {{0, 1, 2}, {0}, {1}, {2}});
  CHECK(r[0] == Approx(0.5));
  CHECK(r[1] == Approx(0.5));
  CHECK(r[2] == Approx(1.5));
  CHECK(r[3] == Approx(2.5));
  // Equal capacities: everyone gets half.
  for (double x : solve({1, 1, 1}, {{0, 1, 2}, {0}, {1}, {2}})) CHECK(x == Approx(0.5));
}

TEST_CASE("max-min: random systems are feasible and every flow has a bottleneck") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int L = 1 + rng() % 12, F = 1 + rng() % 20;
    std::vector<double> cap(L);
    for (auto& c : cap) c = 1 + rng() % 100;
    std::vector<std::vector<std::int32_t>> flows(F);
    for (auto& f : flows) {
      for (int l = 0; l < L; ++l)
        if (rng() % 3 == 0) f.push_back(l);
      if (f.empty()) f.push_back(rng() % L);
    }
    const auto r = solve(cap, flows);
    std::vector<double> load(L, 0);
    for (int f = 0; f < F; ++f)
      for (auto l : flows[f]) load[l] += r[f];
    for (int l = 0; l < L; ++l) CHECK(load[l] <= cap[l] * (1 + 1e-9));
    // Max-min: each flow crosses a full link on which no flow gets more than it does.
    for (int f = 0; f < F; ++f) {
      bool has_bottleneck = false;
      for (auto l : flows[f]) {
        if (load[l] < cap[l] * (1 - 1e-9)) continue;
        bool fastest = true;
        for (int g = 0; g < F; ++g)
          if (std::find(flows[g].begin(), flows[g].end(), l) != flows[g].end() &&
              r[g] > r[f] * (1 + 1e-9))
            fastest = false;
        has_bottleneck |= fastest;
      }
      CHECK(has_bottleneck);
    }
  }
}

TEST_CASE("max-min: the scanned and the heaped rounds give the same rates, bit for bit") {
  // Every random system solved both ways: scanned (each round's tightest link by a scan)
  // and heaped (by a heap of shares). Ties among equal shares must go the same way, so
  // capacities repeat; some flows cross a link twice or none.
  std::mt19937 rng(11);
  MaxMinSolver scanned(1 << 20), heaped(0);
  for (int trial = 0; trial < 400; ++trial) {
    const int L = 1 + static_cast<int>(rng() % (trial % 4 == 0 ? 400 : 40));
    const int F = 1 + static_cast<int>(rng() % 60);
    std::vector<double> cap(L);
    for (auto& c : cap) c = 1 + rng() % 8;
    std::vector<std::vector<std::int32_t>> paths(F);
    for (auto& p : paths) {
      const int hops = static_cast<int>(rng() % 6);
      for (int h = 0; h < hops; ++h) p.push_back(static_cast<std::int32_t>(rng() % L));
    }
    std::vector<std::span<const std::int32_t>> flows(paths.begin(), paths.end());
    std::vector<double> a, b;
    scanned.solve(cap, flows, a);
    heaped.solve(cap, flows, b);
    INFO("trial " << trial << ", " << L << " links, " << F << " flows");
    REQUIRE(a.size() == b.size());
    for (std::size_t f = 0; f < a.size(); ++f) CHECK(std::memcmp(&a[f], &b[f], sizeof a[f]) == 0);
  }
}
