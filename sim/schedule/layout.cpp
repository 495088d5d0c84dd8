#include "schedule/layout.h"

namespace collsim {
namespace {

bool writes_second_buffer(CollectiveOp op) {
  return op == CollectiveOp::AllToAll || op == CollectiveOp::SendRecv;
}

Region whole(const CollectiveShape& s) {
  return {0, 0, s.count};
}
Region chunk(const CollectiveShape& s, int rank) {
  const Partition p{s.count, s.ranks};
  return {0, p.begin(rank), p.size(rank)};
}

}  // namespace

int data_buffer_count(CollectiveOp op) {
  return writes_second_buffer(op) ? 2 : 1;
}

namespace {

// Uniform all-to-all: rank s sends d block (d - s) mod K of the count's partition, so
// where K does not divide the count the larger blocks go to different ranks from each
// sender and every rank receives as much as it sends. (The same blocks from every
// sender would pile every extra element onto the same receivers.)
int a2a_block(const CollectiveShape& s, int src, int dst) {
  return ((dst - src) % s.ranks + s.ranks) % s.ranks;
}

// The sizes of blocks first, first + 1, ... (n of them, mod the parts) together.
std::int64_t cyclic_sum(const Partition& p, int first, int n) {
  if (first + n <= p.parts) return p.begin(first + n) - p.begin(first);
  return p.count - p.begin(first) + p.begin(first + n - p.parts);
}

}  // namespace

std::int64_t a2a_count(const CollectiveShape& s, int src, int dst) {
  if (s.matrix) return (*s.matrix)[static_cast<std::size_t>(src) * s.ranks + dst];
  return Partition{s.count, s.ranks}.size(a2a_block(s, src, dst));
}

// Blocks in destination order: destinations 0 .. dst - 1 take blocks -src .. dst - 1 - src.
std::int64_t a2a_send_offset(const CollectiveShape& s, int src, int dst) {
  if (!s.matrix) return cyclic_sum(Partition{s.count, s.ranks}, a2a_block(s, src, 0), dst);
  std::int64_t off = 0;
  for (int d = 0; d < dst; ++d) off += a2a_count(s, src, d);
  return off;
}

// Blocks in source order: sources 0 .. src - 1 sent blocks dst .. dst - src + 1.
std::int64_t a2a_recv_offset(const CollectiveShape& s, int src, int dst) {
  if (!s.matrix) return cyclic_sum(Partition{s.count, s.ranks}, a2a_block(s, src - 1, dst), src);
  std::int64_t off = 0;
  for (int r = 0; r < src; ++r) off += a2a_count(s, r, dst);
  return off;
}

std::vector<std::int64_t> data_buffer_sizes(const CollectiveShape& s, int rank) {
  switch (s.op) {
    case CollectiveOp::AllToAll: {
      std::int64_t sent = 0, received = 0;
      for (int p = 0; p < s.ranks; ++p) {
        sent += a2a_count(s, rank, p);
        received += a2a_count(s, p, rank);
      }
      return {sent, received};
    }
    case CollectiveOp::SendRecv:
      return {s.count, s.count};
    default:
      return {s.count};
  }
}

std::vector<Region> input_regions(const CollectiveShape& s, int rank) {
  switch (s.op) {
    case CollectiveOp::AllReduce:
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::Reduce:
    case CollectiveOp::SendRecv:
      return {whole(s)};
    case CollectiveOp::AllToAll:
      return {{0, 0, data_buffer_sizes(s, rank)[0]}};
    case CollectiveOp::AllGather:
    case CollectiveOp::Gather:
      return {chunk(s, rank)};
    case CollectiveOp::Broadcast:
    case CollectiveOp::Scatter:
      if (rank == s.root) return {whole(s)};
      return {};
    case CollectiveOp::Barrier:
      return {};
  }
  return {};
}

std::vector<Region> output_regions(const CollectiveShape& s, int rank) {
  switch (s.op) {
    case CollectiveOp::AllReduce:
    case CollectiveOp::AllGather:
    case CollectiveOp::Broadcast:
      return {whole(s)};
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::Scatter:
      return {chunk(s, rank)};
    case CollectiveOp::Reduce:
    case CollectiveOp::Gather:
      if (rank == s.root) return {whole(s)};
      return {};
    case CollectiveOp::AllToAll:
      return {{1, 0, data_buffer_sizes(s, rank)[1]}};
    case CollectiveOp::SendRecv:
      return {{1, 0, s.count}};
    case CollectiveOp::Barrier:
      return {};
  }
  return {};
}

std::vector<std::int64_t> buffer_counts_with_scratch(const CollectiveShape& s,
                                                     const std::vector<std::int64_t>& scratch) {
  std::vector<std::int64_t> out;
  for (int r = 0; r < s.ranks; ++r) {
    auto sizes = data_buffer_sizes(s, r);
    out.insert(out.end(), sizes.begin(), sizes.end());
    out.insert(out.end(), scratch.begin(), scratch.end());
  }
  return out;
}

}  // namespace collsim
