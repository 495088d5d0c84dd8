#pragma once
// Simulates a collective while its schedule is being generated (schedule/stream.h), so
// memory follows the ops in flight instead of the whole schedule: a 100,000-rank ring,
// 2e10 transfers, runs in a few megabytes of ops.
//
// The generator writes a step; the simulator takes it in and plays events for as long
// as no op still to come could start before them. That holds while every (channel,
// rank) has an unfinished op among those generated: a later op on that rank depends
// directly on the rank's latest op (the builder's rule: every op of the rank's latest
// step), so it cannot start before that op ends, or, for a transfer to or from that
// rank, before its bytes have left (schedule.h, needs_only_sent: the rank's slot counts
// as free from then on). Once a rank's latest op finishes, the simulator stops and the
// generator writes on until that rank has work again (or the schedule ends). Ops
// that arrive with every dependency done start at once: their last dependency ended
// exactly now. The result, event for event, is what Simulator gives for the stored
// schedule (tests/test_streamed.cpp), without the per-op record: it aggregates link
// and rank counters as it goes.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "network/network_model.h"
#include "schedule/schedule.h"
#include "simulate/op_sink.h"

namespace collsim {

struct StreamedQuotient;  // schedule/quotient.h

using NodePair = std::pair<NodeId, NodeId>;  // a transfer's (from, to) nodes

struct StreamedCollective {
  std::vector<NodeId> rank_gpu;  // the schedule's rank r runs on GPU node rank_gpu[r]
  // Costs beyond the links' α-β; null: none.
  std::shared_ptr<const CostModel> cost;
};

struct StreamedResult {
  Time end = 0;      // when the collective ended (its least duration included)
  Time ops_start = -1;  // when the first op began (-1: none did)
  Time ops_end = 0;     // when the last op finished
  std::uint64_t ops = 0;
  std::uint64_t transfers = 0;
  std::uint64_t events = 0;
  int steps = 0;
  std::uint64_t digest = 0;      // schedule_digest of the schedule streamed
  std::uint64_t peak_held = 0;   // most ops held at once
  std::uint64_t held_bytes = 0;  // memory of the held ops and their successor lists, at most
  LinkCounters links;
  std::vector<std::vector<RatePoint>> link_rates;  // as SimulationResult's, with a sink
  std::vector<std::int64_t> node_sent;      // per topology node
  std::vector<std::int64_t> node_received;  // per topology node
};

// Where the generator runs: on a thread of its own (generating the next steps while
// these are simulated; bounded queue), or on the caller's, writing into the simulation.
// The result is the same either way.
enum class GenerateOn { OwnThread, CallerThread };

// Calls `generate` (an AlgorithmEntry's generate, or anything that builds one schedule
// with a ScheduleBuilder) with its steps streamed into the simulation. Switch ops
// (NVLS) are not streamed: std::invalid_argument. With a sink, each op is handed to it
// as it retires (op_sink.h), between the caller's collective() and collective_done().
StreamedResult simulate_streamed(const Topology& topology, Router& router, NetworkModel& model,
                                 const StreamedCollective& collective,
                                 const std::function<Schedule()>& generate,
                                 GenerateOn where = GenerateOn::OwnThread, OpSink* sink = nullptr);

// A fold's representatives played as `quotient` makes them (simulate/symmetric.h says when
// that is the full run): each rank's overhead queue that of its turn below the period, each
// transfer over `paths` (per pair of GPUs: its route over the canonical links, every pair of
// quotient.pairs there). The rule above holds with each rank's slot that of its turn below
// the period: the ops of a step on a rank are images of the representatives of that step on
// its turn, all finished when those are, and the rank's next op waits on every one of them.
// The result counts the representatives alone: ops, transfers, and the canonical links' and
// the ranks below the period's counters; the caller spreads them.
StreamedResult simulate_quotient_streamed(const Topology& topology, Router& router,
                                          NetworkModel& model, const StreamedCollective& collective,
                                          const StreamedQuotient& quotient,
                                          const std::map<NodePair, PathId>& paths);

}  // namespace collsim
