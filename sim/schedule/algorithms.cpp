#include "schedule/algorithms.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/json_view.h"
#include "schedule/generators/barrier.h"
#include "schedule/generators/channels.h"
#include "schedule/generators/collnet.h"
#include "schedule/generators/direct.h"
#include "schedule/generators/halving_doubling.h"
#include "schedule/generators/hierarchical.h"
#include "schedule/generators/nvls.h"
#include "schedule/generators/pat.h"
#include "schedule/generators/ring.h"
#include "schedule/generators/star.h"
#include "schedule/generators/tree.h"

namespace collsim {

// The first entry for a collective is its default algorithm.
const std::vector<AlgorithmEntry>& algorithm_catalogue() {
  static const std::vector<AlgorithmEntry> catalogue = [] {
    std::vector<AlgorithmEntry> c;
    register_ring(c);
    register_trees(c);
    register_halving_doubling(c);
    register_pat(c);
    register_star(c);
    register_direct(c);
    register_barrier(c);
    register_hierarchical(c);
    register_nvls(c);
    register_collnet(c);
    return c;
  }();
  return catalogue;
}

const AlgorithmEntry* find_algorithm(CollectiveOp op, std::string_view algorithm) {
  for (const auto& e : algorithm_catalogue())
    if (e.op == op && e.algorithm == algorithm) return &e;
  return nullptr;
}

std::vector<std::string> algorithms_for(CollectiveOp op) {
  std::vector<std::string> out;
  for (const auto& e : algorithm_catalogue())
    if (e.op == op) out.emplace_back(e.algorithm);
  return out;
}

bool AlgorithmEntry::takes(std::string_view option) const {
  return std::any_of(options.begin(), options.end(),
                     [&](const OptionDef& d) { return d.name == option; });
}

AlgorithmOptions AlgorithmEntry::own(const AlgorithmOptions& o) const {
  AlgorithmOptions out;
  if (takes("segments")) {
    out.segments = o.segments;
    out.auto_segments = o.auto_segments;
    out.segment_bytes = o.segment_bytes;
  }
  if (takes("channels")) {
    out.channels = o.channels;
    out.auto_channels = o.auto_channels;
    out.orders = o.orders;
  }
  if (takes("servers")) out.servers = o.servers;
  if (takes("hosts")) out.hosts = o.hosts;
  if (takes("levels")) out.levels = o.levels;
  return out;
}

// Here, where LevelSpec (which holds options) is complete. Written out: clang 14 crashes
// on a defaulted comparison that recurses through LevelSpec's.
bool AlgorithmOptions::operator==(const AlgorithmOptions& o) const {
  return segments == o.segments && auto_segments == o.auto_segments &&
         segment_bytes == o.segment_bytes && channels == o.channels &&
         auto_channels == o.auto_channels && orders == o.orders && servers == o.servers &&
         hosts == o.hosts && levels == o.levels;
}
static_assert(sizeof(AlgorithmOptions) == 120, "a field was added: compare it above too");

AlgorithmOptions AlgorithmOptions::for_other_ranks() const {
  AlgorithmOptions out = *this;
  out.levels.clear();
  out.orders.clear();
  out.servers.clear();
  out.hosts.clear();
  return out;
}

void AlgorithmEntry::parse(const JsonView& object, AlgorithmOptions& o,
                           const OptionContext& ctx) const {
  for (const auto& d : options) d.parse(object, o, ctx);
}

void AlgorithmEntry::fill_defaults(AlgorithmOptions& o, const OptionContext& ctx) const {
  for (const auto& d : options)
    if (d.defaults) d.defaults(o, ctx);
}

namespace {

// `name`: a count in 1..most, or "auto" (the planner decides).
void parse_count_or_auto(const JsonView& object, std::string_view name, int most, int& count,
                         bool& is_auto) {
  auto v = object.find(name);
  if (!v) return;
  is_auto = v->is_string() && v->as_string() == "auto";
  if (!is_auto) count = static_cast<int>(v->as_int(1, most));
}

void parse_segments(const JsonView& object, AlgorithmOptions& o, const OptionContext&) {
  parse_count_or_auto(object, "segments", 1 << 20, o.segments, o.auto_segments);
}

void parse_channels(const JsonView& object, AlgorithmOptions& o, const OptionContext&) {
  parse_count_or_auto(object, "channels", kMaxChannels, o.channels, o.auto_channels);
}

}  // namespace

namespace {

constexpr FieldDoc kOptionDocs[] = {
    {"segments",
     R"json({"$ref": "#/definitions/countOrAuto", "description": "Pipelined algorithms: cut the buffer into S pieces that follow each other (default 1; more than its elements plan as one piece an element); auto tries powers of two and the uncontended optimum sqrt((K-2)N/(alpha beta)) and keeps the fastest, leaving out counts whose schedule could pass 2^22 ops."})json"},
    {"channels",
     R"json({"anyOf": [{"type": "integer", "minimum": 1, "maximum": 64}, {"const": "auto"}], "description": "C independent copies of the algorithm, each on 1/C of the data and in its own rank order; across nodes channel c enters every node at rail c and leaves at rail c+1, so C channels use C NICs; auto: one per rail across nodes, 1 inside a node; odd nodes run their channels the other way round. nccl_tree: pairs of trees, at most 32, auto 1; nvls, nvls_tree, collnet_direct: independent pipelines, auto 1; collnet_chain: chains, auto one per GPU of a host. Default 1."})json"},
    {"levels",
     R"json({"description": "hierarchical: group sizes from the innermost out; they multiply to the rank count.", "type": "array", "minItems": 1, "items": {"$ref": "#/definitions/level"}})json"},
    {"hosts",
     R"json({"type": "array", "items": {"type": "integer", "minimum": 0}, "description": "nccl_tree, nvls_tree, collnet_direct, collnet_chain: each rank's host (default: from the topology); nvls: the same where no one NVSwitch holds every rank (then NVLS across hosts)."})json"},
    {"servers",
     R"json({"$ref": "#/definitions/rankList", "description": "parameter_server: the ranks that serve."})json"},
};

}  // namespace

std::span<const FieldDoc> algorithm_option_docs() {
  return kOptionDocs;
}

OptionDef segments_option() {
  return {"segments", parse_segments};
}
OptionDef channels_option() {
  return {"channels", parse_channels, channel_defaults};
}

AlgorithmEntry with_channels(AlgorithmEntry e) {
  e.options.push_back(channels_option());
  const Generator plain = e.generate;
  const GroupGenerator on_groups = e.on_groups;
  const int per_group = e.channels;
  const ChannelSplit split = e.channel_split;
  const std::string name(e.algorithm);
  e.generate = [=](const CollectiveShape& shape, const AlgorithmOptions& o) {
    if (o.channels <= 1 && o.orders.empty()) return plain(shape, o);
    auto b = make_builder(shape, name, {}, o.channels * per_group);
    b.join_channels();
    on_groups(b, channel_groups(whole_group(shape), o, split, per_group), o);
    b.join_channels();
    return b.finish();
  };
  return e;
}

std::string describe_algorithm(std::string_view algorithm, const AlgorithmOptions& o) {
  std::string out(algorithm);
  if (!o.levels.empty()) {
    out += " [";
    for (std::size_t l = 0; l < o.levels.size(); ++l)
      out += fmt::format("{}{} {}", l ? " | " : "", o.levels[l].size,
                         describe_algorithm(o.levels[l].algorithm, o.levels[l].options));
    out += "]";
  }
  if (o.segments > 1) out += fmt::format(" ({} segments)", o.segments);
  if (o.channels > 1) out += fmt::format(" ({} channels)", o.channels);
  if (!o.servers.empty()) out += fmt::format(" ({} servers)", o.servers.size());
  return out;
}

}  // namespace collsim
