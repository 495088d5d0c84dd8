#include "plan/plan_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "schedule/stream.h"

namespace collsim {
namespace {

nlohmann::json options_json(const AlgorithmOptions& o) {
  nlohmann::json j = {{"segments", o.segments}};
  if (!o.servers.empty()) j["servers"] = o.servers;
  if (!o.levels.empty()) {
    j["levels"] = nlohmann::json::array();
    for (const auto& l : o.levels)
      j["levels"].push_back(
          {{"size", l.size}, {"algorithm", l.algorithm}, {"options", options_json(l.options)}});
  }
  return j;
}

nlohmann::json candidate_json(const Candidate& c) {
  return {{"algorithm", c.algorithm}, {"plan", c.label}, {"time_s", c.time_s}};
}

// NCCL's model, candidate by candidate: time = latency + bytes / algbw, the least wins.
std::string nccl_terms_table(const PlannedCollective& c) {
  std::string out = fmt::format(
      "# {}: NCCL's model at {} bytes (time = latency + bytes / algbw; the least wins)\n",
      c.spec.name, c.spec.bytes);
  std::size_t width = 10;  // "algorithm", or the longest name weighed
  for (const NcclOption& o : c.nccl_options) width = std::max(width, name_of(o.algorithm).size());
  out += fmt::format("#   {:<{}} {:<7} {:>12} {:>13} {:>12}\n", "algorithm", width, "proto",
                     "latency us", "algbw GB/s", "time us");
  for (const NcclOption& o : c.nccl_options)
    out += fmt::format("#   {:<{}} {:<7} {:>12.2f} {:>13.2f} {:>12.2f}\n", name_of(o.algorithm),
                       width, name_of(o.protocol), o.latency_us, o.algbw_GBps, o.time_us);
  if (!c.cost || c.cost->nccl_floor <= 0) return out;
  const double floor_us = to_seconds(c.cost->nccl_floor) * 1e6;
  out += fmt::format("#   {} on the channels it launches at this size: {:.2f} us", c.nccl_pick,
                     c.nccl_least_at > 0 ? c.nccl_run_us : floor_us);
  if (c.nccl_least_at > 0)
    out += fmt::format("; NCCL's model gives {} bytes less, {:.2f} us", c.nccl_least_at, floor_us);
  out += ", the least the simulated time may be";
  out += c.nccl_least_at > 0 ? " (more bytes never take less time)\n" : "\n";
  return out;
}

// Whether the collective's GPUs sit on more than one host.
bool across_hosts(const Topology& t, const PlannedCollective& c) {
  return std::any_of(c.gpus.begin(), c.gpus.end(),
                     [&](NodeId g) { return t.node(g).host != t.node(c.gpus.front()).host; });
}

// NCCL's point-to-point sends: how one send is striped over its channels (docs/nccl.md §12).
std::string nccl_p2p_line(const Topology& t, const PlannedCollective& c) {
  const ChannelStripe& s = c.cost->stripe;
  const int channels = s.channels(c.nccl_peer_bytes);
  const bool network = across_hosts(t, c);
  const auto fill_us = [&](LinkKind k) { return to_seconds(s.fill(c.nccl_peer_bytes, k)) * 1e6; };
  return fmt::format(
      "# {}: NCCL's point-to-point sends: {} bytes to each peer on {} channel{} of {:.2f} "
      "GB/s{}, 1 to {} channels by size; each ends with its last chunk (at most {} KiB) "
      "copied out of the receiver's buffer: {:.2f} us{}\n",
      c.spec.name, c.nccl_peer_bytes, channels, channels == 1 ? "" : "s",
      s.channel_rate(LinkKind::NvLink) / 1e9,
      network ? fmt::format(" ({:.2f} over the network)", s.channel_rate(LinkKind::Ib) / 1e9) : "",
      s.max_channels, s.chunk_bytes >> 10, fill_us(LinkKind::NvLink),
      network ? fmt::format(" ({:.2f} over the network)", fill_us(LinkKind::Ib)) : "");
}

bool has_p2p_stripe(const PlannedCollective& c) {
  return c.nccl_peer_bytes > 0 && c.cost && !c.cost->stripe.empty();
}

nlohmann::json nccl_terms_json(const PlannedCollective& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const NcclOption& o : c.nccl_options)
    rows.push_back({{"algorithm", name_of(o.algorithm)},
                    {"protocol", name_of(o.protocol)},
                    {"latency_us", o.latency_us},
                    {"algbw_GBps", o.algbw_GBps},
                    {"time_us", o.time_us}});
  return rows;
}

// What a collective's schedule holds: its steps, ops and digest. Where it is generated while
// it is simulated (PlannedCollective::streamed): made here as a stream (one step held at a
// time) and counted, digest and all, where a stored plan could have held it (2^26 ops); past
// that counted from its generator's own fold by one rank (schedule/quotient.h), without a
// digest; nothing where it has no fold.
struct ScheduleFacts {
  std::optional<int> steps;
  std::optional<std::uint64_t> ops;
  std::optional<std::uint64_t> digest;
};

ScheduleFacts streamed_facts(const CollectiveSpec& spec) {
  StreamAudit audit;
  Schedule header;
  {
    StreamScope scope(audit);
    header = run_generator(spec);
  }
  audit.finish(header);
  return {header.num_steps, audit.ops(), audit.digest()};
}

ScheduleFacts schedule_facts(const PlannedCollective& c) {
  if (!c.streamed) return {c.schedule->num_steps, c.schedule->size(), c.digest};
  // What a stored plan would have held: made, counted and digested, one step at a time.
  if (schedule_ops_bound(c.spec) <= kMaxStoredOps) return streamed_facts(c.spec);
  std::string why;  // run's fold note says it; the table's "-" stands for it
  if (const std::optional<QuotientSchedule> fold = run_quotient(c.spec, why))
    return {fold->num_steps, fold->full_size(), std::nullopt};
  // A fold too large to store, counted without making it.
  const AlgorithmEntry* entry = find_algorithm(c.spec.shape.op, c.spec.algorithm);
  if (entry && entry->quotient_stream)
    if (const auto fold = entry->quotient_stream(c.spec.shape, c.spec.options, 0))
      return {fold->num_steps, fold->full_size(), std::nullopt};
  return {};
}

// Each collective's facts, made once for collectives that plan alike (a scenario of many
// identical streamed collectives made each again: 8 rings of 1,024 GPUs took 0.76 s, one
// 0.12 s).
std::vector<ScheduleFacts> facts_of(const Scenario& s, const Plan& plan) {
  std::vector<ScheduleFacts> out;
  out.reserve(plan.collectives.size());
  PlanMemo memo(s.topology, PlanMemo::Ranks::Same);
  for (const PlannedCollective& c : plan.collectives) {
    if (const auto same = memo.find(c.spec)) {
      out.push_back(out[*same]);
      continue;
    }
    out.push_back(schedule_facts(c));
    memo.add(c.spec, out.size() - 1);
  }
  return out;
}

// Which collectives are streamed, and where the figures of the large ones come from.
std::string streamed_lines(const Plan& plan) {
  std::vector<std::string> names;
  for (const auto& c : plan.collectives)
    if (c.streamed) names.push_back(c.spec.name);
  return fmt::format(
      "# streamed: {}: collsim run generates these while it simulates them (a schedule that "
      "could pass 2^20 ops is never held whole), and folds one whose ranks are alike when its "
      "run would be long (docs/scenarios.md); the steps and ops of one that could pass 2^26 "
      "ops are counted from its fold by a turn of its ranks, without a digest (run --stream gives "
      "it; "
      "\"-\": no fold)\n",
      fmt::join(names, ", "));
}

}  // namespace

std::string plan_table(const Scenario& s, const Plan& plan) {
  std::string out = fmt::format("# collsim plan {}: topology {} ({} GPUs)\n", s.name,
                                s.topology.name, s.topology.num_ranks());
  std::size_t wn = 4, wp = 4;
  for (const auto& c : plan.collectives) {
    wn = std::max(wn, c.spec.name.size());
    wp = std::max(wp, c.label().size());
  }
  out += fmt::format("# {:<{}} {:<14} {:>6} {:>13} {:<{}} {:>7} {:>10} {:>16}\n", "name", wn, "op",
                     "ranks", "size", "plan", wp, "steps", "transfers", "schedule");
  const std::vector<ScheduleFacts> all_facts = facts_of(s, plan);
  for (std::size_t i = 0; i < plan.collectives.size(); ++i) {
    const PlannedCollective& c = plan.collectives[i];
    const ScheduleFacts& facts = all_facts[i];
    const auto text = [](const auto& v) { return v ? fmt::format("{}", *v) : "-"; };
    out += fmt::format("  {:<{}} {:<14} {:>6} {:>13} {:<{}} {:>7} {:>10} {:>16}\n", c.spec.name, wn,
                       name_of(c.spec.shape.op), c.spec.shape.ranks, c.spec.bytes, c.label(), wp,
                       text(facts.steps), text(facts.ops),
                       facts.digest ? digest_text(*facts.digest) : "streamed");
  }
  if (std::any_of(plan.collectives.begin(), plan.collectives.end(),
                  [](const PlannedCollective& c) { return c.streamed; }))
    out += streamed_lines(plan);
  for (const auto& c : plan.collectives) {
    if (!c.choice) continue;
    out += fmt::format("# {}: chose {} ({:.2f} us simulated alone) of {} candidates", c.spec.name,
                       c.choice->chosen.label, c.choice->chosen.time_s * 1e6,
                       c.choice->candidates_tried);
    if (c.choice->runner_up)
      out += fmt::format("; runner-up {} ({:.2f} us)", c.choice->runner_up->label,
                         c.choice->runner_up->time_s * 1e6);
    out += "\n";
  }
  for (const auto& c : plan.collectives) {
    if (!c.nccl_options.empty()) out += nccl_terms_table(c);
    if (has_p2p_stripe(c)) out += nccl_p2p_line(s.topology, c);
  }
  return out;
}

nlohmann::json plan_json(const Scenario& s, const Plan& plan) {
  nlohmann::json cols = nlohmann::json::array();
  const std::vector<ScheduleFacts> all_facts = facts_of(s, plan);
  for (std::size_t i = 0; i < plan.collectives.size(); ++i) {
    const PlannedCollective& c = plan.collectives[i];
    nlohmann::json j = {{"name", c.spec.name},
                        {"op", name_of(c.spec.shape.op)},
                        {"ranks", c.spec.ranks},
                        {"bytes", c.spec.bytes},
                        {"dtype", name_of(c.spec.shape.dtype)},
                        {"algorithm", c.spec.algorithm},
                        {"plan", c.label()},
                        {"options", options_json(c.spec.options)},
                        {"steps", nullptr},
                        {"transfers", nullptr},
                        {"schedule_digest", nullptr}};
    const ScheduleFacts& facts = all_facts[i];
    if (facts.steps) j["steps"] = *facts.steps;
    if (facts.ops) j["transfers"] = *facts.ops;
    if (facts.digest) j["schedule_digest"] = digest_text(*facts.digest);
    if (c.streamed)
      j["streamed"] = {{"ops_bound", static_cast<std::int64_t>(schedule_ops_bound(c.spec))}};
    if (c.choice) {
      j["auto"] = {{"chosen", candidate_json(c.choice->chosen)},
                   {"candidates", c.choice->candidates_tried}};
      if (c.choice->runner_up) j["auto"]["runner_up"] = candidate_json(*c.choice->runner_up);
    }
    if (!c.nccl_options.empty()) j["nccl_model"] = nccl_terms_json(c);
    // NCCL's model of its pick on the channels it launches: the simulated time's floor, and
    // the larger size whose estimate it is, where a larger size's is less.
    if (c.cost && c.cost->nccl_floor > 0) j["nccl_floor_us"] = to_seconds(c.cost->nccl_floor) * 1e6;
    if (c.cost && c.cost->nccl_floor > 0 && c.nccl_least_at > 0)
      j["nccl_floor_from_bytes"] = c.nccl_least_at;
    if (has_p2p_stripe(c)) {
      const ChannelStripe& st = c.cost->stripe;
      j["nccl_p2p"] = {
          {"peer_bytes", c.nccl_peer_bytes},
          {"channels", st.channels(c.nccl_peer_bytes)},
          {"channel_GBps", st.channel_rate(LinkKind::NvLink) / 1e9},
          {"network_channel_GBps", st.channel_rate(LinkKind::Ib) / 1e9},
          {"fill_us", to_seconds(st.fill(c.nccl_peer_bytes, LinkKind::NvLink)) * 1e6},
          {"network_fill_us", to_seconds(st.fill(c.nccl_peer_bytes, LinkKind::Ib)) * 1e6},
          {"max_channels", st.max_channels}};
    }
    cols.push_back(std::move(j));
  }
  return {{"scenario", s.name}, {"collectives", std::move(cols)}};
}

}  // namespace collsim
