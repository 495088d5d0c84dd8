#include "network/ideal_model.h"

#include <algorithm>

namespace collsim {

void IdealModel::start_transfer(NetworkHost& host, TransferId id, PathId path, std::int64_t bytes,
                                const TransferCost& cost) {
  const PathInfo& info = router_.info(path);
  const Time now = host.now();
  double rate = info.bottleneck / cost.stretch;
  if (cost.ceiling_Bps > 0) rate = std::min(rate, cost.ceiling_Bps);
  const Time done =
      add_time(add_time(now, cost.sender_start_up(alpha_)), transfer_time(bytes, rate));
  LinkCounters& counters = host.link_counters();
  for (LinkId l : router_.links(path)) counters.add(l, bytes, now, done);
  host.schedule_wakeup(done, id);
}

}  // namespace collsim
