#pragma once
// The flows' finish times, for the flow model's completion timer. Collective steps run
// in lock-step: thousands of flows finish at the very same picosecond, and a binary
// heap of every flow spends its time ordering those ties (a pop each, O(log n) cache
// misses). Here entries wait in one bucket per distinct finish time and a heap orders
// the buckets: a push is an append (a hash lookup for a time not seen last), and the
// flows due at an instant come out as one array, in the order of their entries' `order`
// (the flow model's: the transfer's id; never the slot, which depends on which were free).
// An entry goes stale when its flow's rate changes or it finishes (the caller says which
// are live); buckets are recycled, so a run allocates only while it reaches sizes it has
// not reached before.
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/time.h"

namespace collsim {

class DueQueue {
 public:
  struct Entry {
    std::int32_t slot;
    std::uint32_t version;
    std::uint64_t order;  // entries due at one instant come out by it, ties as pushed
  };

  void push(Time finish, Entry e) { bucket(finish).entries.push_back(e); }
  bool empty() const { return heap_.empty(); }
  Time earliest() const { return buckets_[heap_.front()].finish; }

  // Drops leading buckets whose entries are all stale (`live(entry)` false); true if a
  // live entry is left. Each bucket remembers how far it was found stale, so the scans
  // of a run cost each entry once.
  template <class Live>
  bool drop_stale(Live&& live) {
    while (!heap_.empty()) {
      Bucket& b = buckets_[heap_.front()];
      while (b.first_live < b.entries.size() && !live(b.entries[b.first_live])) ++b.first_live;
      if (b.first_live < b.entries.size()) return true;
      pop_earliest();
    }
    return false;
  }

  // Moves the earliest bucket's entries into `out`, sorted by `order`, and drops it.
  void take_earliest(std::vector<Entry>& out) {
    Bucket& b = buckets_[heap_.front()];
    out.assign(b.entries.begin() + static_cast<std::ptrdiff_t>(b.first_live), b.entries.end());
    std::stable_sort(out.begin(), out.end(),
                     [](const Entry& x, const Entry& y) { return x.order < y.order; });
    pop_earliest();
  }

 private:
  struct Bucket {
    Time finish = 0;
    std::vector<Entry> entries;
    std::size_t first_live = 0;  // entries before it are stale
  };
  struct Later {  // the heap's order: the earliest finish on top
    const std::vector<Bucket>* buckets;
    bool operator()(std::uint32_t a, std::uint32_t b) const {
      return (*buckets)[a].finish > (*buckets)[b].finish;
    }
  };
  Later later() const { return Later{&buckets_}; }

  Bucket& bucket(Time finish) {
    if (last_ != kNone && buckets_[last_].finish == finish) return buckets_[last_];
    auto [it, added] = by_time_.try_emplace(finish, kNone);
    if (added) {
      if (free_.empty()) {
        it->second = static_cast<std::uint32_t>(buckets_.size());
        buckets_.emplace_back();
      } else {
        it->second = free_.back();
        free_.pop_back();
      }
      Bucket& b = buckets_[it->second];
      b.finish = finish;
      b.entries.clear();
      b.first_live = 0;
      heap_.push_back(it->second);
      std::push_heap(heap_.begin(), heap_.end(), later());
    }
    last_ = it->second;
    return buckets_[last_];
  }

  void pop_earliest() {
    const std::uint32_t id = heap_.front();
    std::pop_heap(heap_.begin(), heap_.end(), later());
    heap_.pop_back();
    by_time_.erase(buckets_[id].finish);
    free_.push_back(id);
    if (last_ == id) last_ = kNone;
  }

  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  std::vector<Bucket> buckets_;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> heap_;  // min-heap of bucket ids by finish; finishes are distinct
  std::unordered_map<Time, std::uint32_t> by_time_;
  std::uint32_t last_ = kNone;  // the bucket most recently pushed to: the usual next target
};

}  // namespace collsim
