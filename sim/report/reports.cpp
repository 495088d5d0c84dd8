#include "report/reports.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <algorithm>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "core/csv.h"
#include "core/units.h"
#include "report/chrome_trace.h"
#include "report/trace_lanes.h"
#include "schedule/algorithms.h"

namespace collsim {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  // Contiguous 0..K-1 is the common case; say it briefly.
  bool contiguous = true;
  for (std::size_t i = 0; i < ranks.size(); ++i) contiguous &= ranks[i] == static_cast<int>(i);
  if (contiguous) return std::to_string(ranks.size());
  return fmt::format("{} (subset)", ranks.size());
}

nlohmann::json bandwidth_or_null(double bytes_per_second, double time_s) {
  if (time_s <= 0) return nullptr;
  return bytes_per_second / 1e9;
}

std::string network_line(const Scenario& s) {
  return fmt::format("network {} (alpha {})", name_of(s.network.model),
                     format_duration(to_seconds(s.network.alpha)));
}

// Each collective judged over its own window: its busiest links and how evenly its
// ranks sent (a skewed all-to-all shows as max far above mean).
// The text names each collective's bottleneck and links up to this many collectives; the
// rest are in --format json and --out (100,000 collectives made 500,000 lines of it).
constexpr std::size_t kCollectivesDetailed = 16;

std::string more_collectives_line(std::size_t total) {
  return total > kCollectivesDetailed
             ? fmt::format("#   ... and {} more collectives (all of them: --format json, --out)\n",
                           total - kCollectivesDetailed)
             : std::string{};
}

std::string per_collective_lines(const Scenario& s, const ScenarioResult& r,
                                 const TrafficReport& traffic) {
  std::string out = "# per collective, over its own duration:\n";
  const std::size_t shown = std::min(traffic.collectives.size(), kCollectivesDetailed);
  for (std::size_t c = 0; c < shown; ++c) {
    const CollectiveTraffic& ct = traffic.collectives[c];
    const RankSpread sent = spread(ct.ranks, &RankTraffic::sent),
                     received = spread(ct.ranks, &RankTraffic::received);
    out += fmt::format(
        "#   {} ({} from {}): per rank sent {} mean, {} max ({:.2f}x); received {} mean, {} max "
        "({:.2f}x)\n",
        r.resolved[c].name, format_duration(ct.duration_s()), format_duration(ct.start_s),
        format_bytes(sent.mean), format_bytes(sent.max), sent.imbalance(),
        format_bytes(received.mean), format_bytes(received.max), received.imbalance());
    for (const auto& lb : ct.hottest(3))
      out +=
          fmt::format("#     {:<28} {:5.1f}% utilised  {:>10} carried\n",
                      s.topology.link_label(lb.link), lb.utilisation * 100, format_bytes(lb.bytes));
  }
  return out + more_collectives_line(traffic.collectives.size());
}

}  // namespace

RankSpread spread(std::span<const RankTraffic> ranks, std::int64_t RankTraffic::*field) {
  RankSpread out;
  if (ranks.empty()) return out;
  out.min = out.max = ranks.front().*field;
  std::int64_t sum = 0;
  for (const RankTraffic& rt : ranks) {
    out.min = std::min(out.min, rt.*field);
    out.max = std::max(out.max, rt.*field);
    sum += rt.*field;
  }
  out.mean = sum / static_cast<std::int64_t>(ranks.size());
  return out;
}

namespace {

// "NAME: one channel across N hosts: each host's traffic crosses the network through one
// of its K NICs" for a collective that could take channels (one per rail) but runs one,
// so that a comparison against it is not read as one against what NCCL would run.
std::string one_nic_notes(const Scenario& s, const ScenarioResult& r) {
  std::string out;
  for (std::size_t i = 0; i < r.resolved.size(); ++i) {
    const CollectiveSpec& c = r.resolved[i];
    // Channels that compose the algorithm per rail (channels_option, on_groups); NCCL's
    // own picks run the channels NCCL would.
    const AlgorithmEntry* entry = find_algorithm(c.shape.op, c.algorithm);
    if (!entry || !entry->on_groups || !entry->takes("channels") || c.options.channels > 1 ||
        r.labels[i].starts_with("nccl: "))
      continue;
    std::set<int> hosts;
    for (int rank : c.ranks) hosts.insert(s.topology.node(s.topology.gpu_of_rank(rank)).host);
    if (hosts.size() < 2) continue;
    int nics = 0;
    for (const Node& n : s.topology.nodes())
      if (n.kind == NodeKind::Nic && n.host == *hosts.begin()) ++nics;
    if (nics < 2) continue;
    out += fmt::format(
        "# {}: one channel across {} hosts: each host's traffic crosses the network through one "
        "of its {} NICs (\"channels\": \"auto\" runs one per rail, as NCCL does)\n",
        c.name, hosts.size(), nics);
  }
  return out;
}

// "NAME: NCCL's own estimate for its pick, X us, outlasts its ops' Y us ..." for the
// collectives a least duration held (CollectiveOutcome::held_by), the first few of them.
std::string held_notes(const ScenarioResult& r) {
  constexpr int kShown = 4;
  std::string out;
  int held = 0;
  for (std::size_t i = 0; i < r.resolved.size(); ++i) {
    const CollectiveOutcome& o = r.outcomes[i];
    if (o.held_by == HeldBy::Nothing || ++held > kShown) continue;
    const bool nccl = o.held_by == HeldBy::NcclModel;
    out += fmt::format(
        "# {}: {} ({:.2f} us) outlasts its ops on the links ({:.2f} us) and stands{}\n",
        r.resolved[i].name,
        nccl ? "NCCL's own estimate for its pick" : "the host's time to issue it", o.time_s * 1e6,
        o.ops_time_s * 1e6,
        nccl ? ": its table holds kernel limits the links do not (a calibration replaces it)"
             : "");
  }
  if (held > kShown) out += fmt::format("# ... and {} more held so\n", held - kShown);
  return out;
}

}  // namespace

nlohmann::json held_json(HeldBy held) {
  return held == HeldBy::Nothing ? nlohmann::json() : nlohmann::json(name_of(held));
}

namespace {

// The header and one row per collective, columns as wide as their widest entry so long
// names do not push rows out of line.
void append_rows(std::string& out, const ScenarioResult& r) {
  std::size_t wn = 4, wa = 9;
  const std::vector<std::string>& plans = r.labels;  // as planned, with options and protocol
  for (std::size_t i = 0; i < r.resolved.size(); ++i) {
    wn = std::max(wn, r.resolved[i].name.size());
    wa = std::max(wa, plans[i].size());
  }
  out += fmt::format("# {:<{}} {:<14} {:<{}} {:>6} {:>13} {:>12} {:<9} {:>12} {:>10} {:>10}\n",
                     "name", wn, "op", "algorithm", wa, "ranks", "size", "count", "type", "time",
                     "algbw", "busbw");
  // One row per collective, formatted in place: 100,000 collectives make a 12 MB table.
  out.reserve(out.size() + r.resolved.size() * (wn + wa + 96));
  auto to_out = std::back_inserter(out);
  for (std::size_t i = 0; i < r.resolved.size(); ++i) {
    const auto& c = r.resolved[i];
    const auto& o = r.outcomes[i];
    fmt::format_to(to_out, "  {:<{}} {:<14} {:<{}} {:>6} {:>13} {:>12} {:<9} {:>12.2f}", c.name, wn,
                   name_of(c.shape.op), plans[i], wa, rank_list(c.ranks), c.bytes, c.shape.count,
                   name_of(c.shape.dtype), o.time_s * 1e6);
    if (o.time_s > 0)
      fmt::format_to(to_out, " {:>10.2f} {:>10.2f}\n", o.algbw_Bps / 1e9, o.busbw_Bps / 1e9);
    else
      fmt::format_to(to_out, " {:>10} {:>10}\n", "-", "-");
  }
}

// What "auto" chose for each collective that asked it, and the runner-up.
std::string auto_choice_lines(const ScenarioResult& r) {
  std::string out;
  for (std::size_t i = 0; i < r.resolved.size(); ++i) {
    if (!r.choices[i]) continue;
    const AutoChoice& a = *r.choices[i];
    out += fmt::format("# {}: auto chose {} ({:.2f} us) of {} candidates", r.resolved[i].name,
                       a.chosen.label, a.chosen.time_s * 1e6, a.candidates_tried);
    if (a.runner_up)
      out +=
          fmt::format("; runner-up {} ({:.2f} us)", a.runner_up->label, a.runner_up->time_s * 1e6);
    out += "\n";
  }
  return out;
}

// The links that worked hardest, by bytes over capacity x makespan.
std::string hottest_link_lines(const Topology& topology, const TrafficReport& traffic,
                               int hottest) {
  std::string out;
  std::vector<LinkId> order(topology.links().size());
  for (LinkId l = 0; l < static_cast<LinkId>(order.size()); ++l) order[l] = l;
  std::stable_sort(order.begin(), order.end(), [&](LinkId a, LinkId b) {
    return traffic.links[a].utilisation > traffic.links[b].utilisation;
  });
  if (!order.empty() && traffic.links[order[0]].bytes > 0)
    out += "# hottest links (bytes / (capacity x makespan)):\n";
  for (int i = 0; i < hottest && i < static_cast<int>(order.size()); ++i) {
    const LinkId l = order[i];
    const LinkTraffic& lt = traffic.links[l];
    if (lt.bytes == 0) break;
    const Link& link = topology.link(l);
    out += fmt::format("#   {:<28} {:<8} {:>9}  {:5.1f}% utilised  {:>10} carried",
                       topology.link_label(l), name_of(link.kind), format_bandwidth(link.bandwidth),
                       lt.utilisation * 100, format_bytes(lt.bytes));
    if (traffic.timed) out += fmt::format("  up to {} at once", lt.peak_transfers);
    out += "\n";
  }
  return out;
}

}  // namespace

std::string summary_table(const Scenario& s, const ScenarioResult& r, const TrafficReport& traffic,
                          int hottest) {
  std::string out =
      fmt::format("# collsim {}: topology {} ({} GPUs, {} links), {}\n", s.name, s.topology.name,
                  s.topology.num_ranks(), s.topology.links().size(), network_line(s));
  out +=
      "# size in bytes; time in microseconds; algbw = size/time and busbw in GB/s (1 GB = 1e9 "
      "bytes)\n";
  append_rows(out, r);
  if (r.resolved.size() > 1) {
    double end = 0;
    for (const auto& o : r.outcomes) end = std::max(end, o.end_s);
    out += fmt::format("# all collectives done at {}\n", format_duration(end));
  }
  out += one_nic_notes(s, r);
  out += held_notes(r);
  for (std::size_t i = 0; i < r.folding.size(); ++i)
    if (!r.folding[i].note.empty())
      out += fmt::format("# {}: {}\n", r.resolved[i].name, r.folding[i].note);
  out += auto_choice_lines(r);
  out += hottest_link_lines(s.topology, traffic, hottest);
  for (const auto& b : traffic.per_collective) {
    if (b.link < 0 || r.resolved.size() < 2 || b.collective >= kCollectivesDetailed) continue;
    out += fmt::format("# {}: bottleneck {} ({} in {} at full rate)\n",
                       r.resolved[b.collective].name, s.topology.link_label(b.link),
                       format_bytes(b.bytes), format_duration(b.seconds));
  }
  if (r.resolved.size() > 1) out += per_collective_lines(s, r, traffic);
  return out;
}

namespace {

// collectives[i]: its busiest links and its ranks' bytes, over its own window.
void add_own_traffic(nlohmann::json& c, const Topology& t, const CollectiveTraffic& ct,
                     bool timed) {
  nlohmann::json hottest = nlohmann::json::array();
  for (const auto& lb : ct.hottest(5))
    hottest.push_back({{"link", t.link_label(lb.link)},
                       {"kind", name_of(t.link(lb.link).kind)},
                       {"bandwidth_Bps", t.link(lb.link).bandwidth},
                       {"bytes", lb.bytes},
                       {"utilisation", lb.utilisation}});
  c["hottest_links"] = std::move(hottest);
  c["links_used"] = ct.links.size();
  nlohmann::json sent = nlohmann::json::array(), received = nlohmann::json::array(),
                 busy = nlohmann::json::array();
  for (const RankTraffic& rt : ct.ranks) {
    sent.push_back(rt.sent);
    received.push_back(rt.received);
    if (timed) busy.push_back(rt.busy_s);
  }
  const RankSpread s = spread(ct.ranks, &RankTraffic::sent),
                   r = spread(ct.ranks, &RankTraffic::received);
  c["per_rank"] = {{"sent_bytes", std::move(sent)}, {"received_bytes", std::move(received)}};
  if (timed) c["per_rank"]["busy_s"] = std::move(busy);
  c["sent_bytes_per_rank"] = {{"min", s.min}, {"mean", s.mean}, {"max", s.max}};
  c["received_bytes_per_rank"] = {{"min", r.min}, {"mean", r.mean}, {"max", r.max}};
}

// Timed by its representatives: no full schedule, so no digest of one.
bool folded(const ScenarioResult& r, std::size_t i) {
  return i < r.folding.size() && r.folding[i].folded;
}

}  // namespace

namespace {

// collectives[i] of result.json: its figures, its plan's choice, its bottleneck and traffic.
nlohmann::json collective_json(const Scenario& s, const ScenarioResult& r,
                               const TrafficReport& traffic, std::size_t i,
                               const Bottleneck* bottleneck) {
  const auto& c = r.resolved[i];
  const auto& o = r.outcomes[i];
  nlohmann::json out = {
      {"name", c.name},
      {"op", name_of(c.shape.op)},
      {"algorithm", c.algorithm},
      {"plan", r.labels[i]},
      {"protocol", c.protocol},
      {"schedule_digest",
       folded(r, i) ? nlohmann::json(nullptr) : nlohmann::json(digest_text(r.digests[i]))},
      {"ranks", c.ranks},
      {"bytes", c.bytes},
      {"count", c.shape.count},
      {"dtype", name_of(c.shape.dtype)},
      {"start_s", o.start_s},
      {"end_s", o.end_s},
      {"time_s", o.time_s},
      {"algbw_GBps", bandwidth_or_null(o.algbw_Bps, o.time_s)},
      {"busbw_GBps", bandwidth_or_null(o.busbw_Bps, o.time_s)},
      {"ops_time_s", o.ops_time_s},
      {"held_by", held_json(o.held_by)},
      {"segments", c.options.segments},
      {"transfers", r.op_count(i)},
      {"steps", r.schedules[i]->num_steps}};
  if (i < r.folding.size() && !r.folding[i].note.empty()) out["symmetry"] = r.folding[i].note;
  if (r.choices[i]) {
    auto candidate = [](const Candidate& x) {
      return nlohmann::json{{"algorithm", x.algorithm},
                            {"plan", x.label},
                            {"segments", x.options.segments},
                            {"time_s", x.time_s}};
    };
    out["auto"] = {{"chosen", candidate(r.choices[i]->chosen)},
                   {"runner_up", r.choices[i]->runner_up ? candidate(*r.choices[i]->runner_up)
                                                         : nlohmann::json(nullptr)},
                   {"candidates", r.choices[i]->candidates_tried}};
  }
  const Topology& t = s.topology;
  if (bottleneck)
    out["bottleneck"] = {{"link", t.link_label(bottleneck->link)},
                         {"bytes", bottleneck->bytes},
                         {"seconds_at_full_rate", bottleneck->seconds}};
  if (i < traffic.collectives.size())
    add_own_traffic(out, t, traffic.collectives[i], traffic.timed);
  return out;
}

// Each collective's bottleneck (the last one listed for it), or null.
std::vector<const Bottleneck*> bottlenecks_of(const ScenarioResult& r,
                                              const TrafficReport& traffic) {
  std::vector<const Bottleneck*> out(r.resolved.size(), nullptr);
  for (const auto& b : traffic.per_collective)
    if (b.link >= 0) out[b.collective] = &b;
  return out;
}

// result.json without its collectives (an empty array in their place).
nlohmann::json result_json_frame(const Scenario& s, const TrafficReport& traffic) {
  nlohmann::json links = nlohmann::json::array();
  const auto& t = s.topology;
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const LinkTraffic& lt = traffic.links[l];
    links.push_back({{"src", t.node(t.link(l).src).name},
                     {"dst", t.node(t.link(l).dst).name},
                     {"kind", name_of(t.link(l).kind)},
                     {"bandwidth_GBps", t.link(l).bandwidth / 1e9},
                     {"bytes", lt.bytes},
                     {"busy_s", lt.busy_s},
                     {"utilisation", lt.utilisation}});
    if (traffic.timed) links.back()["peak_transfers"] = lt.peak_transfers;
  }
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t rank = 0; rank < traffic.ranks.size(); ++rank) {
    const RankTraffic& rt = traffic.ranks[rank];
    ranks.push_back({{"rank", rank},
                     {"gpu", t.node(t.gpu_of_rank(static_cast<int>(rank))).name},
                     {"sent_bytes", rt.sent},
                     {"received_bytes", rt.received}});
    if (traffic.timed) {
      ranks.back()["busy_s"] = rt.busy_s;
      ranks.back()["idle_s"] = rt.idle_s;
    }
  }
  return {{"scenario", s.name},
          {"topology", {{"name", t.name}, {"gpus", t.num_ranks()}, {"links", t.links().size()}}},
          {"network",
           {{"model", std::string(name_of(s.network.model))},
            {"alpha_s", to_seconds(s.network.alpha)}}},
          {"makespan_s", traffic.makespan_s},
          {"collectives", nlohmann::json::array()},
          {"links", std::move(links)},
          {"ranks", std::move(ranks)}};
}

}  // namespace

nlohmann::json result_json(const Scenario& s, const ScenarioResult& r,
                           const TrafficReport& traffic) {
  nlohmann::json doc = result_json_frame(s, traffic);
  nlohmann::json& collectives = doc["collectives"];
  const auto bottlenecks = bottlenecks_of(r, traffic);
  for (std::size_t i = 0; i < r.resolved.size(); ++i)
    collectives.push_back(collective_json(s, r, traffic, i, bottlenecks[i]));
  return doc;
}

void write_result_json(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                       const TrafficReport& traffic) {
  // The frame as dump(2) prints it, the collectives written one at a time where its empty
  // array stands: 100,000 collectives never sit in memory as one document.
  const std::string frame = result_json_frame(s, traffic).dump(2);
  const std::string_view hole = "\"collectives\": []";
  const std::size_t at = frame.find(hole);
  out << std::string_view(frame).substr(0, at + hole.size() - 2);
  if (r.resolved.empty()) {
    out << "[]";
  } else {
    std::string chunk = "[";  // written a megabyte at a time
    const auto bottlenecks = bottlenecks_of(r, traffic);
    for (std::size_t i = 0; i < r.resolved.size(); ++i) {
      const std::string text = collective_json(s, r, traffic, i, bottlenecks[i]).dump(2);
      chunk += i ? ",\n    " : "\n    ";
      std::size_t from = 0;  // each line indented by the array's depth (a string holds no \n)
      for (std::size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1)
        chunk.append(text, from, nl + 1 - from).append("    ");
      chunk.append(text, from);
      if (chunk.size() >= (1 << 20)) out << chunk, chunk.clear();
    }
    out << chunk << "\n  ]";
  }
  out << std::string_view(frame).substr(at + hole.size()) << "\n";
}

void write_links_csv(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                     const TrafficReport& traffic) {
  const auto& t = s.topology;
  out << "scope,collective,src,dst,kind,bandwidth_Bps,bytes,window_s,utilisation,busy_s,"
         "peak_transfers\n";
  auto ends = [&](LinkId l) {
    const Link& link = t.link(l);
    return fmt::format("{},{},{},{}", csv_field(t.node(link.src).name),
                       csv_field(t.node(link.dst).name), name_of(link.kind), link.bandwidth);
  };
  // The whole run: every link, with the network model's busy time and peak concurrency.
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const LinkTraffic& lt = traffic.links[l];
    fmt::print(out, "run,,{},{},{:.12g},{:.6g},{:.12g},{}\n", ends(l), lt.bytes, traffic.makespan_s,
               lt.utilisation, lt.busy_s, lt.peak_transfers);
  }
  // Each collective: the links it used, over its own window (busy and peak are the run's).
  for (std::size_t c = 0; c < traffic.collectives.size(); ++c) {
    const CollectiveTraffic& ct = traffic.collectives[c];
    const std::string name = csv_field(r.resolved[c].name);
    for (const auto& lb : ct.links)
      fmt::print(out, "collective,{},{},{},{:.12g},{:.6g},,\n", name, ends(lb.link), lb.bytes,
                 ct.duration_s(), lb.utilisation);
  }
}

void write_ranks_csv(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                     const TrafficReport& traffic) {
  const auto& t = s.topology;
  out << "scope,collective,rank,gpu,sent_bytes,received_bytes,window_s,busy_s,idle_s\n";
  auto row = [&](std::string_view scope, std::string_view name, int rank, const RankTraffic& rt,
                 double window) {
    const std::string gpu = csv_field(t.node(t.gpu_of_rank(rank)).name);
    if (traffic.timed)
      fmt::print(out, "{},{},{},{},{},{},{:.12g},{:.12g},{:.12g}\n", scope, name, rank, gpu,
                 rt.sent, rt.received, window, rt.busy_s, rt.idle_s);
    else
      fmt::print(out, "{},{},{},{},{},{},{:.12g},,\n", scope, name, rank, gpu, rt.sent, rt.received,
                 window);
  };
  for (std::size_t rank = 0; rank < traffic.ranks.size(); ++rank)
    row("run", "", static_cast<int>(rank), traffic.ranks[rank], traffic.makespan_s);
  for (std::size_t c = 0; c < traffic.collectives.size(); ++c) {
    const CollectiveTraffic& ct = traffic.collectives[c];
    const std::string name = csv_field(r.resolved[c].name);
    for (std::size_t i = 0; i < ct.ranks.size(); ++i)
      row("collective", name, r.resolved[c].ranks[i], ct.ranks[i], ct.duration_s());
  }
}

void write_steps_csv(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                     const TrafficReport& traffic) {
  out << "collective,step,bottleneck_link,kind,bytes,seconds_at_full_rate\n";
  for (const auto& b : traffic.per_step)
    fmt::print(out, "{},{},{},{},{},{:.12g}\n", csv_field(r.resolved[b.collective].name), b.step,
               csv_field(s.topology.link_label(b.link)), name_of(s.topology.link(b.link).kind),
               b.bytes, b.seconds);
}

void write_utilisation_csv(std::ostream& out, const Scenario& s, const TrafficReport& traffic) {
  out << "link";
  // Each column is named by its bin's start time, in seconds.
  for (int k = 0; k < traffic.bins; ++k) fmt::print(out, ",{:.9g}s", k * traffic.bin_s);
  out << "\n";
  for (LinkId l = 0; l < static_cast<LinkId>(traffic.links.size()); ++l) {
    out << csv_field(s.topology.link_label(l));
    for (float u : traffic.links[l].bins) fmt::print(out, ",{:.4g}", u);
    out << "\n";
  }
}

namespace {

// One transfer, or (binned) a rank's sends or receives within one time bin.
struct TraceTransfer {
  Time start, end;
  int src, dst, step;
  std::int64_t bytes;
  bool reduce;
  std::size_t collective;
  std::uint64_t id;
  int side = -1;      // -1: a transfer, both ends; 0 / 1: a bin of the sender's / receiver's
  int transfers = 0;  // in a bin: transfers that overlap it
  double busy = 0;    // in a bin: the fraction of it spent in transfers (summed, at most 1)
};

// Calls f(TraceTransfer) for every op of every collective, in order.
template <class F>
void for_each_transfer(std::span<const TimelineCollective> collectives, F&& f) {
  std::uint64_t id = 0;
  for (std::size_t c = 0; c < collectives.size(); ++c) {
    const TimelineCollective& tc = collectives[c];
    for (OpId op_id = 0; op_id < tc.ops.size(); ++op_id) {
      const Op& op = tc.schedule->ops[op_id];
      f(TraceTransfer{tc.ops[op_id].start, tc.ops[op_id].end, (*tc.ranks)[op.src_rank],
                      (*tc.ranks)[op.dst_rank], op.step, tc.schedule->bytes(op),
                      op.kind == OpKind::Reduce || op.kind == OpKind::SwitchReduce, c, id++});
    }
  }
}

// The time bins that binned collectives share: `bins` equal ones over the run.
struct BinGrid {
  Time first = 0;
  double width = 1;
  int bins = 1;
};

// Most collectives in flight at one instant (at least 1): they share each rank's
// tracks, in lanes, so the bin budget is split among that many.
int peak_overlap(std::span<const TimelineCollective> collectives) {
  std::vector<std::pair<Time, int>> edges;  // (time, +1 start / -1 end); ends first at ties
  for (const TimelineCollective& tc : collectives) {
    if (tc.ops.empty()) continue;
    Time a = kTimeNever, b = 0;
    for (const OpTiming& o : tc.ops) a = std::min(a, o.start), b = std::max(b, o.end);
    edges.emplace_back(a, 1);
    edges.emplace_back(b, -1);
  }
  std::sort(edges.begin(), edges.end());
  int now = 0, most = 1;
  for (const auto& [t, d] : edges) most = std::max(most, now += d);
  return most;
}

// Too many transfers for a viewer: one collective's transfers, per rank and side, in
// the grid's time bins (clipped to the collective's own span), each with how busy the
// rank was, what it moved (spread over each transfer's lifetime) and how many transfers
// it touched. Empty bins are left out. A transfer adds its partial first and last bins
// directly and the whole bins between them as a difference (summed up once per bin at
// the end), so long transfers cost no more than short ones: the work is transfers +
// bins, not transfers x bins.
std::vector<TraceTransfer> busy_bins(const TimelineCollective& tc, std::size_t collective,
                                     int ranks, const BinGrid& grid) {
  const int bins = grid.bins;
  const double width = grid.width;
  const Time first = grid.first;
  Time own_first = kTimeNever, own_last = 0;
  for (const OpTiming& o : tc.ops) {
    own_first = std::min(own_first, o.start);
    own_last = std::max(own_last, o.end);
  }
  const std::size_t n = static_cast<std::size_t>(ranks) * 2 * bins;
  std::vector<double> busy(n, 0), moved(n, 0);
  std::vector<std::int64_t> touched(n, 0);
  // Per whole bin between a transfer's first and last: +1 busy, +rate x width bytes,
  // +1 transfer from the bin after the first, undone at the last.
  std::vector<double> whole_busy(n + 1, 0), whole_moved(n + 1, 0);
  std::vector<std::int64_t> whole_touched(n + 1, 0);
  for (OpId op_id = 0; op_id < tc.ops.size(); ++op_id) {
    const Op& op = tc.schedule->ops[op_id];
    const Time start = tc.ops[op_id].start, end = tc.ops[op_id].end;
    const std::int64_t bytes = tc.schedule->bytes(op);
    const int src = (*tc.ranks)[op.src_rank], dst = (*tc.ranks)[op.dst_rank];
    const int b0 = std::min(bins - 1, static_cast<int>((start - first) / width));
    const int b1 = std::min(bins - 1, static_cast<int>((end - first) / width));
    const double span = static_cast<double>(end - start);
    for (int side = 0; side < 2; ++side) {
      const std::size_t row = (static_cast<std::size_t>(side ? dst : src) * 2 + side) * bins;
      auto edge = [&](int b) {
        const double lo = std::max<double>(start - first, b * width);
        const double hi = std::min<double>(end - first, (b + 1) * width);
        busy[row + b] += hi - lo;
        moved[row + b] += span > 0 ? bytes * (hi - lo) / span : bytes;
        ++touched[row + b];
      };
      edge(b0);
      if (b1 == b0) continue;
      edge(b1);
      if (b1 == b0 + 1) continue;
      whole_busy[row + b0 + 1] += width;
      whole_busy[row + b1] -= width;
      whole_moved[row + b0 + 1] += bytes * width / span;
      whole_moved[row + b1] -= bytes * width / span;
      ++whole_touched[row + b0 + 1];
      --whole_touched[row + b1];
    }
  }
  std::vector<TraceTransfer> out;
  double run_busy = 0, run_moved = 0;
  std::int64_t run_touched = 0;
  for (std::size_t at = 0; at < n; ++at) {
    const int b = static_cast<int>(at % bins), side = static_cast<int>(at / bins % 2);
    if (b == 0) run_busy = run_moved = 0, run_touched = 0;  // a new rank and side
    run_busy += whole_busy[at];
    run_moved += whole_moved[at];
    run_touched += whole_touched[at];
    const std::int64_t transfers = touched[at] + run_touched;
    if (transfers == 0) continue;
    TraceTransfer c{};
    c.src = c.dst = static_cast<int>(at / bins / 2);
    c.side = side;
    c.collective = collective;
    // The bin, clipped to the collective's span: collectives that run one after another
    // do not overlap on a track.
    c.start = std::max(own_first, first + static_cast<Time>(b * width));
    c.end = std::min(own_last, first + static_cast<Time>((b + 1) * width));
    if (c.end <= c.start) c.end = c.start + 1;
    c.bytes = static_cast<std::int64_t>(moved[at] + run_moved + 0.5);
    c.transfers = static_cast<int>(transfers);
    c.busy = std::min(1.0, (busy[at] + run_busy) / static_cast<double>(c.end - c.start));
    out.push_back(c);
  }
  return out;
}

}  // namespace

namespace {

// Every transfer, or (past `max_transfers`) each rank's sends and receives per time bin,
// in order of start.
std::vector<TraceTransfer> timeline_transfers(std::span<const TimelineCollective> collectives,
                                              int K, std::size_t max_transfers) {
  std::size_t total = 0;
  for (const TimelineCollective& tc : collectives) total += tc.ops.size();
  std::vector<TraceTransfer> transfers;
  if (total > max_transfers) {
    BinGrid grid;
    grid.first = kTimeNever;
    Time last = 0;
    for (const TimelineCollective& tc : collectives)
      for (const OpTiming& o : tc.ops) {
        grid.first = std::min(grid.first, o.start);
        last = std::max(last, o.end);
      }
    grid.bins = std::max(
        1, static_cast<int>(max_transfers / (2 * static_cast<std::size_t>(K) *
                                             static_cast<std::size_t>(peak_overlap(collectives)))));
    grid.width = std::max<double>(1, static_cast<double>(last - grid.first) / grid.bins);
    for (std::size_t c = 0; c < collectives.size(); ++c) {
      auto bins = busy_bins(collectives[c], c, K, grid);
      transfers.insert(transfers.end(), bins.begin(), bins.end());
    }
  } else {
    transfers.reserve(total);
    for_each_transfer(collectives, [&](const TraceTransfer& x) { transfers.push_back(x); });
  }
  std::stable_sort(
      transfers.begin(), transfers.end(),
      [](const TraceTransfer& a, const TraceTransfer& b) { return a.start < b.start; });
  return transfers;
}

// The trace's threads: per rank, its send lanes then its receive lanes, ranks in order;
// each transfer on a lane of its sender and one of its receiver where it does not overlap
// another.
struct TimelineThreads {
  TraceLanes send_lanes, recv_lanes;
  std::vector<std::pair<int, int>> lane_of;  // per transfer: (send lane, receive lane)
  std::vector<int> first_tid;                // per rank, and one past the last

  TimelineThreads(std::span<const TraceTransfer> transfers, int K)
      : send_lanes(K), recv_lanes(K), lane_of(transfers.size()), first_tid(K + 1, 0) {
    for (std::size_t i = 0; i < transfers.size(); ++i) {
      const TraceTransfer& x = transfers[i];
      lane_of[i] = {x.side != 1 ? send_lanes.place(x.src, x.start, x.end) : -1,
                    x.side != 0 ? recv_lanes.place(x.dst, x.start, x.end) : -1};
    }
    for (int rank = 0; rank < K; ++rank)
      first_tid[rank + 1] = first_tid[rank] + sends(rank) + recv_lanes.count(rank);
  }
  int sends(int rank) const { return std::max(1, send_lanes.count(rank)); }
  int send_tid(std::size_t i, int rank) const { return first_tid[rank] + lane_of[i].first; }
  int recv_tid(std::size_t i, int rank) const {
    return first_tid[rank] + sends(rank) + lane_of[i].second;
  }
};

// Formats a name into one reused buffer: no allocation per event.
class NameBuffer {
 public:
  template <class... Args>
  std::string_view operator()(fmt::format_string<Args...> format, Args&&... args) {
    name_.clear();
    fmt::format_to(std::back_inserter(name_), format, std::forward<Args>(args)...);
    return {name_.data(), name_.size()};
  }

 private:
  fmt::memory_buffer name_;
};

void write_thread_names(ChromeTrace& trace, const Topology& topology,
                        const TimelineThreads& threads, NameBuffer& named) {
  for (int rank = 0; rank < topology.num_ranks(); ++rank) {
    const std::string& gpu = topology.node(topology.gpu_of_rank(rank)).name;
    const int sends = threads.sends(rank);
    for (int lane = 0; lane < sends + threads.recv_lanes.count(rank); ++lane) {
      const bool recv = lane >= sends;
      const int n = recv ? lane - sends : lane;
      const int tid = threads.first_tid[rank] + lane;
      if (n)
        trace.thread_name(0, tid,
                          named("rank {} ({}) {} {}", rank, gpu, recv ? "recv" : "send", n + 1));
      else
        trace.thread_name(0, tid, named("rank {} ({}) {}", rank, gpu, recv ? "recv" : "send"));
      trace.thread_sort_index(0, tid, tid);
    }
  }
}

// One transfer: a slice on its sender's lane and one on its receiver's, with an arrow
// between them; or one time bin of a rank's sends or receives.
void write_transfer(ChromeTrace& trace, const TraceTransfer& x, int send_tid, int recv_tid,
                    std::string_view collective, NameBuffer& named) {
  const double ts = x.start / 1e6, dur = (x.end - x.start) / 1e6;
  if (x.side >= 0) {
    trace
        .complete(
            0, x.side ? recv_tid : send_tid, ts, dur,
            named("{}: {} {:.0f}%", collective, x.side ? "receiving" : "sending", x.busy * 100),
            collective)
        .arg("collective", collective)
        .arg("busy", x.busy, "{:.4f}")
        .arg("bytes", x.bytes)
        .arg("transfers", x.transfers);
    return;
  }
  for (int side = 0; side < 2; ++side)
    trace
        .complete(0, side ? recv_tid : send_tid, ts, dur,
                  named("{} {}\u2192{}", x.reduce ? "reduce" : "copy", x.src, x.dst), collective)
        .arg("collective", collective)
        .arg("step", x.step)
        .arg("bytes", x.bytes)
        .arg("src_rank", x.src)
        .arg("dst_rank", x.dst);
  if (x.src != x.dst && x.end > x.start) {
    // An arrow from the send slice to the receive slice. Flow events bind to the
    // slice with the same pid, tid, ts and cat (Chrome's rule), or to the slice
    // enclosing them ("bp": "e", the Trace Event Format's): both hold here.
    trace.flow_start(0, send_tid, ts, x.id, collective, "transfer");
    trace.flow_end(0, recv_tid, ts, x.id, collective, "transfer");
  }
}

// Counter tracks: each busy link's utilisation per time bin.
void write_link_counters(ChromeTrace& trace, const Topology& topology,
                         const TrafficReport& traffic) {
  for (LinkId l = 0; l < static_cast<LinkId>(traffic.links.size()); ++l) {
    const LinkTraffic& lt = traffic.links[l];
    if (lt.bytes == 0 || lt.bins.empty()) continue;
    const std::string link = "link " + topology.link_label(l);
    for (int k = 0; k <= traffic.bins; ++k)
      trace.counter(1, k * traffic.bin_s * 1e6, link)
          .arg("utilisation", k < traffic.bins ? lt.bins[k] : 0.0, "{:.4g}");
  }
}

}  // namespace

void write_transfer_timeline(std::ostream& out, const Topology& topology,
                             std::span<const TimelineCollective> collectives,
                             const TrafficReport* traffic, std::size_t max_transfers) {
  const int K = topology.num_ranks();
  const std::vector<TraceTransfer> transfers = timeline_transfers(collectives, K, max_transfers);
  const TimelineThreads threads(transfers, K);
  // Timestamps are microseconds; printed with 6 decimals they keep every picosecond.
  ChromeTrace trace(out);
  trace.process_name(0, "ranks");
  if (traffic) trace.process_name(1, "link utilisation");
  NameBuffer named;
  write_thread_names(trace, topology, threads, named);
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const TraceTransfer& x = transfers[i];
    write_transfer(trace, x, threads.send_tid(i, x.src), threads.recv_tid(i, x.dst),
                   collectives[x.collective].name, named);
  }
  if (traffic) write_link_counters(trace, topology, *traffic);
  trace.finish();
}

void write_chrome_trace(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                        const TrafficReport& traffic, std::size_t max_transfers) {
  std::vector<TimelineCollective> collectives;
  for (std::size_t c = 0; c < r.resolved.size(); ++c)
    collectives.push_back(
        {r.resolved[c].name, &r.resolved[c].ranks, &*r.schedules[c], r.sim.tasks[c].ops});
  write_transfer_timeline(out, s.topology, collectives, &traffic, max_transfers);
}

}  // namespace collsim
