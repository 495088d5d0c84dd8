#include "schedule/generators/host_blocks.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>

#include "core/error.h"
#include "core/json_view.h"
#include "topology/topology.h"

namespace collsim {

std::variant<HostBlocks, std::string> host_blocks_of(const std::vector<int>& hosts, int ranks,
                                                     std::string_view algorithm) {
  if (hosts.empty()) return HostBlocks{1, ranks};
  int n = 1;
  while (n < ranks && hosts[n] == hosts[0]) ++n;
  if (ranks % n != 0)
    return fmt::format(
        "{} needs the same number of ranks on every host ({} on the first, {} "
        "ranks in all)",
        algorithm, n, ranks);
  std::map<int, int> seen;
  for (int m = 0; m < ranks; ++m) {
    if (hosts[m] != hosts[m - m % n])
      return fmt::format(
          "{} needs each host's ranks consecutive, {} per host: rank {} is on "
          "host {}, rank {} on host {}",
          algorithm, n, m - m % n, hosts[m - m % n], m, hosts[m]);
    if (m % n == 0 && !seen.emplace(hosts[m], m).second)
      return fmt::format("{} needs each host's ranks consecutive: host {} holds ranks {} and {}",
                         algorithm, hosts[m], seen[hosts[m]], m);
  }
  return HostBlocks{ranks / n, n};
}

HostBlocks host_blocks_or_throw(const std::vector<int>& hosts, int ranks,
                                std::string_view algorithm) {
  if (!hosts.empty() && static_cast<int>(hosts.size()) != ranks)
    throw std::invalid_argument(
        fmt::format("{}: hosts has {} entries for {} ranks", algorithm, hosts.size(), ranks));
  const auto blocks = host_blocks_of(hosts, ranks, algorithm);
  if (auto* why = std::get_if<std::string>(&blocks)) throw std::invalid_argument(*why);
  return std::get<HostBlocks>(blocks);
}

void parse_host_blocks(const JsonView& object, AlgorithmOptions& o, const OptionContext& ctx,
                       std::string_view algorithm) {
  const auto h = object.find("hosts");
  if (!h) return;
  o.hosts = h->as_int_list(0, 1 << 20);
  if (static_cast<int>(o.hosts.size()) != ctx.ranks)
    h->fail(fmt::format("a host index for each of the {} ranks", ctx.ranks));
  const auto blocks = host_blocks_of(o.hosts, ctx.ranks, algorithm);
  if (auto* why = std::get_if<std::string>(&blocks)) h->fail_message(*why);
}

HostBlocks host_blocks_from(AlgorithmOptions& o, const OptionContext& ctx,
                            std::string_view algorithm) {
  if (o.hosts.empty())
    for (int r : ctx.placed)
      o.hosts.push_back(ctx.topology->node(ctx.topology->gpu_of_rank(r)).host);
  const auto blocks = host_blocks_of(o.hosts, ctx.ranks, algorithm);
  if (auto* why = std::get_if<std::string>(&blocks)) throw InputError(ctx.json_path, *why);
  return std::get<HostBlocks>(blocks);
}

void require_rail_switches(const OptionContext& ctx, HostBlocks layout,
                           std::string_view algorithm) {
  if (2 * layout.hosts > kMaxSwitchLegs)
    throw InputError(ctx.json_path,
                     fmt::format("{} spans at most {} hosts (a switch op's legs, two per host); "
                                 "these ranks are on {}",
                                 algorithm, kMaxSwitchLegs / 2, layout.hosts));
  for (int j = 0; j < layout.per_host; ++j) {
    std::vector<NodeId> gpus;
    for (int h = 0; h < layout.hosts; ++h)
      gpus.push_back(ctx.topology->gpu_of_rank(ctx.placed[h * layout.per_host + j]));
    if (!sharp_switch_of(*ctx.topology, gpus, SharpReach::Network)) {
      const int last = (layout.hosts - 1) * layout.per_host + j;
      const std::string ranks = layout.hosts == 2
                                    ? fmt::format("{} and {}", j, last)
                                    : fmt::format("{}, {}, .. {}", j, j + layout.per_host, last);
      throw InputError(ctx.json_path,
                       fmt::format("{} needs a network switch with \"sharp\": true (InfiniBand "
                                   "SHARP) that the GPUs of ranks {} (one per host) all reach; "
                                   "this topology has none",
                                   algorithm, ranks));
    }
  }
}

}  // namespace collsim
