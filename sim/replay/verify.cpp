#include "replay/verify.h"

#include <fmt/format.h>

#include <bit>
#include <vector>

#include "replay/replayer.h"

namespace collsim {
namespace {

template <class T>
void compare_outputs(const Schedule& s, const Buffers<T>& inputs, const Buffers<T>& result,
                     Verdict& v, const char* how) {
  for (int r = 0; r < s.shape.ranks; ++r) {
    for (const Region& reg : output_regions(s.shape, r)) {
      for (std::int64_t i = 0; i < reg.count; ++i) {
        ++v.checked;
        if (result.at(r, reg.buffer)[reg.offset + i] ==
            expected_element(s.shape, inputs, r, reg, i))
          continue;
        if (v.wrong++ == 0)
          v.first_problem =
              fmt::format("{}: rank {} buffer {} element {} differs from the definition", how, r,
                          reg.buffer, reg.offset + i);
      }
    }
  }
}

bool replicated(CollectiveOp op) {
  return op == CollectiveOp::AllReduce || op == CollectiveOp::AllGather ||
         op == CollectiveOp::Broadcast;
}

}  // namespace

Verdict verify_symbolic(const Schedule& s) {
  Buffers<Symbol> inputs(s);
  fill_inputs(s, inputs, [](int rank, std::int64_t index) { return Symbol::of(rank, index); });
  Buffers<Symbol> result = inputs;
  replay_by_step(s, result);
  Verdict v;
  compare_outputs(s, inputs, result, v, "symbolic");
  return v;
}

Verdict verify_barrier(const Schedule& s) {
  const int K = s.shape.ranks;
  const std::size_t words = (static_cast<std::size_t>(K) + 63) / 64;
  // heard[op]: ranks known to have arrived once op completes; heard_by[rank]: after all its ops.
  std::vector<std::uint64_t> heard(s.size() * words, 0), heard_by(K * words, 0);
  auto set = [&](std::uint64_t* bits, int rank) {
    bits[rank / 64] |= std::uint64_t{1} << (rank % 64);
  };
  for (int r = 0; r < K; ++r) set(&heard_by[r * words], r);
  for (OpId id = 0; id < s.size(); ++id) {  // dependencies point to earlier ops
    std::uint64_t* h = &heard[id * words];
    set(h, s.ops[id].src_rank);
    for (OpId d : s.deps_of(id))
      for (std::size_t w = 0; w < words; ++w) h[w] |= heard[d * words + w];
    for (std::size_t w = 0; w < words; ++w) heard_by[s.ops[id].dst_rank * words + w] |= h[w];
  }
  Verdict v;
  for (int r = 0; r < K; ++r) {
    ++v.checked;
    int known = 0;
    for (std::size_t w = 0; w < words; ++w) known += std::popcount(heard_by[r * words + w]);
    if (known == K) continue;
    ++v.wrong;
    if (v.first_problem.empty())
      v.first_problem = fmt::format(
          "rank {} may leave the barrier having heard from {} of {} ranks", r, known, K);
  }
  return v;
}

Verdict verify_exact(const Schedule& s, std::uint64_t seed, int orders) {
  if (s.shape.op == CollectiveOp::Barrier) return verify_barrier(s);
  Buffers<std::int64_t> inputs(s);
  std::mt19937_64 rng(seed);
  fill_inputs(s, inputs, [&](int, std::int64_t) { return static_cast<std::int64_t>(rng()); });
  Verdict v;
  Buffers<std::int64_t> by_step = inputs;
  replay_by_step(s, by_step);
  compare_outputs(s, inputs, by_step, v, "step order");
  for (int k = 0; k < orders && v.ok(); ++k) {
    Buffers<std::int64_t> shuffled = inputs;
    replay_in_order(s, shuffled, random_dependency_order(s, seed + 1 + k));
    compare_outputs(s, inputs, shuffled, v, "random dependency order");
  }
  return v;
}

FloatNumerics float_numerics(const Schedule& s, std::uint64_t seed) {
  Buffers<float> inputs(s);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  fill_inputs(s, inputs, [&](int, std::int64_t) { return dist(rng); });
  Buffers<float> result = inputs;
  replay_by_step(s, result);
  FloatNumerics n;
  bool first_output = true;
  const std::vector<float>* reference = nullptr;
  for (int r = 0; r < s.shape.ranks; ++r) {
    for (const Region& reg : output_regions(s.shape, r)) {
      const auto& out = result.at(r, reg.buffer);
      if (first_output) {
        for (std::int64_t i = 0; i < reg.count; ++i) {
          ++n.elements;
          const float want = expected_element(s.shape, inputs, r, reg, i);
          if (std::bit_cast<std::uint32_t>(out[reg.offset + i]) !=
              std::bit_cast<std::uint32_t>(want))
            ++n.differ_from_sequential;
        }
        first_output = false;
        reference = &out;
      } else if (replicated(s.shape.op)) {
        for (std::int64_t i = 0; i < reg.count; ++i)
          if (std::bit_cast<std::uint32_t>(out[reg.offset + i]) !=
              std::bit_cast<std::uint32_t>((*reference)[reg.offset + i]))
            n.replicas_identical = false;
      }
    }
  }
  return n;
}

}  // namespace collsim
