#pragma once
// What a collective computes, independent of how (the algorithm) or how fast.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collsim {

enum class CollectiveOp : std::uint8_t {
  AllReduce,
  ReduceScatter,
  AllGather,
  Broadcast,
  Reduce,
  Scatter,
  Gather,
  AllToAll,
  SendRecv,
  Barrier,
};

enum class ReduceOp : std::uint8_t { Sum, Prod, Max, Min, Avg };

enum class DType : std::uint8_t { F32, F64, F16, BF16, I8, U8, I32, I64 };

std::string_view name_of(CollectiveOp op);
std::string_view name_of(ReduceOp op);
std::string_view name_of(DType t);
std::optional<CollectiveOp> collective_from_name(std::string_view name);
std::optional<ReduceOp> reduce_op_from_name(std::string_view name);
std::optional<DType> dtype_from_name(std::string_view name);
const std::vector<std::string>& all_collective_names();
std::vector<std::string> all_dtype_names();
std::vector<std::string> all_reduce_op_names();

int element_size(DType t);
bool is_rooted(CollectiveOp op);
bool is_reducing(CollectiveOp op);

// nccl-tests' bus-bandwidth factor: busbw = algbw * factor.
double busbw_factor(CollectiveOp op, int ranks);

// An exact split of `count` elements into `parts` contiguous chunks whose sizes
// differ by at most one element; chunk i starts at floor(i * count / parts).
struct Partition {
  std::int64_t count;
  int parts;

  std::int64_t begin(int i) const {
    // 128-bit only when i * count could overflow: the common case stays a cheap division.
    if (count < (std::int64_t{1} << 40)) return i * count / parts;
    return static_cast<std::int64_t>((static_cast<__int128>(i) * count) / parts);
  }
  std::int64_t size(int i) const { return begin(i + 1) - begin(i); }
  std::int64_t max_size() const { return (count + parts - 1) / parts; }
};

}  // namespace collsim
