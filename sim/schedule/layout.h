#pragma once
// Where a collective's inputs and outputs live in each rank's buffers — the
// contract between generators, the replayer and the validator.
//
// Buffer 0 is each rank's data buffer of `count` elements, used in place (as
// nccl-tests' in-place mode): reduce-scatter leaves rank r's result in chunk r,
// all-gather takes rank r's input from chunk r, scatter/gather use chunk r too.
// All-to-all and send/recv read buffer 0 and write buffer 1. Generators may add
// scratch buffers after these.
#include <vector>

#include "schedule/schedule.h"

namespace collsim {

struct Region {
  int buffer;
  std::int64_t offset;
  std::int64_t count;
};

int data_buffer_count(CollectiveOp op);
// Sizes (elements) of the data buffers of `rank`.
std::vector<std::int64_t> data_buffer_sizes(const CollectiveShape& shape, int rank);
std::vector<Region> input_regions(const CollectiveShape& shape, int rank);
std::vector<Region> output_regions(const CollectiveShape& shape, int rank);

// All-to-all(v): elements sent from s to d, and where they sit at each end.
std::int64_t a2a_count(const CollectiveShape& shape, int src, int dst);
std::int64_t a2a_send_offset(const CollectiveShape& shape, int src, int dst);  // in src's buffer 0
std::int64_t a2a_recv_offset(const CollectiveShape& shape, int src, int dst);  // in dst's buffer 1

// The builder's buffer sizes for a schedule of `shape` with `scratch` extra
// buffers of the given sizes on every rank.
std::vector<std::int64_t> buffer_counts_with_scratch(const CollectiveShape& shape,
                                                     const std::vector<std::int64_t>& scratch);

}  // namespace collsim
