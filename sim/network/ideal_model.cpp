#include "network/ideal_model.h"

namespace collsim {

void IdealModel::start_transfer(NetworkHost& host, TransferId id, PathId path, std::int64_t bytes,
                                const TransferCost& cost) {
  const PathInfo& info = router_.info(path);
  const Time now = host.now();
  const Time done = add_time(add_time(now, cost.sender_start_up(alpha_)),
                             transfer_time(bytes, info.bottleneck / cost.stretch));
  LinkCounters& counters = host.link_counters();
  for (LinkId l : router_.links(path)) counters.add(l, bytes, now, done);
  host.schedule_wakeup(done, id);
}

}  // namespace collsim
