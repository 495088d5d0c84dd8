#pragma once
// A slot in a vector of reusable records: a freed one if any, else a new one at
// the end. Engines and models keep records alive across events this way, so a
// run allocates only while it reaches sizes it has not reached before.
#include <vector>

namespace collsim {

template <class Index, class T>
Index take_slot(std::vector<T>& items, std::vector<Index>& free) {
  if (!free.empty()) {
    const Index i = free.back();
    free.pop_back();
    return i;
  }
  items.emplace_back();
  return static_cast<Index>(items.size() - 1);
}

}  // namespace collsim
