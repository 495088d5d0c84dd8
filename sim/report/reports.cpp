#include "report/reports.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "core/units.h"

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
  return fmt::format("network {} (alpha {})", s.network.model, format_duration(to_seconds(s.network.alpha)));
}

}  // namespace

std::string summary_table(const Scenario& s, const ScenarioResult& r) {
  std::string out = fmt::format("# collsim {}: topology {} ({} GPUs, {} links), {}\n", s.name, s.topology.name,
                                s.topology.num_ranks(), s.topology.links().size(), network_line(s));
  out += "# size in bytes; time in microseconds; algbw = size/time and busbw in GB/s (1 GB = 1e9 bytes)\n";
  // Columns as wide as their widest entry, so long names do not push rows out of line.
  std::size_t wn = 4, wa = 9;
  for (const auto& c : r.resolved) {
    wn = std::max(wn, c.name.size());
    wa = std::max(wa, c.algorithm.size());
  }
  out += fmt::format("# {:<{}} {:<14} {:<{}} {:>6} {:>13} {:>12} {:<9} {:>12} {:>10} {:>10}\n", "name", wn, "op",
                     "algorithm", wa, "ranks", "size", "count", "type", "time", "algbw", "busbw");
  for (std::size_t i = 0; i < r.resolved.size(); ++i) {
    const auto& c = r.resolved[i];
    const auto& o = r.outcomes[i];
    const bool timed = o.time_s > 0;
    out += fmt::format("  {:<{}} {:<14} {:<{}} {:>6} {:>13} {:>12} {:<9} {:>12.2f} {:>10} {:>10}\n", c.name, wn,
                       name_of(c.shape.op), c.algorithm, wa, rank_list(c.ranks), c.bytes, c.shape.count,
                       name_of(c.shape.dtype), o.time_s * 1e6,
                       timed ? fmt::format("{:.2f}", o.algbw_Bps / 1e9) : "-",
                       timed ? fmt::format("{:.2f}", o.busbw_Bps / 1e9) : "-");
  }
  if (r.resolved.size() > 1) {
    double end = 0;
    for (const auto& o : r.outcomes) end = std::max(end, o.end_s);
    out += fmt::format("# all collectives done at {:.2f} us\n", end * 1e6);
  }
  for (std::size_t i = 0; i < r.resolved.size(); ++i) {
    if (!r.choices[i]) continue;
    const AutoChoice& a = *r.choices[i];
    out += fmt::format("# {}: auto chose {} (segments {}, {:.2f} us) of {} candidates", r.resolved[i].name,
                       a.chosen.algorithm, a.chosen.segments, a.chosen.time_s * 1e6, a.candidates_tried);
    if (a.runner_up)
      out += fmt::format("; runner-up {} (segments {}, {:.2f} us)", a.runner_up->algorithm, a.runner_up->segments,
                         a.runner_up->time_s * 1e6);
    out += "\n";
  }
  return out;
}

nlohmann::json result_json(const Scenario& s, const ScenarioResult& r) {
  nlohmann::json collectives = nlohmann::json::array();
  for (std::size_t i = 0; i < r.resolved.size(); ++i) {
    const auto& c = r.resolved[i];
    const auto& o = r.outcomes[i];
    collectives.push_back({{"name", c.name},
                           {"op", name_of(c.shape.op)},
                           {"algorithm", c.algorithm},
                           {"ranks", c.ranks},
                           {"bytes", c.bytes},
                           {"count", c.shape.count},
                           {"dtype", name_of(c.shape.dtype)},
                           {"start_s", o.start_s},
                           {"end_s", o.end_s},
                           {"time_s", o.time_s},
                           {"algbw_GBps", bandwidth_or_null(o.algbw_Bps, o.time_s)},
                           {"busbw_GBps", bandwidth_or_null(o.busbw_Bps, o.time_s)},
                           {"segments", c.options.segments},
                           {"transfers", r.schedules[i].size()},
                           {"steps", r.schedules[i].num_steps}});
    if (r.choices[i]) {
      auto candidate = [](const Candidate& x) {
        return nlohmann::json{{"algorithm", x.algorithm}, {"segments", x.segments}, {"time_s", x.time_s}};
      };
      collectives.back()["auto"] = {{"chosen", candidate(r.choices[i]->chosen)},
                                    {"runner_up", r.choices[i]->runner_up ? candidate(*r.choices[i]->runner_up)
                                                                          : nlohmann::json(nullptr)},
                                    {"candidates", r.choices[i]->candidates_tried}};
    }
  }
  nlohmann::json links = nlohmann::json::array();
  const auto& t = s.topology;
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    links.push_back({{"src", t.node(t.link(l).src).name},
                     {"dst", t.node(t.link(l).dst).name},
                     {"kind", name_of(t.link(l).kind)},
                     {"bandwidth_GBps", t.link(l).bandwidth / 1e9},
                     {"bytes", r.sim.links.bytes[l]},
                     {"busy_s", to_seconds(r.sim.links.busy[l])}});
  }
  return {{"scenario", s.name},
          {"topology", {{"name", t.name}, {"gpus", t.num_ranks()}, {"links", t.links().size()}}},
          {"network", {{"model", s.network.model}, {"alpha_s", to_seconds(s.network.alpha)}}},
          {"collectives", std::move(collectives)},
          {"links", std::move(links)}};
}

void write_links_csv(std::ostream& out, const Scenario& s, const ScenarioResult& r) {
  const auto& t = s.topology;
  out << "src,dst,kind,bandwidth_Bps,bytes,busy_s\n";
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const Link& link = t.link(l);
    fmt::print(out, "{},{},{},{},{},{:.12g}\n", t.node(link.src).name, t.node(link.dst).name, name_of(link.kind),
               link.bandwidth, r.sim.links.bytes[l], to_seconds(r.sim.links.busy[l]));
  }
}

void write_chrome_trace(std::ostream& out, const Scenario& s, const ScenarioResult& r) {
  // Timestamps are microseconds; printed with 6 decimals they keep every picosecond.
  fmt::memory_buffer buf;
  auto flush = [&] {
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.clear();
  };
  fmt::format_to(std::back_inserter(buf), "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  fmt::format_to(std::back_inserter(buf),
                 "{{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":\"process_name\",\"args\":{{\"name\":\"ranks\"}}}}");
  for (int rank = 0; rank < s.topology.num_ranks(); ++rank) {
    fmt::format_to(std::back_inserter(buf),
                   ",\n{{\"ph\":\"M\",\"pid\":0,\"tid\":{0},\"name\":\"thread_name\",\"args\":{{\"name\":\"rank {0} "
                   "({1})\"}}}}",
                   rank, s.topology.node(s.topology.gpu_of_rank(rank)).name);
  }
  for (std::size_t i = 0; i < r.resolved.size(); ++i) {
    const auto& c = r.resolved[i];
    const Schedule& sched = r.schedules[i];
    const auto& timing = r.sim.tasks[i].ops;
    const std::string quoted_name = nlohmann::json(c.name).dump();  // escaped for JSON
    for (OpId id = 0; id < timing.size(); ++id) {
      const Op& op = sched.ops[id];
      const int src = c.ranks[op.src_rank], dst = c.ranks[op.dst_rank];
      fmt::format_to(std::back_inserter(buf),
                     ",\n{{\"ph\":\"X\",\"pid\":0,\"tid\":{},\"ts\":{:.6f},\"dur\":{:.6f},\"cat\":{},"
                     "\"name\":\"{} {}\\u2192{}\",\"args\":{{\"collective\":{},\"step\":{},\"bytes\":{},"
                     "\"src_rank\":{},\"dst_rank\":{}}}}}",
                     src, timing[id].start / 1e6, (timing[id].end - timing[id].start) / 1e6, quoted_name,
                     op.kind == OpKind::Reduce ? "reduce" : "copy", src, dst, quoted_name, op.step, sched.bytes(op), src,
                     dst);
      if (buf.size() > (1 << 20)) flush();
    }
  }
  fmt::format_to(std::back_inserter(buf), "\n]}}\n");
  flush();
}

}  // namespace collsim
