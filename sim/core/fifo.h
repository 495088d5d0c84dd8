#pragma once
// A first-in first-out queue in one ring buffer that doubles when full: pushing and
// popping never allocate once it has reached its largest size, and its elements sit in
// one block (std::deque allocates a block every few elements and reaches them through
// a map). For the packet model's per-link queues, where every packet-hop is a push and
// a pop, and the event engine's lanes and buckets.
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace collsim {

template <class T>
class Fifo {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  Fifo() = default;
  Fifo(const Fifo&) = default;
  Fifo& operator=(const Fifo&) = default;
  // A queue moved from is empty and usable: its counts go with its slots.
  Fifo(Fifo&& other) noexcept
      : slots_(std::move(other.slots_)),
        head_(std::exchange(other.head_, 0)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  Fifo& operator=(Fifo&& other) noexcept {
    slots_ = std::move(other.slots_);
    other.slots_.clear();
    head_ = std::exchange(other.head_, 0);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    return *this;
  }

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }
  const T& operator[](std::size_t i) const {
    return slots_[(head_ + i) & (capacity_ - 1)];
  }  // from the front

  // Inline, the growth apart: the packet model pushes on every packet-hop.
  [[gnu::always_inline]] void push_back(const T& value) {
    if (size_ == capacity_) [[unlikely]]
      grow();
    slots_[(head_ + size_) & (capacity_ - 1)] = value;
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
  }

 private:
  // Twice the slots (a power of two, so an index wraps with a mask), in order from 0.
  [[gnu::noinline]] void grow() {
    std::vector<T> bigger(slots_.empty() ? 8 : 2 * slots_.size());
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = slots_[(head_ + i) & (capacity_ - 1)];
    slots_.swap(bigger);
    head_ = 0;
    capacity_ = slots_.size();
  }

  std::vector<T> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;  // slots_.size(), kept: the size of a vector of 24-byte T divides
};

}  // namespace collsim
