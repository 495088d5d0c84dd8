#include "scenario/cost_json.h"

#include <fmt/format.h>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/json_view.h"
#include "schedule/algorithms.h"
#include "schedule/collective.h"

namespace collsim {
namespace {

Time read_duration(const JsonView& v) {
  const double s = v.as_duration();
  v.check_duration(s);
  return from_seconds(s);
}

// [[bytes, bytes/s], ...]: sizes as numbers or "64KiB", rates as numbers or "20GB/s".
SizeCurve read_curve(const JsonView& v) {
  if (!v.is_array() || v.size() == 0)
    v.fail("a list of [bytes, bytes per second] points, sizes increasing");
  std::vector<std::pair<std::int64_t, double>> points;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const JsonView p = v[i];
    if (!p.is_array() || p.size() != 2) p.fail("a [bytes, bytes per second] pair");
    const std::int64_t bytes = p[0].as_size();
    const double rate = p[1].raw().is_number() ? p[1].as_number() : p[1].as_bandwidth();
    p[1].check_bandwidth(rate);
    if (bytes < 1) p[0].fail("a size of at least 1 byte");
    if (i > 0 && bytes <= points.back().first)
      p[0].fail_message(
          fmt::format("sizes must increase: {} follows {}", bytes, points.back().first));
    points.emplace_back(bytes, rate);
  }
  return SizeCurve(std::move(points));
}

// `word` is one of `names`; else an error at `at` that suggests the nearest.
void check_name(const JsonView& at, std::string_view word, const std::vector<std::string>& names,
                std::string_view what) {
  if (std::find(names.begin(), names.end(), word) != names.end()) return;
  const auto near = nearest_word(word, names);
  at.fail_message(fmt::format("\"{}\" is not {}{}", word, what,
                              near ? fmt::format("; did you mean \"{}\"?", *near)
                                   : fmt::format(" (one of {})", fmt::join(names, ", "))));
}

void read_link_kind(const JsonView& v, LinkKindCost& k, bool& stated_latency,
                    bool& stated_efficiency) {
  if (!v.is_object())
    v.fail(
        "an object with \"bandwidth_Bps\", \"efficiency\", \"latency_s\" or \"bandwidth_curve\"");
  v.allow_only(kLinkCostKeys);
  if (auto e = v.find("efficiency")) {
    k.efficiency = e->as_number();
    // Below a millionth a link is broken, not slow: a time would pass the clock's end and
    // fail far from the field that caused it.
    constexpr double kLeastEfficiency = 1e-6;
    if (!(k.efficiency >= kLeastEfficiency && k.efficiency <= 1))
      e->fail("a share of the bandwidth from 1e-6 to 1");
    stated_efficiency = true;
  }
  if (auto l = v.find("latency_s")) {
    k.latency = read_duration(*l);
    stated_latency = true;
  }
  if (auto c = v.find("bandwidth_curve")) {
    k.bandwidth = read_curve(*c);
    stated_efficiency = true;  // a measured rate: what this link kind really carries
  }
  if (auto a = v.find("bandwidth_curve_algorithms")) {
    if (k.bandwidth.empty())
      a->fail_message("names the algorithms of a \"bandwidth_curve\", and there is none");
    std::vector<std::string> names;
    for (const auto& entry : algorithm_catalogue())
      if (std::find(names.begin(), names.end(), entry.algorithm) == names.end())
        names.emplace_back(entry.algorithm);
    k.curve_algorithms = a->as_string_list();
    if (k.curve_algorithms.empty()) a->fail("a non-empty list of algorithm names");
    for (std::size_t i = 0; i < k.curve_algorithms.size(); ++i) {
      // What compare and plan print of NCCL's sends ("nccl: p2p/Simple/4ch") is not an algorithm.
      if (k.curve_algorithms[i] == "p2p")
        (*a)[i].fail_message(
            "\"p2p\" is how NCCL's point-to-point sends are labelled; collsim runs them as "
            "\"direct\"");
      check_name((*a)[i], k.curve_algorithms[i], names, "an algorithm");
    }
  }
}

// "float32.sum": an element type and a reduction collsim knows, so that a misspelled
// key is refused rather than a rate that never applies.
void check_rate_key(const JsonView& at, std::string_view key) {
  if (key == "any") return;
  const auto dot = key.find('.');
  if (dot == std::string_view::npos)
    at.fail_message("keys are \"dtype.op\" (\"float32.sum\") or \"any\"");
  check_name(at, key.substr(0, dot), all_dtype_names(), "an element type");
  check_name(at, key.substr(dot + 1), all_reduce_op_names(), "a reduction");
}

// {"dtype.op" or "any": curve} under `key`.
void read_rates(const JsonView& v, const char* key, std::vector<ReduceRate>& out) {
  auto r = v.find(key);
  if (!r) return;
  if (!r->is_object()) r->fail("an object of rates keyed \"dtype.op\" or \"any\"");
  for (const auto& [name, entry] : r->raw().items()) {
    check_rate_key((*r)[name], name);
    out.push_back({name, read_curve((*r)[name])});
  }
}

}  // namespace

void read_cost_model(const JsonView& v, CostModel& model) {
  v.allow_only(kCalibrationKeys);
  if (auto l = v.find("launch_s")) {
    model.launch = read_duration(*l);
    model.stated.launch = true;
  }
  if (auto o = v.find("op_overhead_s")) model.op_overhead = read_duration(*o);
  if (auto c = v.find("bandwidth_curve")) {
    const SizeCurve curve = read_curve(*c);
    for (auto& k : model.links) k.bandwidth = curve;  // "links" below may override a kind
    model.stated.efficiency.fill(true);
  }
  if (auto kinds = v.find("links")) {
    if (!kinds->is_object()) kinds->fail("an object keyed by link kind");
    for (const auto& [name, entry] : kinds->raw().items()) {
      const JsonView e = (*kinds)[name];
      const auto kind = link_kind_from_name(name);
      if (!kind)
        e.fail_message(
            fmt::format("not a link kind (one of {})", fmt::join(all_link_kind_names(), ", ")));
      const auto i = static_cast<std::size_t>(*kind);
      read_link_kind(e, model.link(*kind), model.stated.latency[i], model.stated.efficiency[i]);
    }
  }
  read_rates(v, "reduce", model.reduce);
  read_rates(v, "reduce_memory", model.reduce_memory);
  if (auto c = v.find("local_copy")) model.local_copy = read_curve(*c);
  if (auto c = v.find("host_memory")) model.host_memory = read_curve(*c);
}

nlohmann::json size_curve_json(const SizeCurve& curve) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < curve.sizes().size(); ++i)
    out.push_back({curve.sizes()[i], curve.values()[i]});
  return out;
}

nlohmann::json cost_model_json(const CostModel& model) {
  nlohmann::json out = nlohmann::json::object();
  // A stated term is written even at its neutral value: it still replaces NCCL's default.
  const StatedTerms& stated = model.stated;
  if (model.launch || stated.launch) out["launch_s"] = to_seconds(model.launch);
  if (model.op_overhead) out["op_overhead_s"] = to_seconds(model.op_overhead);
  for (std::size_t i = 0; i < model.links.size(); ++i) {
    const LinkKindCost& k = model.links[i];
    const bool efficiency = k.efficiency != 1.0 || (stated.efficiency[i] && k.bandwidth.empty());
    const bool latency = k.latency || stated.latency[i];
    if (!efficiency && !latency && k.bandwidth.empty()) continue;
    nlohmann::json e = nlohmann::json::object();
    if (efficiency) e["efficiency"] = k.efficiency;
    if (latency) e["latency_s"] = to_seconds(k.latency);
    if (!k.bandwidth.empty()) e["bandwidth_curve"] = size_curve_json(k.bandwidth);
    if (!k.curve_algorithms.empty()) e["bandwidth_curve_algorithms"] = k.curve_algorithms;
    out["links"][std::string(name_of(static_cast<LinkKind>(i)))] = e;
  }
  for (const ReduceRate& r : model.reduce) out["reduce"][r.key] = size_curve_json(r.rate);
  for (const ReduceRate& r : model.reduce_memory)
    out["reduce_memory"][r.key] = size_curve_json(r.rate);
  if (!model.local_copy.empty()) out["local_copy"] = size_curve_json(model.local_copy);
  if (!model.host_memory.empty()) out["host_memory"] = size_curve_json(model.host_memory);
  return out;
}

}  // namespace collsim
