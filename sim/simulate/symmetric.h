#pragma once
// A collective whose ranks are interchangeable, timed by one rank's ops.
//
// Where a schedule folds by a turn of its ranks (schedule/quotient.h) and the same turn
// maps the network onto itself, the ops of one orbit run at the same times, and every
// link of an orbit carries, interval for interval, what any other does: each link
// sees exactly one image of each representative that crosses its orbit. So only the
// representatives are played, each over its orbit's canonical links (the ones rank 0's
// GPU uses) and paying its overhead in rank 0's queue; then every link and GPU of an
// orbit takes the canonical one's counters. The networks folded are those a turn of
// the ranks provably maps onto itself: every rank's GPU hangs off one switch by one
// link each way, the links all alike (a rail-optimised fat tree, whose turns move whole
// nodes, is not folded yet).
//
// The result — times, every link's and GPU's counters, transfers and ops — is the full
// run's, bit for bit (tests/test_symmetry.cpp plays every algorithm's own fold against its
// streamed full run, itself checked against the stored one in tests/test_streamed.cpp);
// `events` counts those played, and there is no digest: the full schedule is never made.
// The flow model's max-min sums the rates on a link in the order its transfers came, and
// a turn can change that order among transfers of different sizes: its last bits then
// differ (measured on direct all-to-all in unequal blocks, which therefore does not fold).
// What the argument leaves to the fold: where ops become ready at one instant, a rank's
// overhead queue takes them in the order their events run, which the representatives'
// successor order must reproduce (a fold_by_rotation check of structure does not; the
// test does, for each algorithm with a fold).
#include <string>

#include "network/network_model.h"
#include "schedule/quotient.h"
#include "simulate/streamed.h"

namespace collsim {

// Why the network does not let `collective`'s ranks be folded by a turn of `period`
// ranks under `model`, or "" when it does.
std::string fold_problem(const Topology& topology, const StreamedCollective& collective,
                         NetworkModelKind model, int period);

// Plays `quotient` as the full schedule would run; throws std::invalid_argument where
// fold_problem is not empty.
StreamedResult simulate_folded(const Topology& topology, Router& router, NetworkModel& model,
                               NetworkModelKind kind, const StreamedCollective& collective,
                               const QuotientSchedule& quotient);

}  // namespace collsim
