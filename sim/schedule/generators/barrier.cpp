#include "schedule/generators/barrier.h"

#include "schedule/group.h"

namespace collsim {
namespace {

Schedule dissemination(const CollectiveShape& s) {
  auto b = make_builder(s, "dissemination");
  const int K = s.ranks;
  // The builder makes round k+1's signal from r wait for r's round-k signals, sent and
  // received: what r heard is passed on.
  for (int distance = 1; distance < K; distance *= 2) {
    b.next_step();
    for (int r = 0; r < K; ++r) b.signal(r, (r + distance) % K);
  }
  return b.finish();
}

}  // namespace

void register_barrier(std::vector<AlgorithmEntry>& c) {
  c.push_back({.op = CollectiveOp::Barrier,
               .algorithm = "dissemination",
               .summary = "⌈log2 K⌉ rounds of messages without data, round k from rank r to "
                          "r + 2^k; each rank passes on what it heard, so none leaves before "
                          "hearing from all.",
               .generate = [](const CollectiveShape& s, const AlgorithmOptions&) {
                 return dissemination(s);
               }});
}

}  // namespace collsim
