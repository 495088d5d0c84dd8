#include "schedule/generators/host_blocks.h"

#include <fmt/format.h>

#include <map>

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

}  // namespace collsim
