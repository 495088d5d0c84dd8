#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <queue>
#include <random>
#include <thread>
#include <vector>

#include "core/fifo.h"
#include "core/interrupt.h"
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

// The radix heap against the definition: a priority queue of (time, sequence number).
// Times are drawn so that ties, times equal to now(), times far ahead (high bits) and
// times one picosecond apart (low bits) all occur, events are scheduled while others are
// popped, and every pop must be the reference's.
TEST_CASE("engine: pops in (time, scheduling order) exactly, for any mix of times") {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    Engine e;
    using Key = std::pair<Time, std::uint64_t>;  // (time, id = order of scheduling)
    std::priority_queue<Key, std::vector<Key>, std::greater<>> reference;
    std::uint64_t next_id = 0;
    auto schedule_some = [&](Time now) {
      const int n = static_cast<int>(rng() % 4);
      for (int i = 0; i < n; ++i) {
        Time at = now;
        switch (rng() % 5) {
          case 0:
            break;  // now itself
          case 1:
            at += static_cast<Time>(rng() % 3);
            break;  // low bits
          case 2:
            at += static_cast<Time>(rng() % 1000);
            break;
          case 3:
            at += static_cast<Time>(rng() % (Time{1} << 40));
            break;  // high bits
          case 4:
            at = (now | 0xff) + 1;
            break;  // a carry across bits
        }
        e.schedule(at, 0, next_id);
        reference.push({at, next_id++});
      }
    };
    schedule_some(0);
    std::size_t popped = 0;
    while (!reference.empty() && popped < 20000) {
      const Key want = reference.top();
      reference.pop();
      const Event got = e.pop();
      REQUIRE(got.time == want.first);
      REQUIRE(got.id == want.second);
      REQUIRE(e.now() == want.first);
      ++popped;
      if (popped < 5000) schedule_some(e.now());
    }
    REQUIRE(e.empty() == reference.empty());
  }
}

// Lanes (one per delay, a few of them) and the heap hold one order between them: delays
// drawn from a set larger than the lanes, so that a delay finds its lane, claims a free
// one or goes to the heap as lanes fill and empty, with ties between lanes and heap, and
// a lane's event due before the heap's earliest scheduling events between the two.
TEST_CASE("engine: lanes of repeated delays and the heap pop in (time, scheduling order)") {
  constexpr std::array<Time, 7> kDelays = {0, 3, 3, 40, 40, 40, 700};
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    Engine e;
    using Key = std::pair<Time, std::uint64_t>;
    std::priority_queue<Key, std::vector<Key>, std::greater<>> reference;
    std::uint64_t next_id = 0;
    auto schedule_some = [&](Time now) {
      for (int i = static_cast<int>(rng() % 3); i > 0; --i) {
        // Mostly the set's delays; now and then one of its own, or a far one (the heap).
        const std::uint64_t pick = rng() % 10;
        const Time delay = pick < 8   ? kDelays[rng() % kDelays.size()]
                           : pick < 9 ? static_cast<Time>(rng() % 900)
                                      : static_cast<Time>(rng() % 100000);
        e.schedule(now + delay, static_cast<EventTag>(next_id % 7), next_id);
        reference.push({now + delay, next_id++});
      }
    };
    for (int i = 0; i < 8; ++i) schedule_some(0);
    std::size_t popped = 0;
    while (!reference.empty()) {
      const Key want = reference.top();
      reference.pop();
      const Event got = e.pop();
      REQUIRE(got.time == want.first);
      REQUIRE(got.id == want.second);
      REQUIRE(got.tag == want.second % 7);  // the tag rides beside the order, unchanged
      if (++popped < 20000) schedule_some(e.now());
    }
    REQUIRE(e.empty());
  }
}

TEST_CASE("fifo: a queue moved from is empty and usable, and the one moved to holds its items") {
  // Found by review: the kept capacity went with a copy, the slots with the move, and a push
  // onto the emptied queue wrote into no storage.
  Fifo<std::int64_t> a;
  for (std::int64_t i = 0; i < 3; ++i) a.push_back(i);
  a.pop_front();
  Fifo<std::int64_t> b = std::move(a);
  CHECK(a.empty());
  a.push_back(7);
  CHECK(a.size() == 1);
  CHECK(a.front() == 7);
  REQUIRE(b.size() == 2);
  CHECK(b.front() == 1);
  Fifo<std::int64_t> c;
  c = std::move(b);
  CHECK(b.empty());
  b.push_back(9);
  CHECK(b.front() == 9);
  CHECK(c.front() == 1);
}

TEST_CASE("fifo: first in, first out across wrap-around and growth") {
  // Pushes and pops in uneven runs so the ring wraps before it grows, and grows while
  // wrapped; a std::deque fed the same calls is the reference.
  Fifo<std::int64_t> fifo;
  std::deque<std::int64_t> reference;
  std::mt19937 rng(7);
  std::int64_t next = 0;
  for (int round = 0; round < 2000; ++round) {
    const int pushes = static_cast<int>(rng() % 7), pops = static_cast<int>(rng() % 6);
    for (int i = 0; i < pushes; ++i) {
      fifo.push_back(next);
      reference.push_back(next++);
    }
    for (int i = 0; i < pops && !reference.empty(); ++i) {
      REQUIRE(fifo.front() == reference.front());
      fifo.pop_front();
      reference.pop_front();
    }
    REQUIRE(fifo.size() == reference.size());
  }
  while (!reference.empty()) {
    REQUIRE(fifo.front() == reference.front());
    fifo.pop_front();
    reference.pop_front();
  }
  CHECK(fifo.empty());
}

TEST_CASE("a stop token stops the work of its thread and of the threads it starts, no other") {
  // Python stops the call that saw KeyboardInterrupt; a call on another thread goes on (one
  // flag for the process stopped them all).
  std::atomic<bool> token{false};
  bool mine = false, started_by_mine = false, other = true;
  std::thread other_thread([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    other = interrupt_requested();
  });
  std::thread worker([&] {
    const StopScope scope(&token);
    token = true;
    mine = interrupt_requested();
    std::thread child(with_stop_token([&] { started_by_mine = interrupt_requested(); }));
    child.join();
  });
  worker.join();
  other_thread.join();
  CHECK(mine);
  CHECK(started_by_mine);
  CHECK_FALSE(other);
  CHECK_FALSE(interrupt_requested());  // this thread has no token, and the process no request
  Engine e;
  e.schedule(1, 0, 0);
  token = true;
  const StopScope scope(&token);
  // The engine polls every 32,768 events: a scope's request is seen there too.
  for (int i = 0; i < 40000; ++i) e.schedule(2, 0, 0);
  std::uint64_t handed_out = 0;
  CHECK_THROWS_AS(e.run([&](const Event&) { ++handed_out; }), Interrupted);
  // The pop that threw took nothing: the count is of the events handed out, and they
  // and the events left make up what was scheduled.
  CHECK(e.events_processed() == handed_out);
  CHECK(handed_out + e.pending() == 40001);
}
