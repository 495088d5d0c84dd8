#include "schedule/collective.h"

#include "core/name_table.h"

#include <array>
#include <utility>

namespace collsim {
namespace {

constexpr std::array<std::pair<CollectiveOp, std::string_view>, 10> kCollectives{{
    {CollectiveOp::AllReduce, "all_reduce"},
    {CollectiveOp::ReduceScatter, "reduce_scatter"},
    {CollectiveOp::AllGather, "all_gather"},
    {CollectiveOp::Broadcast, "broadcast"},
    {CollectiveOp::Reduce, "reduce"},
    {CollectiveOp::Scatter, "scatter"},
    {CollectiveOp::Gather, "gather"},
    {CollectiveOp::AllToAll, "all_to_all"},
    {CollectiveOp::SendRecv, "send_recv"},
    {CollectiveOp::Barrier, "barrier"},
}};
constexpr std::array<std::pair<ReduceOp, std::string_view>, 5> kReduceOps{{
    {ReduceOp::Sum, "sum"},
    {ReduceOp::Prod, "prod"},
    {ReduceOp::Max, "max"},
    {ReduceOp::Min, "min"},
    {ReduceOp::Avg, "avg"},
}};
struct DTypeInfo {
  DType type;
  std::string_view name;
  int size;
};
constexpr std::array<DTypeInfo, 8> kDTypes{{
    {DType::F32, "float32", 4},
    {DType::F64, "float64", 8},
    {DType::F16, "float16", 2},
    {DType::BF16, "bfloat16", 2},
    {DType::I8, "int8", 1},
    {DType::U8, "uint8", 1},
    {DType::I32, "int32", 4},
    {DType::I64, "int64", 8},
}};

}  // namespace

std::string_view name_of(CollectiveOp op) {
  return name_in(kCollectives, op);
}
std::string_view name_of(ReduceOp op) {
  return name_in(kReduceOps, op);
}
std::string_view name_of(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.name;
  return "?";
}
std::optional<CollectiveOp> collective_from_name(std::string_view name) {
  return key_in(kCollectives, name);
}
std::optional<ReduceOp> reduce_op_from_name(std::string_view name) {
  return key_in(kReduceOps, name);
}
std::optional<DType> dtype_from_name(std::string_view name) {
  // Short aliases people type out of habit.
  if (name == "float" || name == "fp32") return DType::F32;
  if (name == "double" || name == "fp64") return DType::F64;
  if (name == "half" || name == "fp16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  for (const auto& d : kDTypes)
    if (d.name == name) return d.type;
  return std::nullopt;
}
const std::vector<std::string>& all_collective_names() {
  static const std::vector<std::string> names = names_in(kCollectives);  // read per collective
  return names;
}
std::vector<std::string> all_reduce_op_names() {
  return names_in(kReduceOps);
}
std::vector<std::string> all_dtype_names() {
  std::vector<std::string> out;
  for (const auto& d : kDTypes) out.emplace_back(d.name);
  return out;
}

int element_size(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.size;
  return 1;
}

bool is_rooted(CollectiveOp op) {
  return op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce ||
         op == CollectiveOp::Scatter || op == CollectiveOp::Gather;
}

bool is_reducing(CollectiveOp op) {
  return op == CollectiveOp::AllReduce || op == CollectiveOp::ReduceScatter ||
         op == CollectiveOp::Reduce;
}

double busbw_factor(CollectiveOp op, int ranks) {
  const double k = ranks;
  switch (op) {
    case CollectiveOp::AllReduce:
      return ranks > 1 ? 2.0 * (k - 1) / k : 0.0;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather:
    case CollectiveOp::AllToAll:
    case CollectiveOp::Scatter:
    case CollectiveOp::Gather:
      return (k - 1) / k;
    default:
      return 1.0;
  }
}

}  // namespace collsim
