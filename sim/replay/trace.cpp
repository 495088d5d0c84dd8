#include "replay/trace.h"

#include <fmt/format.h>
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "replay/replayer.h"
#include "replay/verify.h"

namespace collsim {
namespace {

using Cells = std::vector<std::string>;  // one rank's printed elements

// `show` prints a value; `show_average(sum, K)` an average's result from its sum, exactly
// (the replayer's int64 division would truncate, and a symbol divides to itself).
template <class T, class Show, class ShowAverage>
std::string render(const Schedule& s, Buffers<T> bufs, Show&& show, ShowAverage&& show_average) {
  const int K = s.shape.ranks;
  const int data = data_buffer_count(s.shape.op);
  const bool average = s.shape.reduce_op == ReduceOp::Avg && is_reducing(s.shape.op);
  std::vector<std::vector<Cells>> snapshots;  // [step][rank]
  // Every element as `show` prints it; with `divided`, each of a rank's output regions as
  // the average of the sum it holds.
  auto snapshot = [&](bool divided) {
    std::vector<Cells> ranks(K);
    for (int r = 0; r < K; ++r) {
      std::vector<std::vector<bool>> output(data);
      for (int b = 0; b < data; ++b) output[b].assign(bufs.at(r, b).size(), false);
      if (divided)
        for (const Region& reg : output_regions(s.shape, r))
          for (std::int64_t i = 0; i < reg.count; ++i) output[reg.buffer][reg.offset + i] = true;
      for (int b = 0; b < data; ++b) {
        if (b) ranks[r].push_back("|");  // input | output, for all-to-all and send/recv
        const auto& values = bufs.at(r, b);
        for (std::size_t i = 0; i < values.size(); ++i)
          ranks[r].push_back(output[b][i] ? show_average(values[i], K) : show(values[i]));
      }
    }
    snapshots.push_back(std::move(ranks));
  };
  snapshot(false);
  replay_by_step(s, bufs, [&](int step) {
    snapshot(false);
    // An average's last step leaves sums: they are shown again, divided by K.
    if (average && step + 1 == s.num_steps) snapshot(true);
  });

  std::size_t width = 1;  // one width for the whole trace, so columns line up across steps
  for (const auto& ranks : snapshots)
    for (const auto& cells : ranks)
      for (const auto& c : cells) width = std::max(width, c.size());

  std::string out;
  for (std::size_t step = 0; step < snapshots.size(); ++step) {
    const bool divided = average && step + 1 == snapshots.size();
    out += step == 0 ? "inputs:\n"
           : divided ? fmt::format("after dividing the sums by {} (avg):\n", K)
                     : fmt::format("after step {}:\n", step);
    for (int r = 0; r < K; ++r) {
      out += fmt::format("rank {:>{}}:", r, fmt::formatted_size("{}", K - 1));
      const Cells& cells = snapshots[step][r];
      for (std::size_t i = 0; i < cells.size(); ++i)
        out += fmt::format("{}{:>{}}", i ? "  " : " ", cells[i], width);
      out += "\n";
    }
    if (step + 1 < snapshots.size()) out += "\n";
  }
  return out;
}

// `sum` / `k` in decimals, exactly where it ends within 6 digits ("277.75"), else cut with
// "...".
std::string exact_quotient(std::int64_t sum, int k) {
  std::string out = std::to_string(sum / k);
  std::int64_t rest = std::abs(sum % k);
  if (rest == 0) return out;
  if (sum < 0 && sum / k == 0) out = "-" + out;
  out += '.';
  for (int digit = 0; digit < 6 && rest != 0; ++digit) {
    rest *= 10;
    out += static_cast<char>('0' + rest / k);
    rest %= k;
  }
  return rest == 0 ? out : out + "...";
}

// A barrier moves no values: its trace is who signals whom, step by step.
std::string barrier_trace(const Schedule& s) {
  std::string out;
  int step = -1;
  for (const Op& op : s.ops) {
    if (op.step != step) {
      step = op.step;
      out += fmt::format("{}step {}:", step ? "\n" : "", step + 1);
    }
    out += fmt::format(" {}->{}", op.src_rank, op.dst_rank);
  }
  return out + (out.empty() ? "no messages (one rank)\n" : "\n");
}

}  // namespace

std::string format_trace(const Schedule& s, TraceValues values) {
  if (s.shape.op == CollectiveOp::Barrier) return barrier_trace(s);
  for (int r = 0; r < s.shape.ranks; ++r)
    for (auto n : data_buffer_sizes(s.shape, r))
      if (n > kMaxTracedElements)
        throw std::invalid_argument(
            fmt::format("a trace prints every element: use at most {} elements per buffer "
                        "(this collective has {})",
                        kMaxTracedElements, n));
  if (const std::int64_t printed = printed_values(s, values); printed > kMaxTracedValues)
    throw std::invalid_argument(fmt::format(
        "a trace prints every element of every rank after every step: {} values here (at "
        "most {}); use fewer ranks or elements, or --values auto for a line per step",
        printed, kMaxTracedValues));
  if (values == TraceValues::Powers) {
    if (!powers_fit(s.shape))
      throw std::invalid_argument(
          s.shape.ranks > 18 ? "10^rank inputs fit 18 ranks at most; use symbolic values"
                             : "a product of 10^rank inputs fits 6 ranks at most; use symbolic "
                               "values");
    Buffers<std::int64_t> bufs(s);
    fill_inputs(s, bufs, [](int rank, std::int64_t) {
      std::int64_t v = 1;
      for (int i = 0; i < rank; ++i) v *= 10;
      return v;
    });
    // An integer type's average is its sum divided as integers divide (toward zero).
    const bool integer = s.shape.dtype == DType::I32 || s.shape.dtype == DType::I64 ||
                         s.shape.dtype == DType::I8 || s.shape.dtype == DType::U8;
    return render(
        s, std::move(bufs), [](std::int64_t v) { return std::to_string(v); },
        [integer](std::int64_t sum, int k) {
          return integer ? std::to_string(sum / k) : exact_quotient(sum, k);
        });
  }
  Buffers<Symbol> bufs(s);
  fill_inputs(s, bufs, [](int rank, std::int64_t i) { return Symbol::of(rank, i); });
  const int K = s.shape.ranks;
  const ReduceOp op = s.shape.reduce_op;
  return render(
      s, std::move(bufs), [K, op](const Symbol& v) { return v.to_string(K, op); },
      [K, op](const Symbol& v, int k) { return fmt::format("({})/{}", v.to_string(K, op), k); });
}

bool powers_fit(const CollectiveShape& shape) {
  const bool product = shape.reduce_op == ReduceOp::Prod && is_reducing(shape.op);
  return shape.ranks <= (product ? 6 : 18);
}

std::string format_step_summary(const Schedule& s) {
  struct StepTotals {
    std::int64_t transfers = 0, bytes = 0, copies = 0, reductions = 0, largest = 0;
  };
  std::vector<StepTotals> steps(s.num_steps);
  for (const Op& op : s.ops) {
    StepTotals& t = steps[op.step];
    ++t.transfers;
    // A switch op moves its range once per leg (Schedule::switch_leg).
    t.bytes += s.bytes(op) * (op.is_switch() ? s.switch_legs(op) : 1);
    const bool copy = op.kind == OpKind::Copy || op.kind == OpKind::Multicast;
    ++(copy ? t.copies : t.reductions);
    t.largest = std::max(t.largest, s.bytes(op));
  }
  std::string out = "# per step: transfers, bytes moved, copies, reductions, largest transfer\n";
  for (std::size_t i = 0; i < steps.size(); ++i)
    out += fmt::format(
        "step {:>4}: {:>8} transfers {:>15} B {:>8} copies {:>8} reductions "
        "{:>13} B largest\n",
        i + 1, steps[i].transfers, steps[i].bytes, steps[i].copies, steps[i].reductions,
        steps[i].largest);
  return out;
}

std::int64_t printed_values(const Schedule& s, TraceValues values) {
  std::int64_t per_step = 0;
  for (int r = 0; r < s.shape.ranks; ++r)
    for (auto n : data_buffer_sizes(s.shape, r)) per_step += n;
  const std::int64_t terms =
      values == TraceValues::Symbolic && is_reducing(s.shape.op) ? s.shape.ranks : 1;
  // The inputs, each step, and an average's division.
  return per_step * (std::int64_t{s.num_steps} + 2) * terms;
}

std::int64_t symbolic_terms(const Schedule& s) {
  return replay_elements(s) * (is_reducing(s.shape.op) ? s.shape.ranks : 1);
}

std::int64_t replay_elements(const Schedule& s) {
  std::int64_t n = 0;
  for (std::int64_t c : s.buffer_counts) n += c;
  return n;
}

std::string format_verification(const Schedule& s) {
  std::string out;
  if (s.shape.op == CollectiveOp::Barrier) {
    const Verdict v = verify_barrier(s);
    return fmt::format("barrier (no rank leaves before it has heard from every rank): {}\n",
                       v.ok() ? fmt::format("OK, {} ranks", v.checked)
                              : fmt::format("{} wrong; {}", v.wrong, v.first_problem));
  }
  const Verdict exact = verify_exact(s, 2026, 3);
  out += fmt::format("exact (random int64 inputs, step order and 3 random dependency orders): {}\n",
                     exact.ok() ? fmt::format("OK, {} output elements", exact.checked)
                                : fmt::format("{} wrong; {}", exact.wrong, exact.first_problem));
  if (s.shape.count <= kMaxTracedElements * 4 && symbolic_terms(s) <= kMaxSymbolicTerms) {
    const Verdict sym = verify_symbolic(s);
    out += fmt::format("symbolic (each contribution exactly once): {}\n",
                       sym.ok() ? "OK" : fmt::format("{} wrong; {}", sym.wrong, sym.first_problem));
  } else {
    out += fmt::format(
        "symbolic: not run at this size ({} elements a rank and {} terms at most; here {} and "
        "{}); the exact check above proves the schedule\n",
        kMaxTracedElements * 4, kMaxSymbolicTerms, s.shape.count, symbolic_terms(s));
  }
  if (is_reducing(s.shape.op) && s.shape.reduce_op == ReduceOp::Sum) {
    const FloatNumerics n = float_numerics(s, 2026);
    out += fmt::format(
        "float32 (random inputs in [-1, 1)): {} of {} elements differ from the rank-order sum; "
        "ranks agree bitwise: {}\n",
        n.differ_from_sequential, n.elements, n.replicas_identical ? "yes" : "NO");
  }
  return out;
}

}  // namespace collsim
