#pragma once
// Hierarchical all-reduce over nested groups (GPUs of a node, nodes of a pod,
// ...): reduce-scatter inside each innermost group, then the next level works on
// the 1/g of the data each member now owns, and so on up to the outermost level,
// which all-reduces; then all-gathers back down. Each level's algorithm is chosen
// separately (ring below; ring, trees or halving-doubling at the top).
#include "core/field_doc.h"
#include "schedule/algorithms.h"

namespace collsim {

// What a "levels" entry takes besides its algorithm's options.
inline constexpr FieldDoc kLevelFields[] = {
    {"size",
     R"json({"type": "integer", "minimum": 1, "description": "Members of each group at this level (the sizes multiply to the rank count)."})json",
     kRequired},
    {"algorithm",
     R"json({"$ref": "#/definitions/algorithm", "description": "What each group runs: inner levels an algorithm that reduce-scatters and all-gathers on groups, the outermost one that all-reduces (default ring)."})json"},
};

void register_hierarchical(std::vector<AlgorithmEntry>& catalogue);

}  // namespace collsim
