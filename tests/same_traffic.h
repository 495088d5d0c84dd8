#pragma once
// Two runs of one collective moved the same, link for link and GPU for GPU: what the
// streamed and the folded simulations must give as the stored one does.
#include <catch2/catch.hpp>

namespace collsim::test {

template <class Expected, class Actual>
void require_same_traffic(const Expected& expected, const Actual& actual) {
  CHECK(actual.transfers == expected.transfers);
  CHECK(actual.links.bytes_per_link() == expected.links.bytes_per_link());
  CHECK(actual.links.busy_per_link() == expected.links.busy_per_link());
  CHECK(actual.links.peak_per_link() == expected.links.peak_per_link());
  CHECK(actual.node_sent == expected.node_sent);
  CHECK(actual.node_received == expected.node_received);
}

}  // namespace collsim::test
