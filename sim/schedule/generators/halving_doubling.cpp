#include "schedule/generators/halving_doubling.h"

namespace collsim {

void halving_doubling_all_reduce(ScheduleBuilder& b, const Group& g) {
  const int K = g.size();
  int p = 1;
  while (p * 2 <= K) p *= 2;
  const int extra = K - p;
  // Active members: the even ones of the first 2*extra, then everyone after.
  std::vector<int> active;
  for (int m = 0; m < K; ++m)
    if (m >= 2 * extra || m % 2 == 0) active.push_back(m);

  if (extra > 0) {
    b.next_step();
    for (int i = 0; i < extra; ++i)
      b.reduce(g.at(2 * i + 1, 0), g.at(2 * i, 0), g.count, g.channel);
  }
  // Position i ends the halving holding chunk i of p; `lo`/`hi` track its range.
  const Partition chunks = g.chunks(p);
  std::vector<int> lo(p, 0), hi(p, p);
  for (int d = p / 2; d >= 1; d /= 2) {
    b.next_step();
    std::vector<int> new_lo = lo, new_hi = hi;
    for (int i = 0; i < p; ++i) {
      const int mid = lo[i] + (hi[i] - lo[i]) / 2;
      const bool keep_low = (i & d) == 0;
      const int send_lo = keep_low ? mid : lo[i], send_hi = keep_low ? hi[i] : mid;
      const std::int64_t at = chunks.begin(send_lo), n = chunks.begin(send_hi) - at;
      b.reduce(g.at(active[i], at), g.at(active[i ^ d], at), n, g.channel);
      new_lo[i] = keep_low ? lo[i] : mid;
      new_hi[i] = keep_low ? mid : hi[i];
    }
    lo = new_lo;
    hi = new_hi;
  }
  for (int d = 1; d < p; d *= 2) {
    b.next_step();
    for (int i = 0; i < p; ++i) {
      const std::int64_t at = chunks.begin(lo[i]), n = chunks.begin(hi[i]) - at;
      b.copy(g.at(active[i], at), g.at(active[i ^ d], at), n, g.channel);
    }
    for (int i = 0; i < p; i += 2 * d) {  // partners now share the union of their ranges
      for (int j = i; j < i + 2 * d; ++j) {
        lo[j] = std::min(lo[i], lo[i + d]);
        hi[j] = std::max(hi[i], hi[i + d]);
      }
    }
  }
  if (extra > 0) {
    b.next_step();
    for (int i = 0; i < extra; ++i) b.copy(g.at(2 * i, 0), g.at(2 * i + 1, 0), g.count, g.channel);
  }
}

void register_halving_doubling(std::vector<AlgorithmEntry>& c) {
  c.push_back(with_channels(
      {.op = CollectiveOp::AllReduce,
       .algorithm = "halving_doubling",
       .summary = "Rabenseifner: a reduce-scatter by recursive halving, then an all-gather by "
                  "recursive doubling; any K = p + r (p a power of two): the odd members among "
                  "the first 2r fold their data into their even neighbour first and get the "
                  "result from it last.",
       .generate =
           [](const CollectiveShape& s, const AlgorithmOptions&) {
             auto b = make_builder(s, "halving_doubling");
             halving_doubling_all_reduce(b, whole_group(s));
             return b.finish();
           },
       .on_groups =
           [](ScheduleBuilder& b, std::span<const Group> groups, const AlgorithmOptions&) {
             for (const Group& g : groups) halving_doubling_all_reduce(b, g);
           }}));
}

}  // namespace collsim
