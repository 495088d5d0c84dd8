#pragma once
// Max-min fair bandwidth sharing (progressive filling). Links are capacity
// constraints, flows are variables; the solver raises every unfrozen flow's rate
// together until some link is full, freezes the flows crossing it at that link's
// fair share, and repeats. Each flow ends up limited by its most contended link,
// and no flow can go faster without slowing one that is no faster than it.
//
// It lives on its own, apart from the network model, so it can be tested against
// textbook systems whose answers are known.
#include <cstdint>
#include <span>
#include <vector>

namespace collsim {

class MaxMinSolver {
 public:
  // Systems of up to `scanned_up_to` links find each round's tightest link by a scan, larger
  // ones by a heap; both give the same rates bit for bit (tests set it to compare them).
  explicit MaxMinSolver(std::size_t scanned_up_to = 256) : scanned_up_to_(scanned_up_to) {}

  // Rates for `flows` (each a list of indices into `capacity`): rates[f].
  // Flows with no links get +infinity. Work is O((F·P + L) log L) for the links
  // and flows given; `scratch` state is kept between calls to avoid allocation.
  void solve(std::span<const double> capacity, std::span<const std::span<const std::int32_t>> flows,
             std::vector<double>& rates);

 private:
  void solve_scanned(std::span<const std::span<const std::int32_t>> flows,
                     std::vector<double>& rates);

  struct Entry {
    double share;
    std::int32_t link;
    std::uint32_t version;
  };
  std::size_t scanned_up_to_;
  std::vector<double> remaining_;
  std::vector<std::int32_t> unfrozen_;
  std::vector<std::uint32_t> version_;
  std::vector<std::vector<std::int32_t>> flows_on_link_;
  std::vector<Entry> heap_;
  std::vector<std::uint32_t> touched_in_;  // per link: the last round that froze a flow on it
  std::vector<std::int32_t> touched_;      // the links this round froze flows on
};

}  // namespace collsim
