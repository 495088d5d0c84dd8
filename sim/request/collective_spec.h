#pragma once
// One collective as a user asks for it (a scenario's "collectives" entry, a workload's
// gradient bucket or TP all-reduce, a Chakra node): what it computes, on which ranks,
// how, and after what. Below both the scenario and the workloads, which produce it,
// and the planner, which settles it.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "nccl/nccl_model.h"
#include "schedule/algorithms.h"
#include "schedule/schedule.h"

namespace collsim {

struct CollectiveSpec {
  std::string name;
  std::string json_path;  // "collectives[2]", for errors found later
  // Where its "algorithm", "protocol", "nccl_algo" and "nccl_proto" were given, for errors
  // about them: json_path itself, or the job of a workload's collective (a Chakra node's
  // json_path names the node).
  std::string settings_path;  // empty: json_path
  CollectiveShape shape;
  std::string algorithm;     // "auto": the planner picks the fastest (plan/plan.h)
  AlgorithmOptions options;  // as written; the planner fills in the rest
  std::int64_t bytes = 0;    // nccl-tests' "size"
  std::vector<int> ranks;    // topology ranks taking part, in the algorithm's rank order
  std::vector<int> after;    // indices of collectives that must finish first
  // "LL", "LL128", "Simple", "auto" (the tuner tries each), or "" (plain α-β).
  std::string protocol;
  NcclFilter nccl_filter;  // "algorithm": "nccl": what "nccl_algo" / "nccl_proto" allow

  std::string settings_at(std::string_view field) const {
    return (settings_path.empty() ? json_path : settings_path) + std::string(field);
  }

  // Whether `other` asks for exactly this collective, whatever its name, place in the
  // file and predecessors: then both plan alike (plan/plan.h shares the plan).
  bool asks_the_same_as(const CollectiveSpec& other) const {
    return ranks == other.ranks && asks_the_same_elsewhere(other);
  }
  // ... the same, on ranks that may differ (a training step's identical groups).
  bool asks_the_same_elsewhere(const CollectiveSpec& other) const {
    return bytes == other.bytes && shape == other.shape && algorithm == other.algorithm &&
           protocol == other.protocol && options == other.options &&
           nccl_filter == other.nccl_filter;
  }
};

// A hash of what asks_the_same_elsewhere compares that is cheap to read (algorithm,
// bytes, op), for tables of alike requests; each table mixes in what else tells its
// requests apart (their hosts, their ranks).
struct SpecHash {
  std::uint64_t value;
  explicit SpecHash(const CollectiveSpec& s) : value(std::hash<std::string>{}(s.algorithm)) {
    mix(s.bytes);
    mix(static_cast<std::int64_t>(s.shape.op));
  }
  void mix(std::int64_t v) {
    value = value * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(v);
  }
};

}  // namespace collsim
