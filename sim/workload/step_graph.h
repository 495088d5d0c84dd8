#pragma once
// A training step as data: a DAG of tasks, each compute on some GPUs or a collective
// (point to point included) among some ranks. Workload builders (data, tensor,
// pipeline and expert parallelism; Chakra traces) produce one; the simulator plays it,
// so overlap and contention fall out of the run rather than out of a formula.
//
// Streams are not a separate concept: a builder puts the tasks of one stream in a
// chain of `after` edges (StepGraphBuilder keeps the chain per stream).
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "request/collective_spec.h"

namespace collsim {

enum class StepTaskKind : std::uint8_t { Compute, Collective };

// A collective task's spec, shared by the tasks of a step that ask for the same on the
// same ranks (StepGraphBuilder::add shares them: a tensor-parallel group's hundreds of
// alike exchanges hold one, not 400 bytes each). Read through ->; changed through edit(),
// which first copies a spec another task shares. Empty reads as CollectiveSpec{}.
class SharedSpec {
 public:
  SharedSpec() = default;
  SharedSpec(CollectiveSpec spec)  // NOLINT: a spec is its own shared copy
      : spec_(std::make_shared<CollectiveSpec>(std::move(spec))) {}
  const CollectiveSpec& operator*() const { return spec_ ? *spec_ : none(); }
  const CollectiveSpec* operator->() const { return &**this; }
  CollectiveSpec& edit() {
    if (!spec_)
      spec_ = std::make_shared<CollectiveSpec>();
    else if (spec_.use_count() > 1)
      spec_ = std::make_shared<CollectiveSpec>(*spec_);
    return *spec_;
  }
  bool same_object(const SharedSpec& other) const { return spec_ == other.spec_; }

 private:
  static const CollectiveSpec& none() {
    static const CollectiveSpec empty;
    return empty;
  }
  std::shared_ptr<CollectiveSpec> spec_;
};

struct StepTask {
  StepTaskKind kind = StepTaskKind::Compute;
  std::string name;      // "stage2.mb5.fwd", "dp.bucket3"
  std::string category;  // what reports total by: "compute", "dp", "tp", "pp", "ep", "fsdp", ...
  // Topology ranks. Compute: the GPUs that run it, in lockstep. Collective: its ranks in
  // the algorithm's order (rank i of the schedule runs on ranks[i]).
  std::vector<int> ranks;
  std::vector<std::int32_t> after;  // indices of earlier tasks that must finish first
  double duration_s = 0;            // compute only
  // Collective only: what it computes and how (op, bytes, dtype, algorithm, options,
  // protocol). Its own name and after are not read (the task's are; the builder clears
  // them, so that alike tasks share one spec); its ranks are the task's.
  SharedSpec collective;
};

struct StepGraph {
  std::vector<StepTask> tasks;  // in an order where every `after` points backwards
};

// Appends tasks, chaining each to the previous task of the same stream of the same
// ranks (a GPU's compute stream, a group's communication stream).
class StepGraphBuilder {
 public:
  // `stream` names a stream: tasks on one stream run one after another.
  std::int32_t add(StepTask task, const std::string& stream);
  // On several streams at once (an all-to-all joining the compute streams of its
  // ranks): it waits for the last task of each, and becomes the last of each.
  std::int32_t add(StepTask task, const std::vector<std::string>& streams);
  // Room for `tasks` in all, made at once: a step of millions of tasks then holds no
  // half-empty vector grown by doubling (nor, while it grows, two copies).
  void reserve(std::size_t tasks) { graph_.tasks.reserve(tasks); }
  // The last task added to `stream`, or -1.
  std::int32_t last(const std::string& stream) const;
  StepGraph take() { return std::move(graph_); }
  const StepGraph& graph() const { return graph_; }

 private:
  // The spec shared by every task that asks for what `spec` does (on the same ranks).
  void share(SharedSpec& spec);

  StepGraph graph_;
  std::unordered_map<std::string, std::int32_t> last_;
  std::unordered_map<std::uint64_t, std::vector<SharedSpec>> specs_;  // by a hash of the spec
};

}  // namespace collsim
