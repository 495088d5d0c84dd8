#pragma once
// NCCL_ALGO and NCCL_PROTO as NCCL (2.24+) reads them: what `"algorithm": "nccl"` may pick,
// for one collective of a scenario or for every collective a training step issues. Below
// the scenario and the workloads, which both read them the same way.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "nccl/nccl_model.h"
#include "nccl/protocol.h"
#include "schedule/collective.h"

namespace collsim {

class JsonView;

class NcclLists {
 public:
  // `v`'s "nccl_algo" and "nccl_proto", either of which may be absent. Every list is
  // checked, whichever collective it names: a typo is refused whatever the run asks for.
  // Only `"algorithm": "nccl"` (`nccl`) takes them, and it refuses "protocol", which NCCL
  // picks.
  static NcclLists parse(const JsonView& v, bool nccl);

  bool given() const { return !algorithms_.path.empty() || !protocols_.path.empty(); }
  // What NCCL may pick for `op`. A list that leaves `op` nothing is refused, at its field,
  // only now: NCCL too complains only when a collective has nothing left to run.
  NcclFilter filter_for(CollectiveOp op) const;

 private:
  // One per NCCL function ("broadcast", "reduce", "allgather", "reducescatter",
  // "allreduce"), then one for every collective NCCL has no such name for.
  static constexpr std::size_t kSlots = 6;
  template <typename T>
  struct Field {
    std::string path;                                           // empty: not given
    std::array<std::optional<std::vector<T>>, kSlots> allowed;  // nullopt: all
    std::vector<T> for_op(CollectiveOp op) const;
  };
  template <typename T>
  static Field<T> parse_field(const JsonView& v, std::vector<T> all, std::string_view names);

  Field<NcclAlgo> algorithms_;
  Field<Protocol> protocols_;
};

}  // namespace collsim
