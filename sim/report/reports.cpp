#include "report/reports.h"

#include <sched.h>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <algorithm>
#include <exception>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>
#include <tuple>

#include "core/csv.h"
#include "core/interrupt.h"
#include "core/units.h"
#include "report/chrome_trace.h"
#include "report/json_text.h"
#include "report/trace_lanes.h"
#include "schedule/algorithms.h"

namespace collsim {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  // Contiguous 0..K-1 is the common case; say it briefly.
  bool contiguous = true;
  for (std::size_t i = 0; i < ranks.size(); ++i) contiguous &= ranks[i] == static_cast<int>(i);
  if (contiguous) return std::to_string(ranks.size());
  // Every one of 0..K-1 in another order is not a subset.
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  bool all = true;
  for (std::size_t i = 0; i < sorted.size(); ++i) all &= sorted[i] == static_cast<int>(i);
  return fmt::format("{} ({})", ranks.size(), all ? "reordered" : "subset");
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

bool over_link_rate(const Scenario& s, const ScenarioResult& r, const Bottleneck& b) {
  return s.network.model == NetworkModelKind::Ideal && b.link >= 0 &&
         b.seconds > r.outcomes[b.collective].ops_time_s * (1 + 1e-9);
}

std::string ideal_caveat(const Scenario& s, const ScenarioResult& r, const TrafficReport& traffic) {
  if (s.network.model != NetworkModelKind::Ideal) return "";
  std::set<std::size_t> over;
  for (const Bottleneck& b : traffic.per_collective)
    if (over_link_rate(s, r, b)) over.insert(b.collective);
  LinkId busiest = -1;
  for (LinkId l = 0; l < static_cast<LinkId>(traffic.links.size()); ++l)
    if (busiest < 0 || traffic.links[l].utilisation > traffic.links[busiest].utilisation)
      busiest = l;
  const bool link_over = busiest >= 0 && traffic.links[busiest].utilisation > 1 + 1e-9;
  if (over.empty() && !link_over) return "";
  std::vector<std::string> what;
  if (!over.empty())
    what.push_back(fmt::format(
        "{} of {} collective{} took less time than {} busiest link needs for {} bytes at its full "
        "rate",
        over.size(), r.resolved.size(), r.resolved.size() == 1 ? "" : "s",
        over.size() == 1 ? "its" : "their", over.size() == 1 ? "its" : "their"));
  if (link_over)
    what.push_back(fmt::format("{} carried {}% of its rate over the run",
                               s.topology.link_label(busiest),
                               format_significant(100 * traffic.links[busiest].utilisation, 4)));
  return fmt::format(
      "the ideal network model gives every transfer its links to itself: {}; these times are "
      "no physical ones (flow and packet share links)",
      fmt::join(what, ", and "));
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
    out +=
        fmt::format("# {}: {} ({:.2f} us) outlasts its ops on the links ({:.2f} us) and stands{}\n",
                    r.resolved[i].name,
                    nccl ? "NCCL's own estimate for its pick" : "the host's time to issue it",
                    o.time_s * 1e6, o.ops_time_s * 1e6,
                    nccl ? ": its table holds kernel limits the links do not (a calibration "
                           "stating launch or latency replaces it)"
                         : "");
  }
  if (held > kShown) out += fmt::format("# ... and {} more held so\n", held - kShown);
  return out;
}

}  // namespace

std::optional<std::string_view> held_name(HeldBy held) {
  if (held == HeldBy::Nothing) return std::nullopt;
  return name_of(held);
}

nlohmann::json held_json(HeldBy held) {
  const auto name = held_name(held);
  return name ? nlohmann::json(*name) : nlohmann::json();
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
    out += fmt::format("  up to {} at once", lt.peak_transfers);
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
    if (b.link < 0 || b.collective >= kCollectivesDetailed) continue;
    const double took = r.outcomes[b.collective].ops_time_s;
    out += fmt::format(
        "# {}: bottleneck {} ({} in {} at {}){}\n", r.resolved[b.collective].name,
        s.topology.link_label(b.link), format_bytes(b.bytes), format_duration(b.seconds),
        b.share_of_rate < 1 ? fmt::format("{}% of full rate: a reducing switch's legs",
                                          format_significant(100 * b.share_of_rate, 3))
                            : "full rate",
        over_link_rate(s, r, b)
            ? fmt::format(", more than the {} it took: the ideal model gives every transfer "
                          "its links to itself, so this time is no physical one (flow and "
                          "packet share links)",
                          format_duration(took))
            : "");
  }
  if (r.resolved.size() > 1) out += per_collective_lines(s, r, traffic);
  if (const std::string caveat = ideal_caveat(s, r, traffic); !caveat.empty())
    out += "# caveat: " + caveat + "\n";
  return out;
}

namespace {

// collectives[i]: its busiest links and its ranks' bytes, over its own window.
void add_own_traffic(JsonObjectText& c, const Topology& t, const CollectiveTraffic& ct,
                     bool timed) {
  JsonArrayText hottest(c.inner());
  for (const auto& lb : ct.hottest(5))
    hottest.add_text(JsonObjectText(hottest.inner())
                         .add("link", t.link_label(lb.link))
                         .add("kind", name_of(t.link(lb.link).kind))
                         .add("bandwidth_Bps", t.link(lb.link).bandwidth)
                         .add("bytes", lb.bytes)
                         .add("utilisation", lb.utilisation)
                         .text());
  c.add_text("hottest_links", hottest.text());
  c.add("links_used", ct.links.size());
  std::vector<std::int64_t> sent, received;
  std::vector<double> busy, idle;
  for (const RankTraffic& rt : ct.ranks) {
    sent.push_back(rt.sent);
    received.push_back(rt.received);
    if (!timed) continue;
    busy.push_back(rt.busy_s);
    idle.push_back(rt.idle_s);
  }
  JsonObjectText per_rank(c.inner());
  per_rank.add_array<std::int64_t>("sent_bytes", sent)
      .add_array<std::int64_t>("received_bytes", received);
  if (timed) per_rank.add_array<double>("busy_s", busy).add_array<double>("idle_s", idle);
  c.add_text("per_rank", per_rank.text());
  const auto spread_text = [&](std::int64_t RankTraffic::*field) {
    const RankSpread x = spread(ct.ranks, field);
    return JsonObjectText(c.inner()).add("min", x.min).add("mean", x.mean).add("max", x.max).text();
  };
  c.add_text("sent_bytes_per_rank", spread_text(&RankTraffic::sent));
  c.add_text("received_bytes_per_rank", spread_text(&RankTraffic::received));
}

// Timed by its representatives: no full schedule, so no digest of one.
bool folded(const ScenarioResult& r, std::size_t i) {
  return i < r.folding.size() && r.folding[i].folded;
}

}  // namespace

namespace {

// A bandwidth in GB/s, or none (null) where no time passed.
std::optional<double> bandwidth_GBps(double bytes_per_second, double time_s) {
  if (time_s <= 0) return std::nullopt;
  return bytes_per_second / 1e9;
}

// An auto choice's candidate.
std::string candidate_text(const Candidate& x, int depth) {
  return JsonObjectText(depth)
      .add("algorithm", x.algorithm)
      .add("plan", x.label)
      .add("segments", x.options.segments)
      .add("time_s", x.time_s)
      .text();
}

std::string auto_text(const AutoChoice& choice, int depth) {
  JsonObjectText out(depth);
  out.add_text("chosen", candidate_text(choice.chosen, out.inner()));
  if (choice.runner_up)
    out.add_text("runner_up", candidate_text(*choice.runner_up, out.inner()));
  else
    out.add("runner_up", nullptr);
  return out.add("candidates", choice.candidates_tried).text();
}

std::string bottleneck_text(const Topology& t, const Bottleneck& b, int depth) {
  JsonObjectText out(depth);
  out.add("link", t.link_label(b.link))
      .add("bytes", b.bytes)
      .add("seconds_at_full_rate", full_rate_seconds(t, b));
  // Only where a reducing switch's legs slowed the link: the share of its rate its bytes
  // moved at, and the time they needed so (what made it the bottleneck).
  if (b.share_of_rate < 1)
    out.add("share_of_rate", b.share_of_rate).add("seconds_at_its_rate", b.seconds);
  return out.text();
}

// collectives[i] of result.json, as an element of its array (`depth` 2): its figures, its
// plan's choice, its bottleneck and traffic.
void append_collective(std::string& into, const Scenario& s, const ScenarioResult& r,
                       const TrafficReport& traffic, std::size_t i, const Bottleneck* bottleneck,
                       int depth) {
  const auto& c = r.resolved[i];
  const auto& o = r.outcomes[i];
  JsonObjectText out(depth);
  out.add("name", c.name)
      .add("op", name_of(c.shape.op))
      .add("algorithm", c.algorithm)
      .add("plan", r.labels[i])
      .add("protocol", c.protocol)
      .add_array<int>("ranks", c.ranks)
      .add("bytes", c.bytes)
      .add("count", c.shape.count)
      .add("dtype", name_of(c.shape.dtype))
      .add("start_s", o.start_s)
      .add("end_s", o.end_s)
      .add("time_s", o.time_s)
      .add("algbw_GBps", bandwidth_GBps(o.algbw_Bps, o.time_s))
      .add("busbw_GBps", bandwidth_GBps(o.busbw_Bps, o.time_s))
      .add("ops_time_s", o.ops_time_s)
      .add("segments", c.options.segments)
      .add("transfers", r.op_count(i))
      .add("steps", r.schedules[i]->num_steps);
  out.add("schedule_digest",
          folded(r, i) ? std::nullopt : std::optional(digest_text(r.digests[i])));
  out.add("held_by", held_name(o.held_by));
  if (i < r.folding.size() && !r.folding[i].note.empty()) out.add("symmetry", r.folding[i].note);
  if (r.choices[i]) out.add_text("auto", auto_text(*r.choices[i], out.inner()));
  if (bottleneck) out.add_text("bottleneck", bottleneck_text(s.topology, *bottleneck, out.inner()));
  out.add("over_link_rate", bottleneck != nullptr && over_link_rate(s, r, *bottleneck));
  if (i < traffic.collectives.size())
    add_own_traffic(out, s.topology, traffic.collectives[i], traffic.timed);
  out.append_to(into);
}

// Each collective's bottleneck (the last one listed for it), or null.
std::vector<const Bottleneck*> bottlenecks_of(const ScenarioResult& r,
                                              const TrafficReport& traffic) {
  std::vector<const Bottleneck*> out(r.resolved.size(), nullptr);
  for (const auto& b : traffic.per_collective)
    if (b.link >= 0) out[b.collective] = &b;
  return out;
}

// result.json without its collectives (an empty array in their place), as text.
std::string result_json_frame(const Scenario& s, const TrafficReport& traffic,
                              const std::string& caveat) {
  const auto& t = s.topology;
  JsonArrayText links(1);
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const LinkTraffic& lt = traffic.links[l];
    JsonObjectText link(links.inner());
    link.add("src", t.node(t.link(l).src).name)
        .add("dst", t.node(t.link(l).dst).name)
        .add("kind", name_of(t.link(l).kind))
        .add("bandwidth_GBps", t.link(l).bandwidth / 1e9)
        .add("bytes", lt.bytes)
        .add("busy_s", lt.busy_s)
        .add("utilisation", lt.utilisation);
    link.add("peak_transfers", lt.peak_transfers);
    links.add_text(link.text());
  }
  JsonArrayText ranks(1);
  for (std::size_t rank = 0; rank < traffic.ranks.size(); ++rank) {
    const RankTraffic& rt = traffic.ranks[rank];
    JsonObjectText one(ranks.inner());
    one.add("rank", rank)
        .add("gpu", t.node(t.gpu_of_rank(static_cast<int>(rank))).name)
        .add("sent_bytes", rt.sent)
        .add("received_bytes", rt.received);
    if (traffic.timed) one.add("busy_s", rt.busy_s).add("idle_s", rt.idle_s);
    ranks.add_text(one.text());
  }
  JsonObjectText doc(0);
  doc.add("scenario", s.name)
      .add_text("topology", JsonObjectText(1)
                                .add("name", t.name)
                                .add("gpus", t.num_ranks())
                                .add("links", t.links().size())
                                .text())
      .add_text("network", JsonObjectText(1)
                               .add("model", name_of(s.network.model))
                               .add("alpha_s", to_seconds(s.network.alpha))
                               .text())
      .add("makespan_s", traffic.makespan_s)
      .add("caveat", caveat.empty() ? std::nullopt : std::optional<std::string>(caveat))
      .add_text("collectives", "[]")
      .add_text("links", links.text())
      .add_text("ranks", ranks.text());
  return doc.text();
}

}  // namespace

nlohmann::json result_json(const Scenario& s, const ScenarioResult& r,
                           const TrafficReport& traffic) {
  std::ostringstream text;
  write_result_json(text, s, r, traffic);
  return nlohmann::json::parse(text.str());
}

namespace {

// The cores this process may run on (its affinity: taskset, a container's cpuset), at least 1.
std::size_t usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// Items 0..n-1 made into text by `make(i, into)` (appending) and written in order, a batch at
// a time, each batch's items shared out over `threads` threads (0: the usable cores, up to
// 8): making each collective's part of result.json is much of writing 100,000 of them, and
// the parts do not depend on each other. The bytes are those of making them one by one.
// Where a thread cannot be started (a process limit), this one makes its share. (A name
// nlohmann escapes is dumped by it, which reads localeconv(), glibc's static: safe while
// nothing calls setlocale, as nothing in collsim does.)
template <class Make>
void write_in_batches(std::ostream& out, std::size_t n, int threads, const Make& make) {
  constexpr std::size_t kBatch = 4096, kAlone = 256;  // below kAlone items, no threads
  const std::size_t workers =
      n < kAlone ? 1
                 : std::clamp<std::size_t>(
                       threads > 0 ? static_cast<std::size_t>(threads) : usable_cores(), 1, 8);
  std::vector<std::string> parts(workers);
  std::vector<std::exception_ptr> errors(workers);
  for (std::size_t begin = 0; begin < n; begin += kBatch) {
    const std::size_t size = std::min(kBatch, n - begin);
    const auto part = [&](std::size_t w) {
      parts[w].clear();
      try {
        for (std::size_t i = begin + size * w / workers; i < begin + size * (w + 1) / workers; ++i)
          make(i, parts[w]);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    };
    {
      std::vector<std::jthread> helpers;
      std::size_t started = 1;
      try {
        for (; started < workers; ++started)
          helpers.emplace_back(with_stop_token<std::size_t>(part), started);
      } catch (const std::system_error&) {  // no more threads: the rest made here
      }
      part(0);
      for (std::size_t w = started; w < workers; ++w) part(w);
    }  // joined
    for (std::size_t w = 0; w < workers; ++w) {
      if (errors[w]) std::rethrow_exception(errors[w]);
      out << parts[w];
    }
  }
}

}  // namespace

void write_result_json(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                       const TrafficReport& traffic, int threads) {
  // The frame, the collectives written a batch at a time where its empty array stands:
  // 100,000 collectives never sit in memory at once.
  const std::string frame = result_json_frame(s, traffic, ideal_caveat(s, r, traffic));
  const std::string_view hole = "\"collectives\": []";
  const std::size_t at = frame.find(hole);
  out << std::string_view(frame).substr(0, at + hole.size() - 2);
  if (r.resolved.empty()) {
    out << "[]";
  } else {
    out << "[";
    const auto bottlenecks = bottlenecks_of(r, traffic);
    write_in_batches(out, r.resolved.size(), threads, [&](std::size_t i, std::string& into) {
      into += i ? ",\n    " : "\n    ";
      append_collective(into, s, r, traffic, i, bottlenecks[i], 2);
    });
    out << "\n  ]";
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
  out << "collective,step,bottleneck_link,kind,bytes,seconds_at_full_rate,share_of_rate\n";
  for (const auto& b : traffic.per_step)
    fmt::print(out, "{},{},{},{},{},{:.12g},{:.6g}\n", csv_field(r.resolved[b.collective].name),
               b.step, csv_field(s.topology.link_label(b.link)),
               name_of(s.topology.link(b.link).kind), b.bytes, full_rate_seconds(s.topology, b),
               b.share_of_rate);
}

void write_utilisation_csv(std::ostream& out, const Scenario& s, const TrafficReport& traffic) {
  out << "link";
  // Each column is named by its bin's start time, in seconds. A run of no duration (one rank,
  // no bytes) has one instant, not 100 bins all named "0s".
  const int bins = traffic.bin_s > 0 ? traffic.bins : std::min(traffic.bins, 1);
  for (int k = 0; k < bins; ++k) fmt::print(out, ",{:.9g}s", k * traffic.bin_s);
  out << "\n";
  for (LinkId l = 0; l < static_cast<LinkId>(traffic.links.size()); ++l) {
    out << csv_field(s.topology.link_label(l));
    const auto& u = traffic.links[l].bins;
    for (std::size_t k = 0; k < std::min(u.size(), static_cast<std::size_t>(bins)); ++k)
      fmt::print(out, ",{:.4g}", u[k]);
    out << "\n";
  }
}

}  // namespace collsim
