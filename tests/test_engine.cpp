#include <catch2/catch.hpp>
#include <vector>

#include "engine/engine.h"

using namespace collsim;

TEST_CASE("engine orders by time, then by scheduling order") {
  Engine e;
  e.schedule(30, 0, 1);
  e.schedule(10, 0, 2);
  e.schedule(30, 0, 3);
  e.schedule(10, 0, 4);
  e.schedule(20, 0, 5);
  std::vector<std::uint64_t> order;
  std::vector<Time> times;
  e.run([&](const Event& ev) {
    order.push_back(ev.id);
    times.push_back(e.now());
  });
  CHECK(order == std::vector<std::uint64_t>{2, 4, 5, 1, 3});
  CHECK(times == std::vector<Time>{10, 10, 20, 30, 30});
  CHECK(e.events_processed() == 5);
}

TEST_CASE("engine: events scheduled while running keep the total order") {
  Engine e;
  e.schedule(5, 0, 0);
  std::vector<std::uint64_t> seen;
  e.run([&](const Event& ev) {
    seen.push_back(ev.id);
    if (ev.id < 4) {
      e.schedule(e.now(), 0, ev.id + 10);  // same instant: after everything already queued there
      e.schedule(e.now() + 1, 0, ev.id + 1);
    }
  });
  CHECK(seen == std::vector<std::uint64_t>{0, 10, 1, 11, 2, 12, 3, 13, 4});
}

TEST_CASE("engine: many ties are deterministic and engines are independent") {
  auto run_once = [](int salt) {
    Engine e;
    for (int i = 0; i < 1000; ++i) e.schedule((i * 7919 + salt) % 13, 0, i);
    std::vector<std::uint64_t> ids;
    e.run([&](const Event& ev) { ids.push_back(ev.id); });
    return ids;
  };
  const auto a = run_once(0);
  Engine other;  // a second engine alive at the same time changes nothing
  other.schedule(1, 0, 99);
  const auto b = run_once(0);
  CHECK(a == b);
  CHECK(other.pending() == 1);
  // Within one time value ids come out in scheduling (ascending) order.
  Engine e;
  for (int i = 0; i < 100; ++i) e.schedule(i % 3, 0, i);
  std::uint64_t prev_id = 0;
  Time prev_t = -1;
  e.run([&](const Event& ev) {
    if (ev.time == prev_t) CHECK(ev.id > prev_id);
    CHECK(ev.time >= prev_t);
    prev_t = ev.time;
    prev_id = ev.id;
  });
}
