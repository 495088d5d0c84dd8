#pragma once
// NCCL_ALGO and NCCL_PROTO as NCCL reads them (docs/nccl.md §2.3): what `"algorithm": "nccl"` may
// pick, for one collective of a scenario or for every collective a training step issues. Below the
// scenario and the workloads, which both read them the same way.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nccl/nccl_model.h"
#include "schedule/collective.h"

namespace collsim {

class JsonView;

class NcclLists {
 public:
  // NCCL's functions ("broadcast", "reduce", "allgather", "reducescatter", "allreduce":
  // kNcclFunctions in nccl_lists.cpp), each with its own lists.
  static constexpr std::size_t kFunctions = 5;

  // The "nccl_algo" and "nccl_proto" of `v` (a collective, a workload's job), either of
  // which may be absent. Every list is checked, whichever collective it names: a typo is
  // refused whatever the run asks for. Only `v`'s `algorithm` "nccl" takes them, and it
  // refuses `v`'s "protocol": NCCL picks the protocol.
  static NcclLists parse(const JsonView& v, std::string_view algorithm);

  // What NCCL may pick for `op`. A list that leaves `op` nothing is refused, at its field,
  // only now: NCCL too complains only when a collective has nothing left to run. Nothing
  // restricts what NCCL runs as point-to-point sends (all-to-all, send/recv, ...).
  NcclFilter filter_for(CollectiveOp op) const;

 private:
  template <typename T>
  struct Field {
    std::string path;                                           // empty: not given
    std::array<std::optional<std::vector<T>>, kFunctions> allowed;  // nullopt: all
    std::vector<T> for_function(std::size_t slot, CollectiveOp op) const;
  };
  template <typename T>
  static Field<T> parse_field(const JsonView& v, std::vector<T> all, std::string_view names);

  Field<NcclAlgo> algorithms_;
  Field<Protocol> protocols_;
};

}  // namespace collsim
