#include "scenario/scenario.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_view.h"
#include "core/units.h"
#include "core/utf8.h"
#include "request/nccl_lists.h"
#include "scenario/cost_json.h"
#include "schedule/generators/channels.h"
#include "topology/topology_json.h"
#include "workload/moe.h"
#include "workload/workload_json.h"

namespace collsim {
namespace fs = std::filesystem;
namespace {

// Bytes x ranks over a scenario's collectives; a link or rank total is at most a
// small multiple of it, so with this bound those totals stay within int64.
constexpr double kMaxScenarioData = static_cast<double>(std::int64_t{1} << 54);

// The most ops a stored schedule may have: with its dependencies, routes, successor
// graph and timing a stored op costs about 115 bytes (measured: a 2,048-rank ring
// all-reduce, 8.4 M ops, peaks at 960 MB), so 2^26 ops take about 7.5 GiB. Refused
// before generating.
constexpr double kMaxScheduleOps = kMaxStoredOps;
// A streamed schedule holds only the ops in flight, so the bound is on time instead:
// 2^35 ops take hours at a few million a second (100,000 ranks in a ring fit).
constexpr double kMaxStreamedOps = static_cast<double>(std::int64_t{1} << 35);
// The packet model's queues have no backpressure: where many links feed one (an incast),
// that link's queue may come to hold nearly every packet, 32 bytes each.
constexpr double kMaxPackets = static_cast<double>(1 << 28);

// An upper bound on the ops of any catalogue algorithm for K ranks and S segments: a
// ring all-reduce has 2K(K-1) transfers, a pipeline about 2KS. Coarse for trees (K log K),
// which is the price of refusing before any generator runs.
// The most segments any part of the algorithm may cut the data into ("auto": the most
// the tuner tries), and the most channels.
double most_segments(const AlgorithmOptions& o, std::int64_t count) {
  double s =
      o.auto_segments ? static_cast<double>(std::min<std::int64_t>(count, 1 << 16)) : o.segments;
  for (const auto& l : o.levels) s = std::max(s, most_segments(l.options, count));
  return s;
}

// The packet model's queues may hold every packet at once (kMaxPackets): refuse packet
// counts that would not fit in memory (a rank sends up to about twice a collective's
// bytes, so 2 x bytes x ranks bounds them).
void check_packet_count(const JsonView& root, const NetworkParams& network, double data) {
  if (std::string problem = packet_count_problem(network, data); !problem.empty()) {
    const JsonView where =
        root["network"].has("packet") ? root["network"]["packet"] : root["network"]["model"];
    where.fail_message(problem);
  }
}

// A cost model's per-kind "bandwidth_Bps" (calibration file or inline "cost") is the
// rate of every link of that kind: the topology's links take it.
void set_kind_bandwidths(const JsonView& kinds, Topology& topology) {
  if (!kinds.is_object()) kinds.fail("an object keyed by link kind");
  for (const auto& [kind, entry] : kinds.raw().items()) {
    const auto b = kinds[kind].find("bandwidth_Bps");
    const auto k = link_kind_from_name(kind);
    if (!b || !k) continue;  // read_cost_model names a bad kind
    const double bw = b->as_number();
    b->check_bandwidth(bw);
    for (LinkId l = 0; l < static_cast<LinkId>(topology.links().size()); ++l)
      if (topology.link(l).kind == *k) topology.set_bandwidth(l, bw);
  }
}

NetworkParams parse_network(const JsonView& v) {
  v.allow_only(kNetworkFields);
  NetworkParams p;
  if (auto c = v.find("cost")) {
    if (!c->is_object()) c->fail("an object of cost-model terms (docs/models.md)");
    c->allow_only(kCostModelKeys);
    CostModel model;
    read_cost_model(*c, model);
    if (!model.trivial()) p.cost = std::make_shared<const CostModel>(std::move(model));
  }
  if (auto m = v.find("model")) p.model = *network_model_named(m->as_choice(network_model_names()));
  if (auto a = v.find("alpha")) p.alpha = from_seconds(a->as_duration());
  if (auto r = v.find("routing")) {
    const std::string policy = r->as_choice({"auto", "ecmp", "single", "dmodk"});
    p.routing = policy == "auto"     ? RoutingPolicy::ByFabric
                : policy == "ecmp"   ? RoutingPolicy::Ecmp
                : policy == "single" ? RoutingPolicy::Single
                                     : RoutingPolicy::DestinationModK;
  }
  if (auto pk = v.find("packet")) {
    p.packet_bytes = pk->as_size();
    if (p.packet_bytes <= 0) pk->fail("a packet size of at least 1 byte");
  }
  if (auto sw = v.find("switching"))
    p.cut_through = sw->as_choice({"store_and_forward", "cut_through"}) == "cut_through";
  // Accepted and ignored under the other models, as if they shaped the result.
  for (const char* packet_only : {"packet", "switching"})
    if (v.has(packet_only) && !info_of(p.model).holds_packets)
      v[packet_only].fail_message(fmt::format(
          "only the packet model cuts transfers into packets; the {} model ignores it: leave it "
          "out, or set \"model\": \"packet\"",
          name_of(p.model)));
  return p;
}

// "launch": "process_per_gpu" (the default), or {"gpus_per_process": N, "issue_per_gpu":
// "4.4us"} for one process driving N GPUs, as nccl-tests -g N runs; N at most the `gpus`
// the topology has.
LaunchMode parse_launch(const JsonView& v, int gpus) {
  LaunchMode m;
  m.source = "the scenario";
  if (v.is_string()) {
    v.as_choice({"process_per_gpu"});
    return m;
  }
  if (!v.is_object()) v.fail("\"process_per_gpu\", or an object like {\"gpus_per_process\": 8}");
  v.allow_only(kLaunchFields);
  // More GPUs per process than the machine has (65536 on 4 GPUs) made a 1 MiB all-reduce last
  // 288 ms, as if the process issued kernels for GPUs that do not exist.
  m.gpus_per_process = static_cast<int>(v["gpus_per_process"].as_int(1, gpus));
  if (auto i = v.find("issue_per_gpu")) m.issue_per_gpu = from_seconds(i->as_duration());
  return m;
}

// "placement": GPU node names in rank order (rank r runs on placement[r]).
void parse_placement(const JsonView& v, Topology& t) {
  std::vector<NodeId> gpus;
  std::vector<bool> listed(t.nodes().size(), false);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string name = v[i].as_string();
    auto id = t.find(name);
    if (!id || t.node(*id).kind != NodeKind::Gpu)
      v[i].fail_message(fmt::format("no GPU named \"{}\"", name));
    if (listed[*id]) v[i].fail_message(fmt::format("GPU \"{}\" is listed twice", name));
    listed[*id] = true;
    gpus.push_back(*id);
  }
  try {
    t.place_ranks(gpus);
  } catch (const std::invalid_argument& e) {
    v.fail_message(fmt::format("{} ({} GPUs)", e.what(), t.num_ranks()));
  }
}

std::vector<int> parse_ranks(const JsonView& v, int topology_ranks) {
  std::vector<int> ranks = v.as_int_list(0, std::max(0, topology_ranks - 1));
  if (ranks.empty()) v.fail("a non-empty list of ranks");
  std::set<int> seen;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (!seen.insert(ranks[i]).second)
      v[i].fail_message(fmt::format("rank {} is listed twice", ranks[i]));
  return ranks;
}

// The names of the collectives loaded so far, so that each lookup costs a hash, not a
// scan of all earlier collectives (a scan made loading quadratic in their number).
class CollectiveNames {
 public:
  // The index of the collective named `name`, if any.
  std::optional<int> find(const std::string& name) const {
    auto it = index_.find(name);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  // Whether a collective is named `name`, or `name.` starts one's name (a routed
  // all-to-all "x" is "x.dispatch" and "x.combine"): which, as an error says it.
  std::optional<std::string> clash(const std::string& name) const {
    if (index_.contains(name))
      return fmt::format("another collective is already named \"{}\"", name);
    if (auto p = prefixes_.find(name); p != prefixes_.end())
      return fmt::format(
          "\"{}\" is taken: a name before a dot stands for the collectives it "
          "starts (a routed all-to-all's \"{}.dispatch\"), and \"{}\" is one",
          name, name, p->second);
    return std::nullopt;
  }
  void add(const std::string& name, int index) {
    index_.emplace(name, index);
    for (std::size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
      prefixes_.emplace(name.substr(0, dot), name);
  }

 private:
  std::unordered_map<std::string, int> index_;
  std::unordered_map<std::string, std::string> prefixes_;  // a prefix, the first name with it
};

std::vector<int> parse_after(const JsonView& v, const std::vector<CollectiveSpec>& earlier,
                             const CollectiveNames& names) {
  std::vector<int> out;
  const auto wanted = v.as_string_list();
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    // A routed all-to-all is known by its own name too, meaning its combine (its end);
    // of the two, the earlier collective.
    auto exact = names.find(wanted[i]), combine = names.find(wanted[i] + ".combine");
    if (!exact && !combine) {
      std::vector<std::string> known;
      for (const auto& c : earlier) known.push_back(c.name);
      auto near = nearest_word(wanted[i], known);
      v[i].fail_message(
          fmt::format("no earlier collective named \"{}\"{}", wanted[i],
                      near ? fmt::format("; did you mean \"{}\"?", *near) : std::string()));
    }
    if (std::find(wanted.begin(), wanted.begin() + static_cast<std::ptrdiff_t>(i), wanted[i]) !=
        wanted.begin() + static_cast<std::ptrdiff_t>(i))
      v[i].fail_message(fmt::format("\"{}\" is listed twice", wanted[i]));
    out.push_back(std::min(exact.value_or(INT32_MAX), combine.value_or(INT32_MAX)));
  }
  return out;
}

void parse_size_and_type(const JsonView& v, CollectiveSpec& c) {
  if (auto d = v.find("dtype")) c.shape.dtype = *dtype_from_name(d->as_choice(all_dtype_names()));
  if (auto r = v.find("redop"))
    c.shape.reduce_op = *reduce_op_from_name(r->as_choice(all_reduce_op_names()));
  if (auto r = v.find("root")) {
    // Elsewhere it changed the schedule's digest, not its times.
    if (!is_rooted(c.shape.op))
      r->fail_message(fmt::format("{} has no root; only broadcast, reduce, gather and scatter do",
                                  name_of(c.shape.op)));
    c.shape.root = static_cast<int>(r->as_int(0, c.shape.ranks - 1));
  }
  if (v.has("routing")) {  // sizes come from the routing: a "bytes" beside it was ignored
    if (v.has("bytes") && c.shape.op == CollectiveOp::AllToAll)
      v["bytes"].fail_message(
          "a routed all-to-all's sizes come from its routing (tokens_per_rank x "
          "bytes_per_token): leave \"bytes\" out");
    return;
  }
  if (c.shape.op == CollectiveOp::Barrier) {
    if (auto b = v.find("bytes"); b && b->as_size() != 0)
      b->fail_message("a barrier carries no data: leave \"bytes\" out or make it 0");
    c.bytes = c.shape.count = 0;
    return;
  }
  c.bytes = v["bytes"].as_size();
  const int esize = element_size(c.shape.dtype);
  if (c.bytes % esize != 0)
    v["bytes"].fail_message(
        fmt::format("{} bytes is not a whole number of {} elements ({} bytes each)", c.bytes,
                    name_of(c.shape.dtype), esize));
  c.shape.count = c.bytes / esize;
}

// A field no candidate takes: name the algorithms that do, if any.
void refuse_foreign_options(const JsonView& v, const CollectiveSpec& c,
                            const std::vector<const AlgorithmEntry*>& candidates,
                            std::vector<std::string_view> known) {
  for (const auto& e : candidates)
    for (const auto& d : e->options) known.push_back(d.name);
  for (const auto& [key, value] : v.raw().items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string takers;
    for (const auto& e : algorithm_catalogue())
      if (e.op == c.shape.op && e.takes(key))
        takers += fmt::format("{}{}", takers.empty() ? "" : ", ", e.algorithm);
    if (!takers.empty())
      v[key].fail_message(fmt::format("the {} algorithm takes no \"{}\"; {} {}", c.algorithm, key,
                                      takers,
                                      takers.find(',') == std::string::npos ? "does" : "do"));
  }
  v.allow_only(known);
}

// The algorithm, and the entries whose options the collective may carry ("auto":
// every entry for the collective, so each candidate finds its own). Fields no
// candidate takes are refused here, before anything else is read.
std::vector<const AlgorithmEntry*> choose_algorithm(const JsonView& v, CollectiveSpec& c) {
  // Without "algorithm", the catalogue's first entry for the collective.
  if (v.has("algorithm")) {
    c.algorithm = v["algorithm"].as_string();
  } else {
    c.algorithm.clear();
    for (const auto& e : algorithm_catalogue())
      if (e.op == c.shape.op) {
        c.algorithm = e.algorithm;
        break;
      }
  }
  std::vector<const AlgorithmEntry*> candidates;
  for (const auto& e : algorithm_catalogue())
    if (e.op == c.shape.op && (c.algorithm == "auto" || e.algorithm == c.algorithm))
      candidates.push_back(&e);
  if (c.algorithm != "auto" && c.algorithm != "nccl" && candidates.empty()) {
    std::string list;
    for (const auto& a : algorithms_for(c.shape.op)) list += (list.empty() ? "" : ", ") + a;
    const JsonView where = v.has("algorithm") ? v["algorithm"] : v["op"];
    where.fail_message(fmt::format("no algorithm \"{}\" for {}; available: {}, auto, nccl",
                                   c.algorithm, name_of(c.shape.op), list));
  }
  refuse_foreign_options(v, c, candidates, field_names(kCollectiveFields));
  return candidates;
}

void parse_protocols(const JsonView& v, CollectiveSpec& c) {
  const NcclLists lists = NcclLists::parse(v, c.algorithm);
  if (auto p = v.find("protocol")) c.protocol = p->as_choice({"LL", "LL128", "Simple", "auto"});
  c.nccl_filter = lists.filter_for(c.shape.op);
}

void parse_options(const JsonView& v, CollectiveSpec& c,
                   const std::vector<const AlgorithmEntry*>& entries) {
  const OptionContext ctx{c.shape.op, c.shape.ranks, v.path(), nullptr, {}};
  for (const auto* e : entries) e->parse(v, c.options, ctx);
}

// "expert_load": one share per expert, summing to 1. Shares that do not are refused,
// not rescaled: a silent rescale hides a forgotten or mistyped expert.
// "expert_ranks": the rank (position in the collective's "ranks") hosting each expert.
// Without it experts split evenly over the ranks in contiguous blocks (workload/moe.h),
// which needs the expert count to be a multiple of the rank count.
std::vector<int> parse_expert_ranks(const JsonView& routing, int experts, int ranks) {
  auto v = routing.find("expert_ranks");
  if (!v) {
    if (experts % ranks != 0)
      routing["experts"].fail_message(fmt::format(
          "{} experts do not split evenly over {} ranks; give \"expert_ranks\": the rank of "
          "each expert (a position in the collective's ranks)",
          experts, ranks));
    return {};
  }
  std::vector<int> placed = v->as_int_list(0, ranks - 1);
  if (placed.size() != static_cast<std::size_t>(experts))
    v->fail(fmt::format("{} ranks, one per expert", experts));
  return placed;
}

// MoE routing: the collective becomes a dispatch all-to-allv and a combine, the
// combine sending every token back.
std::vector<std::int64_t> parse_routing(const JsonView& v, int ranks) {
  v.allow_only(kRoutingFields);
  if (auto m = v.find("matrix")) {
    for (const char* moe : {"tokens_per_rank", "experts", "top_k", "expert_load", "expert_ranks"})
      if (v.has(moe)) v[moe].fail_message("\"matrix\" gives the token counts: leave it out");
    if (m->size() != static_cast<std::size_t>(ranks))
      m->fail(fmt::format("a {0} x {0} matrix of token counts (one row per sending rank)", ranks));
    std::vector<std::int64_t> tokens;
    for (std::size_t s = 0; s < m->size(); ++s) {
      const JsonView row = (*m)[s];
      if (row.size() != static_cast<std::size_t>(ranks))
        row.fail(fmt::format("a row of {} token counts", ranks));
      for (std::size_t d = 0; d < row.size(); ++d)
        tokens.push_back(row[d].as_int(0, std::int64_t{1} << 40));
    }
    return tokens;
  }
  MoeRouting r;
  r.tokens_per_rank = v["tokens_per_rank"].as_int(0, std::int64_t{1} << 40);
  r.experts = static_cast<int>(v["experts"].as_int(1, 1 << 20));
  r.top_k = v.has("top_k") ? static_cast<int>(v["top_k"].as_int(1, r.experts)) : 1;
  if (auto load = v.find("expert_load"))
    r.expert_load = parse_expert_shares(*load, r.experts, r.top_k);
  r.expert_ranks = parse_expert_ranks(v, r.experts, ranks);
  return moe_dispatch_tokens(r, ranks);
}

std::vector<CollectiveSpec> expand_routing(const JsonView& v, CollectiveSpec c) {
  const JsonView routing = v["routing"];
  if (c.shape.op != CollectiveOp::AllToAll)
    routing.fail_message("only all_to_all collectives take a routing");
  const std::int64_t token_bytes = routing["bytes_per_token"].as_size();
  const int esize = element_size(c.shape.dtype);
  if (token_bytes <= 0 || token_bytes % esize != 0)
    routing["bytes_per_token"].fail(
        fmt::format("a positive multiple of {} bytes ({})", esize, name_of(c.shape.dtype)));
  const int K = c.shape.ranks;
  auto tokens = parse_routing(routing, K);
  auto elements = std::make_shared<std::vector<std::int64_t>>(tokens.size());
  std::int64_t total = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    // tokens <= 2^40 and token_bytes <= 2^50: check in doubles before int64 could wrap.
    const double routed = (static_cast<double>(total) * esize) +
                          static_cast<double>(tokens[i]) * static_cast<double>(token_bytes);
    if (routed > static_cast<double>(kMaxBytes))
      routing.fail_message(
          "the routed data, tokens x bytes_per_token summed, passes 1 PiB (2^50 bytes), the "
          "largest size collsim takes");
    (*elements)[i] = tokens[i] * (token_bytes / esize);
    total += (*elements)[i];
  }
  // nccl-tests' all-to-all size is per rank: report the mean over ranks.
  c.bytes = total * esize / K;
  c.shape.count = total / K;
  CollectiveSpec dispatch = c, combine = c;
  dispatch.name = c.name + ".dispatch";
  dispatch.shape.matrix = elements;
  combine.name = c.name + ".combine";
  combine.shape.matrix = std::make_shared<std::vector<std::int64_t>>(transpose(*elements, K));
  return {dispatch, combine};
}

std::vector<CollectiveSpec> parse_collective(const JsonView& v, std::size_t index,
                                             const Topology& topology,
                                             const std::vector<CollectiveSpec>& earlier,
                                             const CollectiveNames& names) {
  if (!v.is_object())
    v.fail("a collective object like {\"op\": \"all_reduce\", \"bytes\": \"1GiB\"}");
  CollectiveSpec c;
  c.json_path = v.path();
  c.shape.op = *collective_from_name(v["op"].as_choice(all_collective_names()));
  const auto entries = choose_algorithm(v, c);
  c.name = v.has("name") ? v["name"].as_name() : fmt::format("{}#{}", name_of(c.shape.op), index);
  if (const auto clash = names.clash(c.name)) {
    if (!v.has("name"))  // the default name an earlier collective took
      v.fail_message(
          fmt::format("its default name \"{}\" is taken by an earlier collective; "
                      "give it a \"name\"",
                      c.name));
    v["name"].fail_message(*clash);
  }
  if (v.has("ranks")) {
    c.ranks = parse_ranks(v["ranks"], topology.num_ranks());
  } else {
    c.ranks.resize(topology.num_ranks());
    std::iota(c.ranks.begin(), c.ranks.end(), 0);
  }
  c.shape.ranks = static_cast<int>(c.ranks.size());
  parse_size_and_type(v, c);
  parse_options(v, c, entries);
  parse_protocols(v, c);
  if (auto a = v.find("after")) {
    c.after = parse_after(*a, earlier, names);
  } else if (!earlier.empty()) {
    c.after = {static_cast<int>(earlier.size() - 1)};
  }
  if (!v.has("routing")) return {c};
  auto pair = expand_routing(v, c);
  pair[1].after = {static_cast<int>(earlier.size())};  // the combine waits for the dispatch
  return pair;
}

// Each collective's field names, before the topology is built: a typo is reported at
// once, not after building a million-GPU topology. The full parse checks them again.
void check_collective_fields(const JsonView& list) {
  if (!list.is_array()) return;  // the full parse says what was expected
  for (std::size_t i = 0; i < list.size(); ++i) {
    const JsonView v = list[i];
    if (!v.is_object() || !v.has("op")) continue;
    CollectiveSpec c;
    c.shape.op = *collective_from_name(v["op"].as_choice(all_collective_names()));
    choose_algorithm(v, c);
  }
}

// Terms fitted under one network model describe what that model leaves out: under
// another they would be counted twice or not at all (a file fitted under ideal was 544%
// off under flow), so a calibration is used under the model it names only.
void check_fitted_network(const JsonView& calibration, const std::string& model) {
  const auto provenance = calibration.find("provenance");
  if (!provenance || !provenance->is_object()) return;
  const auto network = provenance->find("network");
  if (!network) return;
  // A name that is no model's ("bogus") was offered to the scenario as one to set.
  const std::string fitted = network->as_choice(network_model_names());
  if (fitted != model)
    network->fail_message(fmt::format(
        "this calibration was fitted under the {} network model; the scenario uses {} (set "
        "\"network\": {{\"model\": \"{}\"}}, or fit it again under {} with calibrate "
        "--nccl-tests ... --network {})",
        fitted, model, fitted, model, model));
}

// A calibration describes the links of the machine it was fitted on: where the topology has
// none of the kinds it describes (an NVLink and InfiniBand file on a PCIe box), only its
// launch would apply, silently; it is refused instead.
void check_described_links(const JsonView& calibration, const Topology& topology) {
  const auto kinds = calibration.find("links");
  if (!kinds || !kinds->is_object() || kinds->raw().empty()) return;
  std::vector<std::string> described;
  for (const auto& [kind, entry] : kinds->raw().items()) {
    const auto k = link_kind_from_name(kind);
    if (!k) return;  // read_cost_model names a bad kind
    if (std::any_of(topology.links().begin(), topology.links().end(),
                    [&](const Link& l) { return l.kind == *k; }))
      return;
    described.push_back(kind);
  }
  kinds->fail_message(fmt::format(
      "this calibration describes {} links, and the topology \"{}\" has none of them: it was "
      "fitted on another machine (fit this one's logs with calibrate --nccl-tests)",
      fmt::join(described, " and "), topology.name));
}

}  // namespace

Scenario parse_scenario(const nlohmann::json& doc, const fs::path& base_dir,
                        std::string default_name) {
  const JsonView root(doc, "");
  if (!root.is_object())
    root.fail("a JSON object with \"topology\", \"network\" and \"collectives\"");
  root.allow_only(kScenarioFields);
  Scenario s;
  s.name = root.has("name") ? root["name"].as_name() : std::move(default_name);
  if (root.has("description")) s.description = root["description"].as_string();
  if (auto list = root.find("collectives")) check_collective_fields(*list);
  s.topology = load_topology(root["topology"], base_dir);
  if (auto p = root.find("placement")) parse_placement(*p, s.topology);
  if (auto n = root.find("network")) {
    s.network = parse_network(*n);
    if (auto cost = n->find("cost"))
      if (auto kinds = cost->find("links")) set_kind_bandwidths(*kinds, s.topology);
    if (auto c = n->find("calibration")) {
      const auto file = base_dir / c->as_string();
      // Errors inside the file name the file and the field, like a topology file's.
      apply_calibration(s, read_json_file(file.string(), c->path()), file.string());
    }
  }
  if (auto l = root.find("launch")) set_launch(s, parse_launch(*l, s.topology.num_ranks()));
  if (auto w = root.find("workload")) s.workloads = parse_workloads(*w, s.topology, base_dir);
  const std::optional<JsonView> given = root.find("collectives");
  if (!given && s.workloads.empty()) root["collectives"];  // names what is missing
  const nlohmann::json none = nlohmann::json::array();
  const JsonView list = given ? *given : JsonView(none, "collectives");
  if (given && list.size() == 0) list.fail("at least one collective");
  CollectiveNames names;
  double data = 0;  // bytes x ranks over every collective
  for (std::size_t i = 0; i < list.size(); ++i) {
    for (auto& c : parse_collective(list[i], i, s.topology, s.collectives, names)) {
      // Bytes sent and carried are sums of these products: keep them far from int64's end.
      data += static_cast<double>(c.bytes) * static_cast<double>(c.ranks.size());
      if (std::string problem = data_problem(data); !problem.empty()) list[i].fail_message(problem);
      names.add(c.name, static_cast<int>(s.collectives.size()));
      s.collectives.push_back(std::move(c));
    }
  }
  check_packet_count(root, s.network, data);
  return s;
}

void set_launch(Scenario& s, LaunchMode launch) {
  CostModel cost = s.network.cost ? *s.network.cost : CostModel{};
  cost.host_issue = launch.issue_time();
  s.network.cost = cost.trivial() ? nullptr : std::make_shared<const CostModel>(std::move(cost));
  s.launch = std::move(launch);
}

void apply_calibration(Scenario& s, const nlohmann::json& calibration, const std::string& where) {
  const JsonView c(calibration, where + ":");
  if (!c.is_object())
    c.fail("a calibration object with \"alpha_s\", \"bandwidth_Bps\" or \"links\"");
  c.allow_only(kCalibrationKeys);  // a misspelled key is named first, not "states nothing"
  // A file that states no term changes nothing: most likely the wrong file, said so.
  const auto links = c.find("links");
  if (std::none_of(std::begin(kCalibrationTerms), std::end(kCalibrationTerms),
                   [&](std::string_view k) { return c.find(std::string(k)).has_value(); }) &&
      !(links && links->is_object() && !links->raw().empty()))
    c.fail_message(
        "states no term of the cost model (\"alpha_s\", \"bandwidth_Bps\", \"launch_s\", "
        "\"links\" with a link kind, ...): it would change nothing");
  check_fitted_network(c, std::string(name_of(s.network.model)));
  check_described_links(c, s.topology);
  // The same bounds as a scenario's alpha and bandwidths.
  if (auto a = c.find("alpha_s")) {
    const double alpha = a->as_number();
    a->check_duration(alpha);
    s.network.alpha = from_seconds(alpha);
  }
  if (auto b = c.find("bandwidth_Bps")) {
    const double bw = b->as_number();
    b->check_bandwidth(bw);
    for (LinkId l = 0; l < static_cast<LinkId>(s.topology.links().size()); ++l)
      s.topology.set_bandwidth(l, bw);
  }
  if (auto kinds = c.find("links")) set_kind_bandwidths(*kinds, s.topology);
  // The terms beyond α-β, over whatever the scenario's "cost" set.
  CostModel model = s.network.cost ? *s.network.cost : CostModel{};
  read_cost_model(c, model);
  s.network.cost = model.trivial() ? nullptr : std::make_shared<const CostModel>(std::move(model));
  s.calibrations.push_back(where);
}

namespace {

bool is_scenario(const nlohmann::json& doc) {
  return doc.is_object() && (doc.contains("collectives") || doc.contains("workload"));
}

}  // namespace

Topology load_topology_argument(const std::string& arg, const fs::path& base_dir) {
  if (!arg.empty() && arg.front() == '{') {
    const nlohmann::json doc = parse_json_text(arg, "topology");
    if (is_scenario(doc)) return parse_scenario(doc, base_dir).topology;
    return load_topology(JsonView(doc, "topology"), base_dir);
  }
  const fs::path file = base_dir / arg;
  if (is_regular_file_quietly(file.string()) && is_scenario(read_json_file(file.string(), arg)))
    return load_scenario(file).topology;
  const nlohmann::json name = arg;
  return load_topology(JsonView(name, "topology"), base_dir);
}

void require_collectives(const Scenario& s) {
  if (s.collectives.empty())
    throw InputError("collectives",
                     "this command works on the scenario's collectives and it has only a "
                     "\"workload\"; `collsim run` simulates that");
}

Scenario load_scenario(const fs::path& file) {
  if (!is_regular_file_quietly(file.string())) {
    std::error_code ec;
    const auto st = fs::status(file, ec);
    // A folder or a device is there: "no such file" sent users looking for a typo.
    throw InputError(file.string(), !fs::exists(st) ? "no such scenario file"
                                    : fs::is_directory(st)
                                        ? "a folder, not a scenario file"
                                        : "not a regular file; expected a scenario JSON file");
  }
  const nlohmann::json doc = read_json_file(file.string(), file.string());
  // Its name, unless it says one, is the file's, which may not be UTF-8 (JSON's text).
  return parse_scenario(doc, file.parent_path(), valid_utf8(file.stem().string()));
}

std::string data_problem(double data) {
  if (data <= kMaxScenarioData) return {};
  return "the scenario's data, bytes x ranks summed over its collectives, passes 2^54 bytes "
         "(16 PiB), more than collsim counts";
}

std::string packet_count_problem(const NetworkParams& network, double data) {
  if (!info_of(network.model).holds_packets) return {};
  const double packets = 2 * data / static_cast<double>(network.packet_bytes);
  if (packets <= kMaxPackets) return {};
  return fmt::format(
      "packets of {} bytes make up to {} packets of this scenario's data, more than the 2^28 "
      "collsim holds in memory; use larger packets or the flow model",
      network.packet_bytes, format_significant(packets, 3));
}

double schedule_ops_bound(const CollectiveSpec& c) {
  const double K = static_cast<double>(c.ranks.size());
  const double S = most_segments(c.options, c.shape.count);
  const double C = c.options.auto_channels ? kMaxChannels : c.options.channels;
  // A pipeline (a tree, a chain, NVLS) moves each segment over a few edges per member;
  // anything else may send every chunk around the ring (K^2 ops per pass).
  const AlgorithmEntry* e = find_algorithm(c.shape.op, c.algorithm);
  if (e && e->lanes && c.options.levels.empty()) return 4 * K * S * C;
  return 2 * K * std::max(K, S) * C;
}

std::string schedule_size_problem(const CollectiveSpec& c, bool streamed) {
  const double ops = schedule_ops_bound(c);
  if (ops <= (streamed ? kMaxStreamedOps : kMaxScheduleOps)) return {};
  const double S = most_segments(c.options, c.shape.count);
  const double C = c.options.auto_channels ? kMaxChannels : c.options.channels;
  const std::string shape =
      fmt::format("{} ranks x {} segments x {} channels: a schedule of up to {} ops",
                  c.ranks.size(), S, C, format_significant(ops, 3));
  if (streamed)
    return shape +
           ", more than the 2^35 collsim simulates (hours of work at a few million ops a second); "
           "use fewer ranks, segments or channels";
  return shape + fmt::format(
                     ", more than the 2^26 collsim holds in memory (about {} at 115 bytes an "
                     "op); use fewer ranks, segments or channels, or {}",
                     format_bytes(static_cast<std::int64_t>(ops * 115)), kStreamAdvice);
}

}  // namespace collsim
