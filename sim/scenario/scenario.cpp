#include "scenario/scenario.h"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "core/error.h"
#include "core/json_view.h"
#include "topology/topology_json.h"

namespace collsim {
namespace fs = std::filesystem;
namespace {

NetworkParams parse_network(const JsonView& v) {
  v.allow_only({"model", "alpha"});
  NetworkParams p;
  if (auto m = v.find("model")) p.model = m->as_choice({"ideal"});
  if (auto a = v.find("alpha")) p.alpha = from_seconds(a->as_duration());
  return p;
}

std::vector<int> parse_ranks(const JsonView& v, int topology_ranks) {
  std::vector<int> ranks = v.as_int_list(0, std::max(0, topology_ranks - 1));
  if (ranks.empty()) v.fail("a non-empty list of ranks");
  std::set<int> seen;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (!seen.insert(ranks[i]).second) v[i].fail_message(fmt::format("rank {} is listed twice", ranks[i]));
  return ranks;
}

std::vector<int> parse_after(const JsonView& v, const std::vector<CollectiveSpec>& earlier) {
  std::vector<int> out;
  const auto names = v.as_string_list();
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto it = std::find_if(earlier.begin(), earlier.end(), [&](const CollectiveSpec& c) { return c.name == names[i]; });
    if (it == earlier.end()) {
      std::vector<std::string> known;
      for (const auto& c : earlier) known.push_back(c.name);
      auto near = nearest_word(names[i], known);
      v[i].fail_message(fmt::format("no earlier collective named \"{}\"{}", names[i],
                                    near ? fmt::format("; did you mean \"{}\"?", *near) : std::string()));
    }
    out.push_back(static_cast<int>(it - earlier.begin()));
  }
  return out;
}

CollectiveSpec parse_collective(const JsonView& v, std::size_t index, const Topology& topology,
                                const std::vector<CollectiveSpec>& earlier) {
  v.allow_only({"name", "op", "algorithm", "bytes", "dtype", "redop", "root", "ranks", "after", "segments"});
  CollectiveSpec c;
  c.json_path = v.path();
  c.shape.op = *collective_from_name(v["op"].as_choice(all_collective_names()));
  c.name = v.has("name") ? v["name"].as_string() : fmt::format("{}#{}", name_of(c.shape.op), index);
  for (const auto& e : earlier)
    if (e.name == c.name) v["name"].fail_message(fmt::format("another collective is already named \"{}\"", c.name));

  if (v.has("ranks")) {
    c.ranks = parse_ranks(v["ranks"], topology.num_ranks());
  } else {
    c.ranks.resize(topology.num_ranks());
    std::iota(c.ranks.begin(), c.ranks.end(), 0);
  }
  c.shape.ranks = static_cast<int>(c.ranks.size());
  if (auto d = v.find("dtype")) c.shape.dtype = *dtype_from_name(d->as_choice(all_dtype_names()));
  if (auto r = v.find("redop")) c.shape.reduce_op = *reduce_op_from_name(r->as_choice(all_reduce_op_names()));
  if (auto r = v.find("root")) c.shape.root = static_cast<int>(r->as_int(0, c.shape.ranks - 1));

  c.bytes = v["bytes"].as_size();
  const int esize = element_size(c.shape.dtype);
  if (c.bytes % esize != 0)
    v["bytes"].fail_message(fmt::format("{} bytes is not a whole number of {} elements ({} bytes each)", c.bytes,
                                        name_of(c.shape.dtype), esize));
  c.shape.count = c.bytes / esize;

  const auto algorithms = algorithms_for(c.shape.op);
  // Without "algorithm", the catalogue's first entry for the collective.
  c.algorithm = v.has("algorithm") ? v["algorithm"].as_string() : (algorithms.empty() ? "" : algorithms.front());
  if (!find_algorithm(c.shape.op, c.algorithm)) {
    std::string list;
    for (const auto& a : algorithms) list += (list.empty() ? "" : ", ") + a;
    const JsonView where = v.has("algorithm") ? v["algorithm"] : v["op"];
    where.fail_message(fmt::format("no algorithm \"{}\" for {}; available: {}", c.algorithm, name_of(c.shape.op),
                                   list.empty() ? "none yet" : list));
  }
  if (auto s = v.find("segments")) c.options.segments = static_cast<int>(s->as_int(1, 1 << 20));

  if (auto a = v.find("after")) {
    c.after = parse_after(*a, earlier);
  } else if (index > 0) {
    c.after = {static_cast<int>(index - 1)};
  }
  return c;
}

}  // namespace

Scenario parse_scenario(const nlohmann::json& doc, const fs::path& base_dir, std::string default_name) {
  const JsonView root(doc, "");
  if (!root.is_object()) root.fail("a JSON object with \"topology\", \"network\" and \"collectives\"");
  root.allow_only({"name", "description", "topology", "network", "collectives"});
  Scenario s;
  s.name = root.has("name") ? root["name"].as_string() : std::move(default_name);
  if (root.has("description")) s.description = root["description"].as_string();
  s.topology = load_topology(root["topology"], base_dir);
  if (auto n = root.find("network")) s.network = parse_network(*n);
  const JsonView list = root["collectives"];
  if (list.size() == 0) list.fail("at least one collective");
  for (std::size_t i = 0; i < list.size(); ++i)
    s.collectives.push_back(parse_collective(list[i], i, s.topology, s.collectives));
  return s;
}

Scenario load_scenario(const fs::path& file) {
  if (!fs::is_regular_file(file)) throw InputError(file.string(), "no such scenario file");
  const nlohmann::json doc = read_json_file(file.string(), file.string());
  return parse_scenario(doc, file.parent_path(), file.stem().string());
}

}  // namespace collsim
