#include "network/cost_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "core/units.h"

namespace collsim {

SizeCurve::SizeCurve(std::vector<std::pair<std::int64_t, double>> points) {
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto [bytes, value] = points[i];
    if (bytes <= 0) throw std::invalid_argument("sizes must be at least 1 byte");
    if (i > 0 && bytes <= points[i - 1].first)
      throw std::invalid_argument("sizes must increase from one point to the next");
    if (!(value > 0) || !std::isfinite(value))
      throw std::invalid_argument("values must be finite and above 0");
    bytes_.push_back(bytes);
    log_bytes_.push_back(std::log(static_cast<double>(bytes)));
    values_.push_back(value);
  }
}

double SizeCurve::at(std::int64_t bytes) const {
  if (bytes <= bytes_.front()) return values_.front();
  if (bytes >= bytes_.back()) return values_.back();
  const std::size_t hi = static_cast<std::size_t>(
      std::upper_bound(bytes_.begin(), bytes_.end(), bytes) - bytes_.begin());
  const std::size_t lo = hi - 1;
  const double f =
      (std::log(static_cast<double>(bytes)) - log_bytes_[lo]) / (log_bytes_[hi] - log_bytes_[lo]);
  return values_[lo] + f * (values_[hi] - values_[lo]);
}

namespace {

const SizeCurve* find_rate(const std::vector<ReduceRate>& rates, std::string_view dtype,
                           std::string_view op) {
  const SizeCurve* any = nullptr;
  for (const ReduceRate& r : rates) {
    const std::string_view key = r.key;
    if (key == "any") any = &r.rate;
    const auto dot = key.find('.');
    if (dot != std::string_view::npos && key.substr(0, dot) == dtype && key.substr(dot + 1) == op)
      return &r.rate;
  }
  return any;
}

}  // namespace

const SizeCurve* CostModel::reduce_rate(std::string_view dtype, std::string_view op) const {
  return find_rate(reduce, dtype, op);
}

const SizeCurve* CostModel::memory_for_reduce(std::string_view dtype, std::string_view op) const {
  const SizeCurve* own = find_rate(reduce_memory, dtype, op);
  return own ? own : (host_memory.empty() ? nullptr : &host_memory);
}

std::string LaunchMode::describe() const {
  if (gpus_per_process <= 1) return "one process per GPU";
  if (issue_time() == 0)
    return "one process drives " + std::to_string(gpus_per_process) +
           " GPUs (nothing to issue per collective)";
  return "one process drives " + std::to_string(gpus_per_process) + " GPUs (" +
         format_significant(to_seconds(issue_time()) * 1e6, 3) + " us to issue a collective)";
}

bool StatedTerms::any() const {
  return any_latency() || std::any_of(efficiency.begin(), efficiency.end(), std::identity{});
}

bool StatedTerms::any_latency() const {
  return launch || std::any_of(latency.begin(), latency.end(), std::identity{});
}

bool ChannelStripe::empty() const {
  return std::none_of(channel_Bps.begin(), channel_Bps.end(), [](double r) { return r > 0; });
}

int ChannelStripe::channels(std::int64_t bytes) const {
  if (bytes <= 0) return 1;
  const auto parts = [](std::int64_t b, std::int64_t n) { return (b + n - 1) / n; };
  int n = static_cast<int>(std::min<std::int64_t>(min_channels, parts(bytes, min_part)));
  std::int64_t part = std::max(min_part, parts(bytes, n));
  while (part > max_part && n <= max_channels / 2) {
    n *= 2;
    part = parts(bytes, n);
  }
  return n;
}

Time ChannelStripe::fill(std::int64_t bytes, LinkKind slowest) const {
  const auto k = static_cast<std::size_t>(slowest);
  if (bytes <= 0 || chunk_bytes <= 0 || channel_Bps[k] <= 0) return 0;
  const int n = channels(bytes);
  const std::int64_t part = (bytes + n - 1) / n;
  std::int64_t chunk = chunk_bytes;
  if (smaller_chunks[k]) chunk /= part < chunk_bytes ? 4 : part < 8 * chunk_bytes ? 2 : 1;
  return transfer_time(std::min(chunk, part), channel_Bps[k]);
}

// Stated terms at their neutral values still change what NCCL's model charges.
bool CostModel::trivial() const {
  return !latency_replaces_alpha && !stated.any() && launch == 0 && host_issue == 0 &&
         nccl_floor == 0 && op_overhead == 0 && reduce.empty() && local_copy.empty() &&
         host_memory.empty() && reduce_memory.empty() && stripe.empty() &&
         std::all_of(links.begin(), links.end(), [](const LinkKindCost& k) { return k.trivial(); });
}

std::shared_ptr<const CostModel> CostModel::for_algorithm(
    const std::shared_ptr<const CostModel>& model, std::string_view algorithm) {
  const auto elsewhere = [algorithm](const LinkKindCost& k) {
    return k.bandwidth.size() > 1 && !k.curve_algorithms.empty() &&
           std::find(k.curve_algorithms.begin(), k.curve_algorithms.end(), algorithm) ==
               k.curve_algorithms.end();
  };
  if (!model || std::none_of(model->links.begin(), model->links.end(), elsewhere)) return model;
  auto out = std::make_shared<CostModel>(*model);
  for (LinkKindCost& k : out->links)
    if (elsewhere(k))
      k.bandwidth = SizeCurve({{k.bandwidth.sizes().back(), k.bandwidth.values().back()}});
  return out;
}

TransferCost transfer_cost(const CostModel& model, const Topology& topology,
                           std::span<const LinkId> route, std::int64_t bytes,
                           const SizeCurve* reduce, const SizeCurve* memory) {
  // Both bottlenecks over the same links: the model divides by the nominal one, so
  // stretching the bytes by nominal/effective makes it divide by the effective one.
  double nominal = INFINITY, effective = INFINITY, channel = INFINITY;
  LinkKind channel_kind = LinkKind::NvLink;  // the kind whose channel rate is the least
  TransferCost cost;
  cost.replaces_alpha = model.latency_replaces_alpha;
  for (LinkId id : route) {
    const Link& l = topology.link(id);
    const LinkKindCost& k = model.link(l.kind);
    const double rate = (k.bandwidth.empty() ? l.bandwidth : k.bandwidth.at(bytes)) * k.efficiency;
    nominal = std::min(nominal, l.bandwidth);
    effective = std::min(effective, rate);
    cost.latency = std::max(cost.latency, k.latency);
    if (const double c = model.stripe.channel_rate(l.kind); c > 0 && c < channel) {
      channel = c;
      channel_kind = l.kind;
    }
  }
  if (reduce) effective = std::min(effective, reduce->at(bytes));
  if (!memory && !model.host_memory.empty()) memory = &model.host_memory;
  if (memory) cost.memory_Bps = memory->at(bytes);
  if (std::isfinite(nominal) && effective > 0) cost.stretch = nominal / effective;
  if (std::isfinite(channel)) {
    cost.ceiling_Bps = model.stripe.channels(bytes) * channel;
    cost.latency = add_time(cost.latency, model.stripe.fill(bytes, channel_kind));
  }
  return cost;
}

Time local_op_time(const CostModel& model, std::int64_t bytes, const SizeCurve* reduce) {
  const SizeCurve* rate = reduce ? reduce : &model.local_copy;
  if (rate->empty() || bytes == 0) return 0;
  return transfer_time(bytes, rate->at(bytes));
}

}  // namespace collsim
