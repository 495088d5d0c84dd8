#include "network/ideal_model.h"

namespace collsim {

void IdealModel::start_transfer(NetworkHost& host, TransferId id, PathId path, std::int64_t bytes) {
  const PathInfo& info = router_.info(path);
  const Time now = host.now();
  const Time done = add_time(add_time(now, alpha_),
                             add_time(info.latency, transfer_time(bytes, info.bottleneck)));
  LinkCounters& counters = host.link_counters();
  for (LinkId l : router_.links(path)) counters.add(l, bytes, now, done);
  host.schedule_wakeup(done, id);
}

}  // namespace collsim
