#pragma once
// The catalogue of schedule generators: (collective, algorithm name) -> Schedule.
//
// An entry owns everything about its algorithm: the schedule it generates, the
// JSON options it takes (and how to read them), the defaults it derives from the
// topology, and whether it can run on groups of ranks so that hierarchical can
// compose it. Adding an algorithm is its generator file plus one line in
// algorithms.cpp.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/field_doc.h"
#include "schedule/group.h"
#include "schedule/nccl_family.h"
#include "schedule/quotient.h"
#include "schedule/schedule.h"

namespace collsim {

class JsonView;  // core/json_view.h: kept out of this widely included header
class Topology;

struct LevelSpec;

// Knobs an algorithm may read; each reads only those its entry lists in `options`.
struct AlgorithmOptions {
  int segments = 1;            // pipelined algorithms: how many pieces the buffer is cut into
  bool auto_segments = false;  // "segments": "auto": the planner tries several and keeps the best
  // NVLS, NVLSTree and the ring's chain (broadcast, reduce) as NCCL runs them (set by the
  // planner): each pipeline's segments hold this many bytes (a chain on C channels: each
  // channel's chain a C-th of them) but the last, which holds the rest, as NCCL cuts fixed
  // chunks (equal parts would shrink as a size passes a whole segment, and the time with
  // them); 0: equal parts.
  std::int64_t segment_bytes = 0;
  // Independent copies of the algorithm, each on its own slice of the data and its own
  // rank order (rails); 1: one.
  int channels = 1;
  bool auto_channels = false;            // "channels": "auto": the planner's rule
  std::vector<std::vector<int>> orders;  // member order per channel; empty: 0..K-1 for all
  std::vector<int> servers;              // parameter server: the server ranks (default: the root)
  // NCCL's tree: the host of each member (chains inside hosts, a tree across them);
  // empty: one host.
  std::vector<int> hosts;
  // Hierarchical: nested groups, innermost first (e.g. 8 GPUs per node, then 4 nodes);
  // empty until the planner derives them from the topology's hosts.
  std::vector<LevelSpec> levels;

  // These options for another set of ranks: what names members or was derived for
  // these ranks (levels, channel orders, servers) is dropped, for the planner to
  // derive again; counts stay.
  AlgorithmOptions for_other_ranks() const;

  bool operator==(const AlgorithmOptions&) const;
};

// One level of a hierarchical algorithm: groups of `size` members running
// `algorithm` with its own options.
struct LevelSpec {
  int size = 1;
  std::string algorithm = "ring";
  AlgorithmOptions options;

  bool operator==(const LevelSpec& o) const {
    return size == o.size && algorithm == o.algorithm && options == o.options;
  }
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
// its own region): how hierarchical composes levels and channels split the data.
using GroupGenerator = void (*)(ScheduleBuilder&, std::span<const Group>, const AlgorithmOptions&);

// One JSON option of an algorithm: how it is read from the collective (or level)
// object, and what the planner fills in from the topology when the user left it out.
struct OptionDef {
  std::string_view name;
  void (*parse)(const JsonView& object, AlgorithmOptions&, const OptionContext&);
  void (*defaults)(AlgorithmOptions&, const OptionContext&) = nullptr;  // may throw InputError
};

// How channels divide the data: contiguous slices of the buffer (all-reduce), or a
// lane of every chunk (so reduce-scatter and all-gather results stay in place).
enum class ChannelSplit : std::uint8_t { Slices, Lanes };

struct AlgorithmEntry {
  CollectiveOp op;
  std::string_view algorithm;
  // What its schedule does for this collective, in a sentence or two: the reference's
  // algorithm table (collsim schema --markdown, docs/schema.md) is made of these.
  std::string_view summary;
  Generator generate;
  GroupGenerator on_groups = nullptr;   // set when the algorithm can run on groups
  int channels = 1;                     // channels one group uses (builders must have them)
  std::vector<OptionDef> options = {};  // the JSON fields it takes besides the common ones
  ChannelSplit channel_split = ChannelSplit::Slices;
  // Its schedule holds switch ops (NVLS): a stream cannot carry them, and only a network
  // model that shares links can time them (the planner checks both).
  bool switch_ops = false;
  // In more than one segment its ops run in a pipeline's lanes (builder.h): a stream cannot
  // carry them either (the streamed simulator relies on each rank's ops following its latest).
  bool lanes = false;
  // The NCCL family its schedule has the shape of: which of NCCL's latency and protocol
  // tables it pays (nccl/protocol.h).
  NcclAlgo nccl_family = NcclAlgo::Ring;
  // Its schedule folded by a turn of the ranks (schedule/quotient.h), made without the
  // full schedule, for a collective whose ranks are interchangeable; null for an
  // algorithm that has none, nullopt for a shape or options that are not symmetric
  // (chunks no turn below all the ranks maps onto chunks of their sizes, channels in other
  // rank orders), or a fold of more than kMostRepresentatives ops (quotient_stream makes
  // that one a step at a time). tests/test_symmetry.cpp checks each
  // against fold_by_rotation of the full schedule.
  std::function<std::optional<QuotientSchedule>(const CollectiveShape&, const AlgorithmOptions&)>
      quotient = nullptr;
  // Where quotient gives a fold, in words that follow "folded only" (collsim says why not).
  std::string_view fold_condition =
      "in equal chunks, each channel visiting the ranks in an order a turn of them maps onto "
      "itself";
  // The same fold widened to a turn of `period` ranks (a multiple of quotient's own), where
  // widen (quotient.h) cannot tell the full schedule's order (rings in rail orders); null:
  // widen does.
  std::function<QuotientSchedule(const CollectiveShape&, const AlgorithmOptions&, int period)>
      quotient_at = nullptr;
  // The fold by `period` ranks (0: the least) made a step at a time, for a fold too large
  // to store (quotient gives nullopt past kMostRepresentatives); null: none.
  std::function<std::optional<StreamedQuotient>(const CollectiveShape&, const AlgorithmOptions&,
                                                int period)>
      quotient_stream = nullptr;

  bool takes(std::string_view option) const;
  // `own` (what quotient gave for these shape and options) widened to `period` ranks.
  QuotientSchedule fold_at(const CollectiveShape& s, const AlgorithmOptions& o,
                           const QuotientSchedule& own, int period) const {
    return quotient_at ? quotient_at(s, o, period) : widen(own, period);
  }
  // Whether its schedule, with options `o`, can be generated while it is simulated
  // (schedule/stream.h): a pipeline in one segment has no lanes.
  bool streams(const AlgorithmOptions& o) const { return !switch_ops && !(lanes && o.segments > 1); }
  // Only the options this entry takes, the rest at their defaults ("auto" parses
  // every entry's options into one set; each candidate sees its own).
  AlgorithmOptions own(const AlgorithmOptions& o) const;
  void parse(const JsonView& object, AlgorithmOptions& o, const OptionContext& ctx) const;
  void fill_defaults(AlgorithmOptions& o, const OptionContext& ctx) const;
};

const std::vector<AlgorithmEntry>& algorithm_catalogue();
const AlgorithmEntry* find_algorithm(CollectiveOp op, std::string_view algorithm);
std::vector<std::string> algorithms_for(CollectiveOp op);

// The JSON Schema of every option an entry may take, one per name whichever entries take
// it (tests/test_schema.cpp checks that each option taken has one, and no other).
std::span<const FieldDoc> algorithm_option_docs();

// The options shared by several entries.
OptionDef segments_option();  // "segments": a count, or "auto"
// "channels": a count or "auto" (the planner's rule); rank orders from the topology's rails.
OptionDef channels_option();

// The entry with "channels": its generator, when channels > 1, runs C copies of
// on_groups over the data split by channel_split, each in its channel's rank order.
AlgorithmEntry with_channels(AlgorithmEntry e);

// What the planner reports: "ring", "binomial_tree (8 segments)",
// "hierarchical [8 ring | 8 double_binary_tree (4 segments)]".
std::string describe_algorithm(std::string_view algorithm, const AlgorithmOptions& o);

}  // namespace collsim
