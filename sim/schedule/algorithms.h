#pragma once
// The catalogue of schedule generators: (collective, algorithm name) -> Schedule.
//
// An entry owns everything about its algorithm: the schedule it generates, the
// JSON options it takes (and how to read them), the defaults it derives from the
// topology, and whether it can run on groups of ranks so that hierarchical can
// compose it. Adding an algorithm is its generator file plus one line in
// algorithms.cpp.
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedule/group.h"
#include "schedule/schedule.h"

namespace collsim {

class JsonView;  // core/json_view.h: kept out of this widely included header
class Topology;

struct LevelSpec;

// Knobs an algorithm may read; each reads only those its entry lists in `options`.
struct AlgorithmOptions {
  int segments = 1;            // pipelined algorithms: how many pieces the buffer is cut into
  bool auto_segments = false;  // "segments": "auto": the planner tries several and keeps the best
  std::vector<int> servers;    // parameter server: the server ranks (default: the root)
  // Hierarchical: nested groups, innermost first (e.g. 8 GPUs per node, then 4 nodes);
  // empty until the planner derives them from the topology's hosts.
  std::vector<LevelSpec> levels;
};

// One level of a hierarchical algorithm: groups of `size` members running
// `algorithm` with its own options.
struct LevelSpec {
  int size = 1;
  std::string algorithm = "ring";
  AlgorithmOptions options;
};

// Where options are read and defaults derived: the collective (or level) they belong to.
struct OptionContext {
  CollectiveOp op;
  int ranks;                    // members of the collective (or of each group of a level)
  std::string json_path;        // the object holding the options, for errors
  const Topology* topology;     // for defaults; null while parsing
  std::span<const int> placed;  // topology rank of each member (defaults only)
};

using Generator = std::function<Schedule(const CollectiveShape&, const AlgorithmOptions&)>;
// The algorithm run by disjoint groups at once, into a shared builder (each group on
// its own region): how hierarchical composes levels.
using GroupGenerator = void (*)(ScheduleBuilder&, std::span<const Group>, const AlgorithmOptions&);
// Reads the entry's options from `object` (a collective or a level); unknown fields
// are refused by the caller, which knows every entry's `options`.
using OptionParser = void (*)(const JsonView& object, AlgorithmOptions&, const OptionContext&);
// Fills what the user left out from the topology; throws InputError when it cannot.
using DefaultFiller = void (*)(AlgorithmOptions&, const OptionContext&);

struct AlgorithmEntry {
  CollectiveOp op;
  std::string_view algorithm;
  Generator generate;
  GroupGenerator on_groups = nullptr;          // set when the algorithm can serve a hierarchy level
  int channels = 1;                            // channels one group uses (builders must have them)
  std::vector<std::string_view> options = {};  // JSON fields it takes besides the common ones
  OptionParser parse = nullptr;
  DefaultFiller defaults = nullptr;

  bool takes(std::string_view option) const;
  // Only the options this entry takes, the rest at their defaults ("auto" parses
  // every entry's options into one set; each candidate sees its own).
  AlgorithmOptions own(const AlgorithmOptions& o) const;
};

const std::vector<AlgorithmEntry>& algorithm_catalogue();
const AlgorithmEntry* find_algorithm(CollectiveOp op, std::string_view algorithm);
std::vector<std::string> algorithms_for(CollectiveOp op);

// The options shared by several entries.
void parse_segments_option(const JsonView& object, AlgorithmOptions& o, const OptionContext&);
// What the planner reports: "ring", "binomial_tree (8 segments)",
// "hierarchical [8 ring | 8 double_binary_tree (4 segments)]".
std::string describe_algorithm(std::string_view algorithm, const AlgorithmOptions& o);

}  // namespace collsim
