#pragma once
// A group: some ranks working together on one region of one buffer. Generators
// are written against groups, so the same ring or tree serves a whole collective
// or one level of a hierarchical one (the GPUs of a node, one rail across nodes).
#include <cstdint>
#include <numeric>
#include <vector>

#include "schedule/builder.h"
#include "schedule/layout.h"

namespace collsim {

struct Group {
  std::vector<int> ranks;  // schedule ranks, in the algorithm's order ("members")
  int buffer = 0;
  std::int64_t offset = 0;  // elements
  std::int64_t count = 0;
  int channel = 0;
  // Channels may split a region lane by lane: the group then works on lane `lane` of
  // `lanes` of every one of its chunks, so each chunk's elements stay where the
  // collective's layout puts them (reduce-scatter, all-gather).
  int lane = 0;
  int lanes = 1;
  // Which of the region's chunks member p's results belong to: chunk_order[p], or p
  // when empty. A channel that visits the ranks in another order still leaves rank r
  // with chunk r (reduce-scatter) and spreads chunk r from rank r (all-gather).
  std::vector<int> chunk_order;

  int size() const { return static_cast<int>(ranks.size()); }
  int chunk_of(int member) const { return chunk_order.empty() ? member : chunk_order[member]; }
  // Chunk i of `parts` (this group's lane of it), relative to the region's offset.
  std::int64_t chunk_begin(int parts, int i) const {
    const Partition whole{count, parts};
    return lanes == 1 ? whole.begin(i)
                      : whole.begin(i) + Partition{whole.size(i), lanes}.begin(lane);
  }
  std::int64_t chunk_size(int parts, int i) const {
    const Partition whole{count, parts};
    return lanes == 1 ? whole.size(i) : Partition{whole.size(i), lanes}.size(lane);
  }
  BufferRef at(int member, std::int64_t element) const {
    return {ranks[member], buffer, offset + element};
  }
  Partition chunks(int parts) const { return {count, parts}; }
  // The same ranks on a sub-range [begin, begin + n) of this group's region.
  Group slice(std::int64_t begin, std::int64_t n) const {
    return {ranks, buffer, offset + begin, n, channel, 0, 1, {}};
  }
};

// Ranks 0..K-1 on the whole of buffer 0.
inline Group whole_group(const CollectiveShape& shape) {
  Group g;
  g.ranks.resize(shape.ranks);
  std::iota(g.ranks.begin(), g.ranks.end(), 0);
  g.count = shape.count;
  return g;
}

// A builder with the collective's data buffers (schedule/layout.h) on every rank,
// plus `scratch` buffers of the given sizes.
inline ScheduleBuilder make_builder(const CollectiveShape& shape, std::string algorithm,
                                    const std::vector<std::int64_t>& scratch = {},
                                    int channels = 1) {
  const int nb = data_buffer_count(shape.op) + static_cast<int>(scratch.size());
  return ScheduleBuilder(shape, std::move(algorithm), nb,
                         buffer_counts_with_scratch(shape, scratch), channels);
}

// The position of `root` counted from member 0, so trees can be rooted anywhere.
inline int rotate(int member, int root, int size) {
  return ((member - root) % size + size) % size;
}

}  // namespace collsim
