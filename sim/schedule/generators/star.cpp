#include "schedule/generators/star.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/json_view.h"
#include "schedule/group.h"

namespace collsim {
namespace {

// Servers own one shard each. Every other rank pushes its copy of the shard into
// a slot of the server's scratch buffer (one step, all at once: the server's link
// is where they contend); the server folds the slots in rank order, one local
// reduction per step; then (all-reduce) sends the reduced shard back to everyone.
Schedule star(const CollectiveShape& s, const std::string& name, std::vector<int> servers,
              bool send_back) {
  const int K = s.ranks;
  const Partition shards{s.count, static_cast<int>(servers.size())};
  const std::int64_t slot = shards.max_size();
  const int scratch = data_buffer_count(s.op);
  auto b = make_builder(s, name, {K * slot});
  b.next_step();
  for (std::size_t j = 0; j < servers.size(); ++j)
    for (int m = 0; m < K; ++m)
      if (m != servers[j])
        b.copy({m, 0, shards.begin(j)}, {servers[j], scratch, m * slot}, shards.size(j));
  for (int m = 0; m < K; ++m) {
    b.next_step();
    for (std::size_t j = 0; j < servers.size(); ++j)
      if (m != servers[j])
        b.reduce({servers[j], scratch, m * slot}, {servers[j], 0, shards.begin(j)}, shards.size(j));
  }
  if (send_back) {
    b.next_step();
    for (std::size_t j = 0; j < servers.size(); ++j)
      for (int m = 0; m < K; ++m)
        if (m != servers[j])
          b.copy({servers[j], 0, shards.begin(j)}, {m, 0, shards.begin(j)}, shards.size(j));
  }
  return b.finish();
}

Schedule naive_broadcast(const CollectiveShape& s) {
  auto b = make_builder(s, "naive");
  b.next_step();
  for (int m = 0; m < s.ranks; ++m)
    if (m != s.root) b.copy({s.root, 0, 0}, {m, 0, 0}, s.count);
  return b.finish();
}

// "servers": distinct members of the collective.
void parse_servers(const JsonView& object, AlgorithmOptions& o, const OptionContext& ctx) {
  auto v = object.find("servers");
  if (!v) return;
  o.servers = v->as_int_list(0, std::max(0, ctx.ranks - 1));
  if (o.servers.empty()) v->fail("a non-empty list of ranks");
  std::vector<int> sorted = o.servers;
  std::sort(sorted.begin(), sorted.end());
  if (auto d = std::adjacent_find(sorted.begin(), sorted.end()); d != sorted.end())
    v->fail_message(fmt::format("rank {} is listed twice", *d));
}

}  // namespace

void register_star(std::vector<AlgorithmEntry>& c) {
  c.push_back({.op = CollectiveOp::AllReduce,
               .algorithm = "naive",
               .summary = "Everyone sends the root its data; the root reduces (one local step per "
                          "contribution) and sends the result back.",
               .generate = [](const CollectiveShape& s, const AlgorithmOptions&) {
                 return star(s, "naive", {s.root}, true);
               }});
  c.push_back(
      {.op = CollectiveOp::Reduce,
       .algorithm = "naive",
       .summary =
           "Everyone sends the root its data; the root reduces (one local step per contribution).",
       .generate = [](const CollectiveShape& s, const AlgorithmOptions&) {
         return star(s, "naive", {s.root}, false);
       }});
  c.push_back({.op = CollectiveOp::Broadcast,
               .algorithm = "naive",
               .summary = "The root sends the whole buffer to every rank in one step.",
               .generate = [](const CollectiveShape& s, const AlgorithmOptions&) {
                 return naive_broadcast(s);
               }});
  c.push_back({.op = CollectiveOp::AllReduce,
               .algorithm = "parameter_server",
               .summary = "Workers push their shards to the `servers` (default: the root), which "
                          "reduce them and send the results back.",
               .generate =
                   [](const CollectiveShape& s, const AlgorithmOptions& o) {
                     return star(s, "parameter_server",
                                 o.servers.empty() ? std::vector<int>{s.root} : o.servers, true);
                   },
               .options = {{"servers", parse_servers}}});
}

}  // namespace collsim
