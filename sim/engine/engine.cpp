#include "engine/engine.h"

#include <algorithm>

#include "core/interrupt.h"
#include "core/slot_pool.h"

namespace collsim {

void Engine::heap_push(BucketId b) {
  heap_.push_back(b);
  std::push_heap(heap_.begin(), heap_.end(),
                 [this](BucketId x, BucketId y) { return buckets_[x].time > buckets_[y].time; });
}

Engine::BucketId Engine::heap_pop() {
  std::pop_heap(heap_.begin(), heap_.end(),
                [this](BucketId x, BucketId y) { return buckets_[x].time > buckets_[y].time; });
  const BucketId b = heap_.back();
  heap_.pop_back();
  return b;
}

Engine::BucketId Engine::bucket_for(Time at) {
  if (last_ != kNone && buckets_[last_].time == at) return last_;
  if (auto it = by_time_.find(at); it != by_time_.end()) return it->second;
  const BucketId b = take_slot(buckets_, free_);
  buckets_[b].time = at;
  by_time_.emplace(at, b);
  heap_push(b);
  return b;
}

void Engine::schedule(Time at, std::uint32_t tag, std::uint64_t id) {
  if (at < now_) at = now_;
  // The bucket being drained has left the heap but still takes events for now().
  const BucketId b = (current_ != kNone && at == now_) ? current_ : bucket_for(at);
  buckets_[b].events.push_back(Event{at, next_seq_++, id, tag});
  last_ = b;
  ++pending_;
}

Event Engine::pop() {
  while (current_ == kNone || buckets_[current_].next == buckets_[current_].events.size()) {
    if (current_ != kNone) {
      Bucket& done = buckets_[current_];
      by_time_.erase(done.time);
      done.events.clear();
      done.next = 0;
      free_.push_back(current_);
      if (last_ == current_) last_ = kNone;
    }
    current_ = heap_pop();
    now_ = buckets_[current_].time;
  }
  Bucket& b = buckets_[current_];
  --pending_;
  // A few milliseconds of events between polls: Ctrl-C stops a run within a second.
  if ((++processed_ & kPollMask) == 0) {
    add_progress(kPollMask + 1);
    poll_interrupt();
  }
  return b.events[b.next++];
}

}  // namespace collsim
