#include "sweep/sweep_shard.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/json_view.h"
#include "core/time.h"
#include "core/units.h"
#include "schedule/collective.h"

namespace collsim {

namespace {

constexpr const char* kShardFormat = "collsim sweep shard";
constexpr int kShardVersion = 1;

std::string shard_text(Shard s) {
  return fmt::format("{}/{}", s.index, s.count);
}

// What each JSON object of a shard file holds, as shard_json, sweep_plan_json and
// rows_json write it: anything else is a hand edit or another program's file.
constexpr std::string_view kShardKeys[] = {"format", "version", "shard", "shards",
                                           "scenario_digest", "sweep", "rows"};
constexpr std::string_view kPlanKeys[] = {
    "scenario",         "topology",   "network", "gpus",     "alpha_ps", "collective",
    "collective_index", "op",         "dtype",   "redop",    "root",     "own_ranks",
    "rank_counts",      "algorithms", "sizes",   "left_out", "collective_algorithm"};
constexpr std::string_view kRowKeys[] = {"point", "ranks",      "algorithm",     "bytes",
                                         "count", "time_s",     "algbw_Bps",     "busbw_Bps",
                                         "plan",  "ops_time_s", "over_link_rate"};

// The longest a simulated collective can take: the picosecond clock's end.
constexpr double kMaxRowSeconds = to_seconds(kTimeNever);

// A time or a rate the simulator could have printed: finite, from 0 to `max`.
double read_nonnegative(const JsonView& v, double max, std::string_view what) {
  const double x = v.as_number();
  if (!(x >= 0 && x <= max)) v.fail(fmt::format("{} from 0 to {:g}", what, max));
  return x;
}

// The points of shard `s` of a sweep of `points`: shard_points(points, s).size(),
// without building the list (a file's counts are not trusted until they match).
std::size_t shard_point_count(std::size_t points, Shard s) {
  const auto first = static_cast<std::size_t>(s.index - 1);
  const auto count = static_cast<std::size_t>(s.count);
  return points > first ? (points - first - 1) / count + 1 : 0;
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  auto number = [&](std::string_view part, int& out) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    return ec == std::errc() && end == part.data() + part.size() && !part.empty();
  };
  Shard s;
  const std::string_view t(text);
  if (slash == std::string::npos || !number(t.substr(0, slash), s.index) ||
      !number(t.substr(slash + 1), s.count))
    throw InputError("--shard", fmt::format("expected i/n like \"2/8\", got \"{}\"", text));
  if (s.count < 1 || s.index < 1 || s.index > s.count)
    throw InputError("--shard", fmt::format("shard {} of {}: expected 1 <= i <= n (shards are "
                                            "numbered from 1, as Slurm's --array=1-N)",
                                            s.index, s.count));
  return s;
}

std::vector<std::size_t> shard_points(std::size_t points, Shard shard) {
  std::vector<std::size_t> out;
  for (std::size_t k = static_cast<std::size_t>(shard.index - 1); k < points;
       k += static_cast<std::size_t>(shard.count))
    out.push_back(k);
  return out;
}

std::string shard_file_name(Shard shard) {
  return fmt::format("sweep-shard-{}-of-{}.json", shard.index, shard.count);
}

std::string text_digest(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return fmt::format("{:016x}", h);
}

nlohmann::json rows_json(std::span<const std::size_t> points, std::span<const SweepRow> rows) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& r = rows[i];
    // nlohmann writes the shortest decimal that reads back as the same double.
    out.push_back({{"point", points[i]},
                   {"ranks", r.ranks},
                   {"algorithm", r.algorithm},
                   {"bytes", r.bytes},
                   {"count", r.count},
                   {"time_s", r.time_s},
                   {"algbw_Bps", r.algbw_Bps},
                   {"busbw_Bps", r.busbw_Bps},
                   {"plan", r.plan},
                   {"ops_time_s", r.ops_time_s},
                   {"over_link_rate", r.over_link_rate}});
  }
  return out;
}

std::vector<std::pair<std::size_t, SweepRow>> rows_from_json(const SweepPlan& plan,
                                                             const nlohmann::json& rows,
                                                             const std::string& where) {
  const JsonView all(rows, where);
  if (!all.is_array()) all.fail("an array of rows");
  // sweep_plan_from_json read a known type.
  const std::int64_t element_size = collsim::element_size(*dtype_from_name(plan.about.dtype));
  std::vector<std::pair<std::size_t, SweepRow>> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const JsonView v = all[i];
    if (!v.is_object()) v.fail("a row object");
    v.allow_only(kRowKeys);
    const auto k = static_cast<std::size_t>(
        v["point"].as_int(0, static_cast<std::int64_t>(plan.points()) - 1));
    SweepRow r{};
    // What point k ran: its rank count, algorithm and size, its count in the sweep's type.
    const SweepPoint point = plan.point(k);
    const auto expect = [&](std::string_view key, auto got, auto want) {
      if (got != want) v[key].fail(fmt::format("{} (point {})", want, k));
    };
    r.ranks = static_cast<int>(v["ranks"].as_int(1, std::numeric_limits<int>::max()));
    expect("ranks", r.ranks, point.ranks);
    r.algorithm = v["algorithm"].as_string();
    expect("algorithm", fmt::format("\"{}\"", r.algorithm), fmt::format("\"{}\"", point.algorithm));
    r.bytes = v["bytes"].as_int(0, kMaxBytes);
    expect("bytes", r.bytes, point.bytes);
    r.count = v["count"].as_int(0, kMaxBytes);
    expect("count", r.count, point.bytes / element_size);
    r.time_s = read_nonnegative(v["time_s"], kMaxRowSeconds, "a simulated time in seconds");
    // bytes / time_s: even 1 PiB in a picosecond stays far below a double's end.
    r.algbw_Bps = read_nonnegative(v["algbw_Bps"], 1e300, "a bandwidth in bytes per second");
    r.busbw_Bps = read_nonnegative(v["busbw_Bps"], 1e300, "a bandwidth in bytes per second");
    r.plan = v["plan"].as_string();
    // Shards from before the field: the ops took the whole time.
    const auto ops = v.find("ops_time_s");
    r.ops_time_s =
        ops ? read_nonnegative(*ops, kMaxRowSeconds, "a simulated time in seconds") : r.time_s;
    if (const auto over = v.find("over_link_rate")) r.over_link_rate = over->as_bool();
    out.emplace_back(k, std::move(r));
  }
  return out;
}

nlohmann::json sweep_plan_json(const SweepPlan& p) {
  const SweepAbout& a = p.about;
  return {{"scenario", a.scenario},
          {"topology", a.topology},
          {"network", a.network},
          {"gpus", a.gpus},
          {"alpha_ps", a.alpha},
          {"collective", a.collective},
          {"collective_index", p.collective},
          {"op", a.op},
          {"dtype", a.dtype},
          {"redop", a.redop},
          {"root", a.root},
          {"own_ranks", p.own_ranks},
          {"rank_counts", p.rank_counts},
          {"algorithms", p.algorithms},
          {"sizes", p.sizes},
          {"left_out", p.left_out},
          {"collective_algorithm", a.algorithm}};
}

SweepPlan sweep_plan_from_json(const nlohmann::json& doc, const std::string& where) {
  const JsonView v(doc, where);
  if (!v.is_object()) v.fail("a sweep plan object");
  v.allow_only(kPlanKeys);
  const auto max = std::numeric_limits<std::int64_t>::max();
  const auto max_int = std::numeric_limits<int>::max();
  SweepPlan p;
  SweepAbout& a = p.about;
  a.scenario = v["scenario"].as_string();
  a.topology = v["topology"].as_string();
  a.network = v["network"].as_string();
  a.gpus = static_cast<int>(v["gpus"].as_int(1, max_int));
  a.alpha = v["alpha_ps"].as_int(0, max);
  a.collective = v["collective"].as_string();
  p.collective = static_cast<std::size_t>(v["collective_index"].as_int(0, max));
  a.op = v["op"].as_string();
  a.dtype = v["dtype"].as_string();
  if (!dtype_from_name(a.dtype)) v["dtype"].fail("a type collsim knows (\"float32\", ...)");
  a.redop = v["redop"].as_string();
  a.root = static_cast<int>(v["root"].as_int(-1, max_int));
  p.own_ranks = v["own_ranks"].as_bool();
  p.rank_counts = v["rank_counts"].as_int_list(1, max_int);
  p.algorithms = v["algorithms"].as_string_list();
  // Absent in shard files of earlier versions: nothing was left out with a reason.
  if (auto left_out = v.find("left_out")) p.left_out = left_out->as_string_list();
  // Absent in earlier versions, whose points ran on NCCL's protocols beside its pick only:
  // what a collective of no named algorithm gives (SweepPlan::others_on_nccl_protocols).
  if (auto algorithm = v.find("collective_algorithm")) a.algorithm = algorithm->as_string();
  const JsonView sizes = v["sizes"];
  if (!sizes.is_array()) sizes.fail("an array of sizes in bytes");
  for (std::size_t i = 0; i < sizes.size(); ++i) p.sizes.push_back(sizes[i].as_int(1, kMaxBytes));
  // Each list is bounded by the file's length, their product is not: checked before
  // points() multiplies them, in doubles, which cannot wrap.
  const double points = static_cast<double>(p.rank_counts.size()) *
                        static_cast<double>(p.algorithms.size()) *
                        static_cast<double>(p.sizes.size());
  if (points == 0) v.fail_message("a sweep of no points");
  if (points > kMaxSweepPoints)
    v.fail_message(fmt::format("rank counts x algorithms x sizes is {:g} points; a sweep has at "
                               "most {:g}",
                               points, kMaxSweepPoints));
  return p;
}

nlohmann::json shard_json(const SweepPlan& plan, const std::string& scenario_digest, Shard shard,
                          std::span<const SweepRow> rows) {
  const std::vector<std::size_t> points = shard_points(plan.points(), shard);
  return {{"format", kShardFormat},
          {"version", kShardVersion},
          {"shard", shard.index},
          {"shards", shard.count},
          {"scenario_digest", scenario_digest},
          {"sweep", sweep_plan_json(plan)},
          {"rows", rows_json(points, rows)}};
}

namespace {

// One shard file, checked on its own: its shard and its rows, exactly that shard's points.
struct ReadShard {
  Shard shard;
  std::string digest;
  const nlohmann::json* sweep;
  std::vector<std::pair<std::size_t, SweepRow>> rows;
};

ReadShard read_shard(const ShardFile& f) {
  const JsonView v(f.doc, f.name + ":");
  const auto format = f.doc.is_object() ? f.doc.find("format") : f.doc.end();
  if (!f.doc.is_object() || format == f.doc.end() || *format != kShardFormat)
    throw InputError(f.name, "not a shard file of collsim sweep --shard (no \"format\": \"" +
                                 std::string(kShardFormat) + "\")");
  v.allow_only(kShardKeys);
  // The file's own keys: "FILE: missing ...", not "FILE:: missing ...".
  const auto field = [&](std::string_view key) {
    if (!v.has(key))
      throw InputError(f.name, fmt::format("missing required field \"{}\" (is the shard file "
                                           "cut short?)",
                                           key));
    return v[key];
  };
  if (field("version").raw() != kShardVersion)
    v["version"].fail(fmt::format("{} (made by another collsim version)", kShardVersion));
  ReadShard s;
  s.shard.count = static_cast<int>(field("shards").as_int(1, std::numeric_limits<int>::max()));
  s.shard.index = static_cast<int>(field("shard").as_int(1, s.shard.count));
  s.digest = field("scenario_digest").as_string();
  s.sweep = &field("sweep").raw();
  const SweepPlan plan = sweep_plan_from_json(*s.sweep, f.name + ":sweep");
  const JsonView rows = field("rows");
  const std::size_t points = shard_point_count(plan.points(), s.shard);
  if (!rows.is_array()) rows.fail("an array of rows");
  if (rows.size() != points)
    throw InputError(
        f.name, fmt::format("{} rows, but shard {} has {} points: {}", rows.size(),
                            shard_text(s.shard), points,
                            rows.size() < points ? "the file is incomplete (did the shard finish?)"
                                                 : "its rows, shard count or sweep were changed"));
  s.rows = rows_from_json(plan, rows.raw(), f.name + ":rows");
  const auto want = shard_points(plan.points(), s.shard);
  for (std::size_t i = 0; i < want.size(); ++i)
    if (s.rows[i].first != want[i])
      throw InputError(f.name + ":rows[" + std::to_string(i) + "].point",
                       fmt::format("expected point {} of shard {}, got {}", want[i],
                                   shard_text(s.shard), s.rows[i].first));
  return s;
}

// Where two sweep plans (sweep_plan_json, both read) differ: the first field, both values
// (InputError leaves the middle of a long message out).
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b) {
  const auto text = [](const nlohmann::json* v) { return v ? v->dump() : std::string("none"); };
  for (const auto& [key, value] : a.items()) {
    const nlohmann::json* other = b.contains(key) ? &b.at(key) : nullptr;
    if (!other || *other != value)
      return fmt::format("its \"{}\" is {}, not {}", key, text(&value), text(other));
  }
  return "its plan has other fields";
}

}  // namespace

SweepResult merge_shards(std::span<const ShardFile> files) {
  if (files.empty()) throw InputError("merge", "no shard files given");
  std::vector<ReadShard> read;
  for (const auto& f : files) read.push_back(read_shard(f));
  const ReadShard& first = read.front();
  // By shard index; not a list of `count` slots, which a file may set to 2^31 - 1.
  std::map<int, const ShardFile*> seen;
  std::vector<std::pair<std::size_t, SweepRow>> rows;
  for (std::size_t i = 0; i < read.size(); ++i) {
    const ReadShard& s = read[i];
    const std::string& name = files[i].name;
    if (*s.sweep != *first.sweep)
      throw InputError(name, fmt::format("a shard of another sweep than {}: {}", files[0].name,
                                         first_difference(*s.sweep, *first.sweep)));
    if (s.digest != first.digest)
      throw InputError(name, fmt::format("ran another scenario file than {} (digest {}, not {})",
                                         files[0].name, s.digest, first.digest));
    if (s.shard.count != first.shard.count)
      throw InputError(name,
                       fmt::format("shard {}, but {} is shard {}: one sweep's shards "
                                   "share their count",
                                   shard_text(s.shard), files[0].name, shard_text(first.shard)));
    const ShardFile*& slot = seen[s.shard.index];
    if (slot)
      throw InputError(name, fmt::format("shard {} again: {} is that shard too",
                                         shard_text(s.shard), slot->name));
    slot = &files[i];
    for (auto& r : read[i].rows) rows.push_back(std::move(r));
  }
  const int count = first.shard.count;
  const auto missing = static_cast<std::size_t>(count) - seen.size();
  if (missing > 0) {
    constexpr std::size_t kNamed = 8;  // then "and N more": count may be 2^31 - 1
    std::vector<std::string> named;
    for (int i = 1; i <= count && named.size() < kNamed; ++i)
      if (!seen.contains(i)) named.push_back(fmt::format("{}/{}", i, count));
    const std::string more =
        missing > named.size() ? fmt::format(" and {} more", missing - named.size()) : "";
    throw InputError("merge", fmt::format("shard{} {}{} missing: merge needs all {} shards' files",
                                          missing > 1 ? "s" : "", fmt::join(named, ", "), more,
                                          count));
  }
  return assemble_sweep(sweep_plan_from_json(*first.sweep, files[0].name + ":sweep"),
                        std::move(rows), "merge");
}

SweepResult assemble_sweep(SweepPlan plan, std::vector<std::pair<std::size_t, SweepRow>> rows,
                           const std::string& where) {
  std::vector<std::optional<SweepRow>> at(plan.points());
  for (auto& [k, row] : rows) {
    if (k >= at.size() || at[k])
      throw InputError(where, fmt::format("point {} given twice or out of range", k));
    at[k] = std::move(row);
  }
  std::vector<SweepRow> ordered;
  for (std::size_t k = 0; k < at.size(); ++k) {
    if (!at[k]) throw InputError(where, fmt::format("no row for point {}", k));
    ordered.push_back(std::move(*at[k]));
  }
  return finish_sweep(std::move(plan), std::move(ordered));
}

}  // namespace collsim
