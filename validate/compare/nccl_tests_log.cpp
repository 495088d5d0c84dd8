#include "validate/compare/nccl_tests_log.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/json_view.h"
#include "core/utf8.h"
#include "nccl/protocol.h"
#include "topology/topology.h"

namespace collsim {

namespace {

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isdigit(static_cast<unsigned char>(ch));
  });
}

// "12:00:00": a clock time, as moreutils' ts and kubectl print it.
bool is_clock(std::string_view s) {
  return s.size() == 8 && s[2] == ':' && s[5] == ':' && is_digits(s.substr(0, 2)) &&
         is_digits(s.substr(3, 2)) && is_digits(s.substr(6, 2));
}

// "2026-03-05": a date, as nccl-tests -S and ts -s print it.
bool is_date(std::string_view s) {
  return s.size() == 10 && s[4] == '-' && s[7] == '-' && is_digits(s.substr(0, 4)) &&
         is_digits(s.substr(5, 2)) && is_digits(s.substr(8, 2));
}

// The first word of `line` and what follows it, blanks ahead of both skipped.
std::pair<std::string_view, std::string_view> first_word(std::string_view line) {
  const std::size_t start = std::min(line.size(), line.find_first_not_of(" \t"));
  const std::size_t end = std::min(line.size(), line.find_first_of(" \t", start));
  return {line.substr(start, end - start), line.substr(end)};
}

// "Dec 05 22:01:16 " ahead of the line, as moreutils' ts stamps it: what follows it.
std::string_view without_clock_stamp(std::string_view line) {
  const auto [month, after_month] = first_word(line);
  const auto [day, after_day] = first_word(after_month);
  const auto [clock, after_clock] = first_word(after_day);
  if (month.size() == 3 && std::isalpha(static_cast<unsigned char>(month[0])) && is_digits(day) &&
      day.size() <= 2 && is_clock(clock))
    return after_clock;
  return line;
}

// pdsh's or clush's "node01: " ahead of the line. A host's mark is one word of a host name's
// characters ending in ':', and only taken off where what follows is nccl-tests' (a '#' line
// or a row, a clock stamp between): NCCL's own "host:pid:tid" lines keep theirs.
std::string_view without_host_name(std::string_view line) {
  const auto [host, rest] = first_word(line);
  const bool host_chars = host.size() > 1 && std::all_of(host.begin(), host.end() - 1, [](char ch) {
                            const auto c = static_cast<unsigned char>(ch);
                            return std::isalnum(c) || c == '-' || c == '.' || c == '_';
                          });
  const std::string_view next = first_word(without_clock_stamp(rest)).first;
  const bool nccl_tests_line =
      !next.empty() && (next[0] == '#' || std::isdigit(static_cast<unsigned char>(next[0])));
  // A bare number before ':' is srun --label's rank, read below.
  if (host_chars && host.back() == ':' && !is_digits(host.substr(0, host.size() - 1)) &&
      nccl_tests_line)
    return rest;
  return line;
}

// What a tool that runs the command on many hosts, or stamps its lines, puts ahead of each,
// in either order: moreutils' ts ("Dec 05 22:01:16 "), pdsh and clush ("node01: ").
std::string_view without_host_marks(std::string_view line) {
  return without_clock_stamp(without_host_name(without_clock_stamp(line)));
}

}  // namespace

// What launchers put on each line of a rank's output, taken off so that the line reads as
// nccl-tests printed it: kubectl's --timestamps, then Open MPI's --tag-output
// ("[1,0]<stdout>:"), srun --label ("0: "), and rank tags like "[0]" (mpirun's
// -prepend-rank, or a tag written into a line where two ranks' output met). A tag is a
// bracketed count alone: "[0x1a]" and "[0000:02:00]" in a Rank line are device names and
// stay.
std::string without_launcher_marks(std::string_view line) {
  // kubectl logs --timestamps: "2024-05-01T12:00:00.123456789Z " ahead of
  // everything else the container printed, launcher marks included.
  if (const std::size_t t = line.find_first_not_of(" \t");
      t != std::string_view::npos && line.size() > t + 11 && line[t + 4] == '-' &&
      line[t + 7] == '-' && line[t + 10] == 'T' &&
      std::isdigit(static_cast<unsigned char>(line[t]))) {
    const std::size_t end = line.find_first_of(" \t", t);
    line.remove_prefix(end == std::string_view::npos ? line.size() : end);
  }
  line = without_host_marks(line);
  std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos) return std::string(line);
  if (line[i] == '[') {  // "[1,0]<stdout>:" or "[1,0]<stderr>:"
    const std::size_t close = line.find(']', i);
    if (close != std::string_view::npos && (line.substr(close + 1).starts_with("<stdout>:") ||
                                            line.substr(close + 1).starts_with("<stderr>:")))
      line.remove_prefix(close + 10);
  } else {  // "0: " ahead of the line
    std::size_t d = i;
    while (d < line.size() && std::isdigit(static_cast<unsigned char>(line[d]))) ++d;
    if (d > i && d + 1 < line.size() && line[d] == ':' &&
        (line[d + 1] == ' ' || line[d + 1] == '\t'))
      line.remove_prefix(d + 1);
  }
  std::string out(line);
  for (std::size_t open = out.find('['); open != std::string::npos;
       open = out.find('[', open + 1)) {
    std::size_t d = open + 1;
    while (d < out.size() && std::isdigit(static_cast<unsigned char>(out[d]))) ++d;
    if (d > open + 1 && d < out.size() && out[d] == ']')
      out.replace(open, d + 1 - open, std::string(d + 1 - open, ' '));
  }
  return out;
}

namespace {

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// A line copied from a web page is indented with no-break spaces (U+00A0): read as spaces, so
// its rows are not taken for noise and skipped without a word.
std::string with_plain_spaces(std::string_view line) {
  std::string out(line);
  for (std::size_t at = out.find("\xC2\xA0"); at != std::string::npos;
       at = out.find("\xC2\xA0", at))
    out.replace(at, 2, "  ");
  return out;
}

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> to_number(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Reads one file line after another, for errors that name FILE:LINE.
static_assert(kMaxLogBytes < INT_MAX, "a log's lines are counted in an int");
struct Cursor {
  const std::string& file;
  int line = 0;  // of the text; of nccl-tests' JSON output, the result entry's, from 1
  bool json = false;
  std::string where() const {
    return json ? fmt::format("{}:results[{}]", file, line - 1) : fmt::format("{}:{}", file, line);
  }
  [[noreturn]] void fail(const std::string& what) const { throw InputError(where(), what); }
};

// Where row `line` of `log` was: "line 12", or "results[3]" of nccl-tests' JSON output.
std::string row_at(const NcclTestsLog& log, int line) {
  return log.from_json ? fmt::format("results[{}]", line - 1) : fmt::format("line {}", line);
}

// "22602" (NCCL_VERSION_CODE: major*10000 + minor*100 + patch) -> "2.26.2".
std::string version_from_code(std::int64_t code) {
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);  // before 2.9
}

// "2.18.3+cuda12.2": what a version is made of. Versions go into reports and JSON
// (calibration files, compare --format json), so a word of other bytes (invalid
// UTF-8 made nlohmann's dump throw) is not taken for one.
bool is_version(std::string_view word) {
  // A version starts with a digit: "NCCL version not printed" names none.
  const bool digit_first = !word.empty() && std::isdigit(static_cast<unsigned char>(word[0]));
  return digit_first && word.size() <= 64 && std::all_of(word.begin(), word.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return std::isalnum(c) || c == '.' || c == '+' || c == '-' || c == '_';
  });
}

// "# nccl-tests version 2.17.9 nccl-headers=22602 nccl-library=22602", or an
// "NCCL version 2.18.3+cuda12.2" line of NCCL_DEBUG=INFO.
void read_versions(const std::vector<std::string_view>& w, NcclTestsLog& log) {
  for (std::size_t i = 0; i + 2 < w.size(); ++i) {
    if (!is_version(w[i + 2]) || w[i + 1] != "version") continue;
    if (w[i] == "nccl-tests") log.tests_version = std::string(w[i + 2]);
    if (w[i] == "NCCL" && log.nccl_version.empty()) log.nccl_version = std::string(w[i + 2]);
  }
  for (auto word : w)
    if (word.starts_with("nccl-library="))
      if (auto code = to_int(word.substr(13)); code && *code > 0)
        log.nccl_version = version_from_code(*code);
}

// NCCL_ALGO's or NCCL_PROTO's value as NCCL reads it: names, commas, a leading '^' (all but
// these), and per collective "ring;allreduce:tree".
bool is_algo_list(std::string_view word) {
  return !word.empty() && word.size() <= 64 && std::all_of(word.begin(), word.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return std::isalnum(c) || c == ',' || c == '^' || c == '_' || c == ':' || c == ';';
  });
}

// "NCCL INFO NCCL_ALGO set by environment to Ring" (NCCL_DEBUG=INFO) or "NCCL_ALGO=Ring", and
// the same of NCCL_PROTO.
void read_forced_lists(const std::vector<std::string_view>& w, NcclTestsLog& log) {
  for (auto [name, into] : {std::pair{std::string_view("NCCL_ALGO"), &log.nccl_algo},
                            std::pair{std::string_view("NCCL_PROTO"), &log.nccl_proto}})
    for (std::size_t i = 0; i < w.size(); ++i) {
      std::string_view value;
      if (w[i].starts_with(name) && w[i].size() > name.size() && w[i][name.size()] == '=')
        value = w[i].substr(name.size() + 1);
      else if (w[i] == name && i + 5 < w.size() && w[i + 1] == "set" && w[i + 4] == "to")
        value = w[i + 5];
      if (is_algo_list(value)) *into = std::string(value);
    }
}

// "nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) ...", and the line
// nccl-tests prints when the GPUs' memory cannot hold the largest size:
// "Reducing maxBytes to 11453246122 due to memory limitation".
// The word after `key` as an integer in [min, max], or an error naming the line.
std::int64_t count_after(const std::vector<std::string_view>& w, std::size_t i,
                         std::string_view key, std::int64_t min, std::int64_t max,
                         const Cursor& at) {
  const std::string_view word = i + 1 < w.size() ? w[i + 1] : "";
  const auto v = to_int(word);
  if (!v || *v < min || *v > max)
    at.fail(fmt::format("expected a count from {} to {} after \"{}\", got \"{}\"", min, max, key,
                        word));
  return *v;
}

void read_run_line(const std::vector<std::string_view>& w, NcclTestsLog& log, const Cursor& at) {
  if (w.size() >= 4 && w[0] == "Reducing" && w[1] == "maxBytes" && w[2] == "to") {
    log.max_bytes = count_after(w, 2, "Reducing maxBytes to", 0, kMaxBytes, at);
    return;
  }
  // Only the header line nccl-tests prints: a note above it that names "nGpus" in prose
  // (a log's provenance, say) is not read as one.
  if (w.empty() || w[0] != "nThread") return;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::string_view key = w[i];
    if (key == "nThread")
      log.threads = static_cast<int>(count_after(w, i, key, 1, kMaxLogGpus, at));
    if (key == "nGpus")
      log.gpus_per_thread = static_cast<int>(count_after(w, i, key, 1, kMaxLogGpus, at));
    if (key == "minBytes") log.min_bytes = count_after(w, i, key, 0, kMaxBytes, at);
    if (key == "maxBytes") log.max_bytes = count_after(w, i, key, 0, kMaxBytes, at);
    if (key == "graph:")
      log.graph_launches = static_cast<int>(count_after(w, i, key, 0, INT_MAX, at));
  }
  // Each at most kMaxLogGpus (2^20), so the product is exact in 64 bits.
  const std::int64_t gpus = std::int64_t{log.threads} * log.gpus_per_thread;
  if (gpus > kMaxLogGpus)
    at.fail(fmt::format("nThread {} x nGpus {} is {} GPUs in one process; expected at most {}",
                        log.threads, log.gpus_per_thread, gpus, kMaxLogGpus));
}

// The ranks the "#  Rank" lines name, as ranges: "0..1048575" is one entry, not a
// million, and a log of many such lines stays linear (merged as it grows).
class RankSet {
 public:
  void add(std::int64_t first, std::int64_t last) {
    ranges_.emplace_back(first, last);
    if (ranges_.size() >= 2 * merged_ + 64) merge();
  }
  bool empty() const { return ranges_.empty(); }
  // The GPUs the lines name: as many as the highest rank says, where a posted log shows
  // only some of its lines ("Rank 7", "Rank 15" of 16).
  std::int64_t span() {
    const std::int64_t named = count();  // merged: the last range holds the highest rank
    return ranges_.empty() ? 0 : std::max(named, ranges_.back().second + 1);
  }
  std::int64_t count() {
    merge();
    std::int64_t n = 0;
    for (const auto& [first, last] : ranges_) n += last - first + 1;
    return n;
  }

 private:
  // Sorted and disjoint afterwards: at most kMaxLogGpus / 2 ranges remain.
  void merge() {
    std::sort(ranges_.begin(), ranges_.end());
    std::size_t out = 0;
    for (const auto& r : ranges_) {
      if (out > 0 && r.first <= ranges_[out - 1].second + 1)
        ranges_[out - 1].second = std::max(ranges_[out - 1].second, r.second);
      else
        ranges_[out++] = r;
    }
    ranges_.resize(out);
    merged_ = out;
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges_;
  std::size_t merged_ = 0;
};

// The device a Rank line names, after its bus id: "... device  0 [0x1b] NVIDIA H100 80GB HBM3".
std::string device_of_rank_line(const std::vector<std::string_view>& w) {
  const auto bus = std::find_if(w.begin(), w.end(), [](std::string_view word) {
    return word.size() > 2 && word.front() == '[' && word.back() == ']';
  });
  if (bus == w.end() || bus + 1 == w.end()) return "";
  return fmt::format("{}", fmt::join(bus + 1, w.end(), " "));
}

// "#  Rank  3 Group ..." or, abbreviated, "#  Rank  0..7 Group ...".
void read_rank_line(const std::vector<std::string_view>& w, RankSet& ranks, const Cursor& at) {
  const std::string_view r = w.size() > 1 ? w[1] : "";
  std::int64_t first = -1, last = -1;
  if (const auto dots = r.find(".."); dots != std::string_view::npos) {
    first = to_int(r.substr(0, dots)).value_or(-1);
    last = to_int(r.substr(dots + 2)).value_or(-1);
  } else {
    first = last = to_int(r).value_or(-1);
  }
  if (first < 0 || last < first || last >= kMaxLogGpus)
    at.fail(
        fmt::format("expected a rank or a range like 0..7 after \"Rank\" (ranks below {}), "
                    "got \"{}\"",
                    kMaxLogGpus, r));
  ranks.add(first, last);
}

// What the fourth column of a measurement holds: nccl-tests' count of wrong elements
// ("#wrong", printed "%g": 1.04858e+06 past a million), or old nccl-tests' largest error
// ("error", "%.0e": 2e-06). The column headers say which; without them, a count is whole
// or has a decimal point before its exponent.
enum class WrongColumn { Unknown, Count, Error };

// What the column headers (the line naming "busbw") say a row holds. Old logs and posts print
// none; a row's own fields then tell.
struct Columns {
  int line = 0;  // of the headers; 0: not seen
  bool redop = false, root = false;
  // nccl-tests before 2.0 printed "bytes N type op time algbw busbw res", its times in
  // milliseconds (10000000 bytes in 0.286 at 34.98 GB/s); read in microseconds here.
  bool times_in_ms = false;
  WrongColumn wrong = WrongColumn::Unknown;
  // Per-iteration statistics after each measurement (i_min, i_max, i_p99, i_cv%: nccl-tests'
  // per-iteration report), read as numbers and left out.
  bool per_iteration = false;
  std::size_t width() const { return per_iteration ? 8 : 4; }  // fields of one measurement
};

// Reads the column headers, or fails where they name a time that is not the collective's.
void read_column_headers(const std::vector<std::string_view>& h, Columns& columns,
                         const Cursor& at) {
  const auto has = [&h](std::string_view word) {
    return std::find(h.begin(), h.end(), word) != h.end();
  };
  if (has("cputime"))
    at.fail(
        "the log's times are the CPU's (nccl-tests -C 1 prints \"cputime\"): how long the host "
        "took to issue each collective, not how long it ran; rerun without -C");
  columns.line = at.line;
  columns.redop = has("redop") || has("op");
  columns.root = has("root");
  if (has("#wrong")) columns.wrong = WrongColumn::Count;
  if (has("error") || has("res")) columns.wrong = WrongColumn::Error;
  columns.times_in_ms = has("res");
  columns.per_iteration = has("i_min");
}

std::int64_t wrong_count(std::string_view text, double value, WrongColumn column) {
  const bool looks_counted = text.find_first_of("eE") == std::string_view::npos ||
                             text.find('.') != std::string_view::npos;
  if (column == WrongColumn::Error || (column == WrongColumn::Unknown && !looks_counted)) return 0;
  return std::llround(value);
}

// One measurement: time, algbw, busbw, #wrong.
// The in-place columns only tell whether a size was disturbed (their time): their
// bandwidths are not bounded (one GPU's in-place run copies nothing, and nccl-tests prints
// its 0.19 us as 1.4 PB/s).
NcclTestsResult read_result(const std::vector<std::string_view>& w, std::size_t at, const Cursor& c,
                            const char* which, const Columns& columns,
                            bool bound_bandwidth = true) {
  const WrongColumn column = columns.wrong;
  NcclTestsResult r;
  const double time_unit_us = columns.times_in_ms ? 1e3 : 1;
  const char* names[] = {columns.times_in_ms ? "time (ms)" : "time (us)", "algbw (GB/s)",
                         "busbw (GB/s)"};
  const double bandwidth_limit = bound_bandwidth ? kMaxLogBandwidthGBps : INFINITY;
  const double limits[] = {kMaxLogTimeUs / time_unit_us, bandwidth_limit, bandwidth_limit};
  double* fields[] = {&r.time_us, &r.algbw_GBps, &r.busbw_GBps};
  for (int i = 0; i < 3; ++i) {
    const auto v = to_number(w[at + i]);
    if (!v || *v < 0 || *v > limits[i])
      c.fail(fmt::format("expected the {} {} as a number from 0 to {:g}, got \"{}\"", which,
                         names[i], limits[i], w[at + i]));
    *fields[i] = *v;
  }
  r.time_us *= time_unit_us;
  const std::string_view wrong = w[at + 3];
  if (wrong != "N/A") {
    // Only a count says the check failed. Bounded so that it is exact.
    const auto v = to_number(wrong);
    if (!v || *v < 0 || *v > static_cast<double>(kMaxBytes))
      c.fail(fmt::format("expected the {} #wrong as a count, an error or N/A, got \"{}\"", which,
                         wrong));
    r.wrong = wrong_count(wrong, *v, column);
  }
  std::array<double, 4> stats{};  // i_min, i_max, i_p99, i_cv%
  for (std::size_t i = 4; i < columns.width(); ++i) {
    const auto v = to_number(w[at + i]);
    if (!v || *v < 0)
      c.fail(fmt::format("expected the {} per-iteration statistic as a number, got \"{}\"", which,
                         w[at + i]));
    stats[i - 4] = *v;
  }
  // Percentiles of one set of iterations: a row whose fields are not these (a measurement of
  // another column read as them) is refused, not misread.
  if (columns.per_iteration && !(stats[0] <= stats[2] && stats[2] <= stats[1]))
    c.fail(
        fmt::format("expected the {} per-iteration i_min <= i_p99 <= i_max, got {} {} {}: "
                    "not the columns the headers name",
                    which, w[at + 4], w[at + 6], w[at + 5]));
  return r;
}

// A row: size, count, type, the reduction (absent before nccl-tests 2.x printed "none" for
// collectives without one), the root (absent in old logs, except broadcast and reduce's),
// then time, algbw, busbw and #wrong (or old logs' error) out of place and, optionally, in
// place.
// The column headers, where the log prints them, say which of redop and root a row has: a
// row cut short (a root read as a time) is then refused, not misread.
NcclTestsRow read_row(std::vector<std::string_view> w, const Cursor& c, const Columns& columns) {
  // nccl-tests -S prints when each size finished ("2026-03-05 22:01:16") after its columns.
  if (w.size() > 2 && is_date(w[w.size() - 2]) && is_clock(w.back())) w.resize(w.size() - 2);
  const std::size_t width = columns.width();
  if (columns.line > 0) {
    const std::size_t lead = 3 + (columns.redop ? 1 : 0) + (columns.root ? 1 : 0);
    if (w.size() != lead + width && w.size() != lead + 2 * width)
      c.fail(fmt::format(
          "expected {} or {} fields, as the column headers of line {} say (size, count, "
          "type{}{}, then time, algbw, busbw and #wrong{} out of place and optionally in place); "
          "got {}: a row cut short, or a line printed into it",
          lead + width, lead + 2 * width, columns.line, columns.redop ? ", redop" : "",
          columns.root ? ", root" : "", columns.per_iteration ? " and 4 per-iteration figures" : "",
          w.size()));
  }
  const bool has_redop = columns.line > 0 ? columns.redop : w.size() > 3 && !to_number(w[3]);
  const std::size_t rest = w.size() - (has_redop ? 4 : 3);
  const bool has_root = columns.line > 0 ? columns.root : rest == 5 || rest == 9;
  if (columns.line == 0 && (w.size() < 7 || (rest != 4 && rest != 5 && rest != 8 && rest != 9)))
    c.fail(fmt::format(
        "expected a result row of size, count, type, redop and root (either of the last two "
        "absent in old logs), then time, algbw, busbw and #wrong (or error) out of place and "
        "optionally in place; got {} field{}",
        w.size(), w.size() == 1 ? "" : "s"));
  NcclTestsRow row;
  row.line = c.line;
  // looks_like_row checked both are digits; they may not fit in 64 bits.
  row.bytes = to_int(w[0]).value_or(-1);
  row.count = to_int(w[1]).value_or(-1);
  if (row.bytes < 0 || row.bytes > kMaxBytes || row.count < 0 || row.count > kMaxBytes)
    c.fail(fmt::format("expected a size and a count from 0 to 2^50 (1 PiB), got {} and {}", w[0],
                       w[1]));
  row.type = std::string(w[2]);
  const auto dtype = nccl_tests_dtype(row.type);
  if (!dtype)
    c.fail(
        fmt::format("expected an element type (float, half, bfloat16, double, int8, uint8, "
                    "int32, uint32, int64, uint64), got \"{}\"",
                    w[2]));
  // The size is the count's elements, or (all-gather, reduce-scatter, alltoall: a count per
  // rank) a whole multiple of them: 1000 bytes of 256 floats was compared as 1000 bytes.
  const std::int64_t count_bytes = row.count * element_size(*dtype);
  if (count_bytes == 0 ? row.bytes != 0 : row.bytes % count_bytes != 0)
    c.fail(
        fmt::format("{} bytes is not {} {} elements of {} bytes, nor a whole multiple of them "
                    "(a count per rank)",
                    row.bytes, row.count, row.type, element_size(*dtype)));
  std::size_t at = 3;
  row.redop = has_redop ? std::string(w[at++]) : "none";
  row.redop_printed = has_redop;
  if (!std::all_of(row.redop.begin(), row.redop.end(),
                   [](char ch) { return std::isalpha(static_cast<unsigned char>(ch)); }))
    c.fail(fmt::format("expected a reduction (sum, prod, max, min, avg, none), got \"{}\"", w[3]));
  if (has_root) {
    const auto root = to_int(w[at]);
    if (!root || *root < -1 || *root > (1 << 20))
      c.fail(fmt::format("expected a root rank (-1 for none), got \"{}\"", w[at]));
    row.root = static_cast<int>(*root);
    ++at;
  }
  row.out_of_place = read_result(w, at, c, "out-of-place", columns);
  if (w.size() == at + 2 * width)
    row.in_place = read_result(w, at + width, c, "in-place", columns, false);
  return row;
}

// Whether a printed algbw is the `implied` size / time within the printing's rounding: 2%,
// the time's own relative rounding (`time_rounding`), and `slack` GB/s for algbw's decimals.
bool agrees_with_size_over_time(double implied_GBps, double algbw_GBps, double time_rounding,
                                double slack) {
  return std::abs(implied_GBps - algbw_GBps) <= (0.02 + time_rounding) * algbw_GBps + slack;
}

// algbw is size / time for every collective (nccl-tests' getBw). A time column that is not
// the collective's time, or a damaged row, shows as the two disagreeing beyond their
// printed rounding ("%.2f" GB/s; a time of three or more significant digits).
void check_algbw(const NcclTestsRow& row, const Cursor& c, bool times_in_ms) {
  const NcclTestsResult& r = row.out_of_place;
  if (r.time_us <= 0 || r.algbw_GBps < 1) return;  // rounded too coarsely to tell
  const double implied = static_cast<double>(row.bytes) / (r.time_us * 1e3);
  // Milliseconds printed to three decimals are half a microsecond apart.
  const double time_rounding = times_in_ms ? 0.5 / r.time_us : 0;
  if (agrees_with_size_over_time(implied, r.algbw_GBps, time_rounding, 0.01)) return;
  c.fail(
      fmt::format("the out-of-place algbw {:.2f} GB/s is not size / time ({} B in {} us is "
                  "{:.4g} GB/s), as nccl-tests computes it: the time column is not the "
                  "collective's time, or the row is damaged",
                  r.algbw_GBps, row.bytes, r.time_us, implied));
}

// A row starts with two integers; anything else outside the header is noise
// (MPI warnings, NCCL INFO lines) that nccl-tests' output gets interleaved with.
// Digits only, however many: a size too large for 64 bits is still a row, and refused as one
// (a log whose one row held 10^23 bytes read as a log of no rows).
bool looks_like_row(const std::vector<std::string_view>& w) {
  return !w.empty() && is_digits(w[0]) && (w.size() == 1 || is_digits(w[1]));
}

std::optional<CollectiveOp> op_from_file_name(const std::string& file) {
  std::string name = std::filesystem::path(file).filename().string();
  // "All-Gather", "all gather" and "all_gather" alike: "all-gather" once matched "gather".
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) {
    return ch == '-' || ch == ' ' ? '_' : static_cast<char>(std::tolower(ch));
  });
  // Longer names first: "reduce" is inside "all_reduce" and "reduce_scatter".
  const std::pair<const char*, CollectiveOp> patterns[] = {
      {"all_reduce", CollectiveOp::AllReduce},
      {"allreduce", CollectiveOp::AllReduce},
      {"reduce_scatter", CollectiveOp::ReduceScatter},
      {"reducescatter", CollectiveOp::ReduceScatter},
      {"all_gather", CollectiveOp::AllGather},
      {"allgather", CollectiveOp::AllGather},
      {"alltoall", CollectiveOp::AllToAll},
      {"all_to_all", CollectiveOp::AllToAll},
      {"broadcast", CollectiveOp::Broadcast},
      {"sendrecv", CollectiveOp::SendRecv},
      {"scatter", CollectiveOp::Scatter},
      {"gather", CollectiveOp::Gather},
      {"reduce", CollectiveOp::Reduce}};
  for (const auto& [pattern, op] : patterns)
    if (name.find(pattern) != std::string::npos) return op;
  return std::nullopt;
}

// Half the last digit nccl-tests prints bandwidths to ("%.2f"): how far a printed one may be
// from the value it stands for.
constexpr double kHalfDigit = 0.005;

// busbw / algbw is nccl-tests' bus factor (busbw_factor), which for most collectives gives
// K back: top x (K-1)/K. Printed to two decimals, each row only bounds it (the smaller the
// bandwidths, the wider), and so bounds K; every row's bounds must hold, and leave one
// whole K.
std::optional<int> ranks_from_bus_factor(const NcclTestsLog& log) {
  if (busbw_factor(log.op, 2) == busbw_factor(log.op, 3)) return std::nullopt;  // not K's
  const double top = 2 * busbw_factor(log.op, 2);  // the factor as K grows without bound
  const auto k_of = [top](double f) { return f < top ? top / (top - f) : INFINITY; };
  double lo = 1, hi = INFINITY;
  bool bounded = false;
  for (const auto& r : log.rows) {
    const double a = r.out_of_place.algbw_GBps, b = r.out_of_place.busbw_GBps;
    if (a <= kHalfDigit || b <= 0) continue;  // rounded to nothing: says nothing
    lo = std::max(lo, k_of((b - kHalfDigit) / (a + kHalfDigit)));
    hi = std::min(hi, k_of((b + kHalfDigit) / (a - kHalfDigit)));
    bounded = true;
  }
  if (!bounded || lo > hi || hi - lo >= 2) return std::nullopt;
  const double k = std::ceil(lo);
  if (k > hi || k + 1 <= hi || k < 2 || k > kMaxLogGpus) return std::nullopt;
  return static_cast<int>(k);
}

// A test binary run on a line of the log ("./build/all_reduce_perf -b 8 ...", an mpirun
// command line, a shell prompt): a word whose last path part is nccl-tests' name, followed
// by an option or by nothing (a binary named in prose, "compared with all_gather_perf from
// ...", is not run there).
// The test binary a line runs ("all_reduce_perf" of "$ ./build/all_reduce_perf -b 8"), not
// one it names in prose: its last word, or one options follow; empty where none.
std::string_view binary_run(const std::vector<std::string_view>& words) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string_view w = words[i];
    w.remove_prefix(std::min(w.size(), w.rfind('/') + 1));  // npos + 1 == 0
    const bool run = i + 1 == words.size() || words[i + 1].starts_with("-");
    if (run && (w.ends_with("_perf") || w.ends_with("_perf_mpi")) && nccl_tests_op(w)) return w;
  }
  return {};
}

std::optional<CollectiveOp> op_from_command_line(const std::vector<std::string_view>& words) {
  const std::string_view binary = binary_run(words);
  return binary.empty() ? std::nullopt : nccl_tests_op(binary);
}

// Sets where the log's collective came from, and says it in words.
void set_op(NcclTestsLog& log, CollectiveOp op, OpSource from, std::string words) {
  log.op = op;
  log.op_from = from;
  log.op_source = std::move(words);
}

void settle_op(NcclTestsLog& log, std::optional<CollectiveOp> from_header,
               std::optional<CollectiveOp> from_command, const NcclLogHints& hints,
               const std::string& file) {
  if (from_header) {  // the header wins: callers compare it with what they expected
    set_op(log, *from_header, OpSource::Header, "the log's header");
  } else if (hints.op) {  // the user's word over a binary the log's text runs
    set_op(log, *hints.op, OpSource::Given, "given");
  } else if (from_command) {
    set_op(log, *from_command, OpSource::Binary, "the test binary the log names");
  } else if (auto op = op_from_file_name(file)) {
    set_op(log, *op, OpSource::FileName, "the file name");
  } else if (hints.op_otherwise) {
    set_op(log, *hints.op_otherwise, OpSource::Compared,
           "the compared collective (the log does not say)");
  } else {
    throw InputError(file,
                     "cannot tell which collective the log measured: no \"Collective test "
                     "starting\" line and no collective in the file name; name it (--collective)");
  }
}

// The Rank lines name the GPUs (as many as the highest rank, where a post shows only some of
// them); busbw / algbw, which nccl-tests computes from the real count, wins where the two
// disagree and it leaves one count. The user's count only where the log says none.
void settle_ranks(NcclTestsLog& log, RankSet& rank_lines, int hint, int otherwise) {
  const std::optional<int> from_bus = ranks_from_bus_factor(log);
  const std::int64_t from_lines = rank_lines.span();
  if (hint > 0 && !from_bus && from_lines == 0) {
    log.ranks = hint;
    log.ranks_source = "given";
  } else if (from_lines > 0 && (!from_bus || *from_bus == from_lines)) {
    log.ranks = static_cast<int>(from_lines);  // below kMaxLogGpus
    log.ranks_source = log.from_json ? "the log's devices" : "the log's Rank lines";
  } else if (from_bus) {
    log.ranks = *from_bus;
    log.ranks_source = from_lines > 0
                           ? fmt::format("busbw / algbw (the log's Rank lines name {})", from_lines)
                           : "busbw / algbw (the log has no Rank lines)";
  } else if (std::int64_t{log.threads} * log.gpus_per_thread > 1) {
    log.ranks = log.threads * log.gpus_per_thread;  // read_run_line bounded the product
    log.ranks_source = "nThread x nGpus (one process)";
  } else if (otherwise > 0) {
    log.ranks = otherwise;
    log.ranks_source = "the compared collective (the log does not say)";
  } else {
    throw InputError(log.file,
                     "cannot tell how many GPUs ran the test: no \"#  Rank\" lines, and neither "
                     "busbw / algbw nor nThread x nGpus says; give the count (--ranks)");
  }
}

// nccl-tests prints these collectives' count per rank (or per peer), the others' whole.
bool counts_per_rank(CollectiveOp op) {
  return op == CollectiveOp::AllGather || op == CollectiveOp::ReduceScatter ||
         op == CollectiveOp::AllToAll || op == CollectiveOp::Gather || op == CollectiveOp::Scatter;
}

// Where the log does not name its collective, its rows still say much of it: whether it
// reduces (the redop column; send/recv prints an unused "sum"), whether its count is per rank,
// and busbw / algbw (its bus factor on the log's GPUs). What contradicts `log.op`, or "".
std::string rows_contradict(const NcclTestsLog& log) {
  const CollectiveOp op = log.op;
  const std::string_view name = name_of(op);
  for (const NcclTestsRow& r : log.rows) {
    if (r.redop_printed && op != CollectiveOp::SendRecv && (r.redop != "none") != is_reducing(op))
      return fmt::format("{} prints the reduction \"{}\", and {} {}", row_at(log, r.line), r.redop,
                         name, is_reducing(op) ? "reduces" : "does not reduce");
    const std::int64_t whole = r.count * element_size(nccl_tests_dtype(r.type).value());
    if (r.count > 0 && log.ranks > 1 && (r.bytes != whole) != counts_per_rank(op))
      return fmt::format("{} prints a count of {} for {} bytes: a count {}, where {} prints {}",
                         row_at(log, r.line), r.count, r.bytes,
                         r.bytes == whole ? "of the whole" : "per rank", name,
                         counts_per_rank(op) ? "one per rank" : "the whole");
    // The factor on any GPU count, not the log's: a count that does not fit is the GPU
    // count's mismatch, said where it is compared.
    const double a = r.out_of_place.algbw_GBps, b = r.out_of_place.busbw_GBps;
    const double least = busbw_factor(op, 2);
    const double most = least == busbw_factor(op, 3) ? least : 2 * least;  // top x (K-1)/K
    if (a >= 1 && ((b + kHalfDigit) / (a - kHalfDigit) < least - 1e-9 ||
                   (b - kHalfDigit) / (a + kHalfDigit) > most + 1e-9))
      return least == most ? fmt::format("{} has busbw / algbw {:.3f}, where {} has {:.3f}",
                                         row_at(log, r.line), b / a, name, least)
                           : fmt::format(
                                 "{} has busbw / algbw {:.3f}, where {} has from "
                                 "{:.3f} (2 GPUs) to below {:.3f}",
                                 row_at(log, r.line), b / a, name, least, most);
  }
  return "";
}

// Which run of a `-d all`, `-o all` or `-r all` log a row belongs to: "float sum", "int8
// none root 2".
std::string run_of(const NcclTestsRow& row) {
  return row.root >= 0 ? fmt::format("{} {} root {}", row.type, row.redop, row.root)
                       : fmt::format("{} {}", row.type, row.redop);
}

// The rows of one run, in the order nccl-tests prints them. Sizes increase from row to row,
// except that
// - all-gather, reduce-scatter and all-to-all print a size per rank's count: 0 bytes for every
//   small size whose count rounds down to 0, and the same size again where a linear step
//   (-i) is smaller than one element per rank;
// - nccl-tests -N times the whole sweep again, from the smallest size, with no header between.
// Every timing of one size measured the same kernels: the one with the median out-of-place
// time stands for it (the faster of the two middle ones of an even count).
class Sweeps {
 public:
  void add(NcclTestsRow row, NcclTestsLog& log, const Cursor& at) {
    const bool again =
        !log.rows.empty() && row.bytes < last_bytes_ && row.bytes == log.rows.front().bytes;
    if (again) ++sweeps_;
    if (!log.rows.empty() && !again && row.bytes < last_bytes_)
      at.fail(fmt::format(
          "sizes must increase from row to row (one run per log; nccl-tests -N starts again from "
          "the first size, {}): {} follows {} at {}",
          log.rows.front().bytes, row.bytes, last_bytes_, row_at(log, last_line_)));
    repeated_ |= !log.rows.empty() && !again && row.bytes == last_bytes_ && row.bytes > 0;
    last_bytes_ = row.bytes;
    last_line_ = row.line;
    (sweeps_ == 1 ? log.rows : later_).push_back(std::move(row));
  }

  // Every row kept so far, its times multiplied by `factor` (a unit found late).
  void scale_times(NcclTestsLog& log, double factor) {
    for (auto* rows : {&log.rows, &later_})
      for (NcclTestsRow& r : *rows) {
        r.out_of_place.time_us *= factor;
        if (r.in_place) r.in_place->time_us *= factor;
      }
  }

  void settle(NcclTestsLog& log) {
    if (sweeps_ == 1 && !repeated_) return;
    for (const NcclTestsRow& r : later_)
      if (std::none_of(log.rows.begin(), log.rows.end(),
                       [&r](const NcclTestsRow& first) { return first.bytes == r.bytes; }))
        throw InputError(Cursor{log.file, r.line, log.from_json}.where(),
                         fmt::format("the sweep that starts again times {} bytes, which the "
                                     "first sweep did not (one run per log)",
                                     r.bytes));
    std::vector<NcclTestsRow> kept;
    for (NcclTestsRow& r : log.rows) {
      if (r.bytes == 0) {  // sizes that round to nothing: the first sweep's, as printed
        kept.push_back(std::move(r));
        continue;
      }
      if (!kept.empty() && kept.back().bytes == r.bytes) continue;
      std::vector<const NcclTestsRow*> timings;
      for (const auto* rows : {&log.rows, &later_})
        for (const NcclTestsRow& t : *rows)
          if (t.bytes == r.bytes) timings.push_back(&t);
      std::stable_sort(timings.begin(), timings.end(), [](const auto* a, const auto* b) {
        return a->out_of_place.time_us < b->out_of_place.time_us;
      });
      kept.push_back(*timings[(timings.size() - 1) / 2]);
    }
    log.rows = std::move(kept);
    const bool cut_short = later_.size() < static_cast<std::size_t>(sweeps_ - 1) * log.rows.size();
    log.notes.push_back(fmt::format(
        "the log times {}: per size, the timing with the median out-of-place time is compared",
        sweeps_ > 1 ? fmt::format("its sizes in {} sweeps (nccl-tests -N {}{})", sweeps_, sweeps_,
                                  cut_short ? "; the last cut short" : "")
                    : std::string("some sizes more than once (a linear step, -i, smaller than "
                                  "one element per rank)")));
  }

 private:
  int sweeps_ = 1;
  bool repeated_ = false;  // a size printed twice in a row
  std::int64_t last_bytes_ = 0;
  int last_line_ = 0;
  std::vector<NcclTestsRow> later_;  // the rows of the sweeps after the first
};

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
  return h;
}

}  // namespace

LaunchMode launch_of(const NcclTestsLog& log) {
  LaunchMode m;
  m.gpus_per_process = std::max(1, log.gpus_per_thread);
  m.source = log.gpus_per_thread > 0 ? fmt::format("the log's header (nThread {} nGpus {})",
                                                   log.threads, log.gpus_per_thread)
                                     : std::string("default (the log's header does not say)");
  // nccl-tests -G N captures the timed collectives in a CUDA graph and times N replays of it:
  // the host issues one graph, not each GPU's kernel of each collective.
  if (log.graph_launches > 0 && m.gpus_per_process > 1) {
    m.issue_per_gpu = 0;
    m.source = fmt::format(
        "the log's header (nThread {} nGpus {}, graph: {}: CUDA graphs replay the collectives, "
        "with no time to issue each)",
        log.threads, log.gpus_per_thread, log.graph_launches);
  }
  return m;
}

std::optional<CollectiveOp> nccl_tests_op(std::string_view name) {
  if (name.ends_with("_mpi")) name.remove_suffix(4);  // all_reduce_perf_mpi: built with MPI=1
  if (name.ends_with("_perf")) name.remove_suffix(5);
  if (name == "alltoall") return CollectiveOp::AllToAll;
  if (name == "sendrecv") return CollectiveOp::SendRecv;
  // hypercube_perf gathers every rank's block onto every rank (an all-gather) by a
  // hypercube exchange of point-to-point sends.
  if (name == "hypercube") return CollectiveOp::AllGather;
  return collective_from_name(name);
}

namespace {

std::string_view arch_name(nccl_published::Arch a) {
  switch (a) {
    case nccl_published::Arch::Ampere:
      return "an Ampere";
    case nccl_published::Arch::Hopper:
      return "a Hopper";
    case nccl_published::Arch::Blackwell:
      return "a Blackwell";
  }
  return "?";
}

}  // namespace

const GpuModel* gpu_model_of_device(std::string_view device) {
  std::string lower(device);  // as the models are named: "a100"
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  // A whole word: "GB200" is not a "B200" (a Grace-Blackwell superchip, its own NVLink), nor
  // "RTX A1000" an "A100"; "A100-SXM4-80GB" and "H100 80GB" are.
  const auto apart = [&lower](std::size_t i) {
    return i >= lower.size() || !std::isalnum(static_cast<unsigned char>(lower[i]));
  };
  for (const GpuModel& g : kGpuModels)
    for (auto at = lower.find(g.name); at != std::string::npos; at = lower.find(g.name, at + 1))
      if ((at == 0 || apart(at - 1)) && apart(at + g.name.size())) return &g;
  return nullptr;
}

std::string device_mismatch(const NcclTestsLog& log, const Topology& topology) {
  const GpuModel* ran_on = gpu_model_of_device(log.device);
  if (!ran_on || ran_on == topology.gpu || topology.num_ranks() == 0) return "";
  if (topology.gpu)
    return fmt::format("the log ran on {} ({}); the topology's GPUs are {}", log.device,
                       ran_on->name, topology.gpu->name);
  // A topology that names no model (dgx-h100, a cluster without "gpu"): its generation, as
  // NCCL's tables are read for it, from its GPUs' NVLink.
  const auto generation = gpu_arch(topology, topology.gpu_of_rank(0));
  if (generation == ran_on->arch) return "";
  return fmt::format(
      "the log ran on {} ({}, {}); the topology's GPUs are {} by their NVLink "
      "bandwidth",
      log.device, ran_on->name, arch_name(ran_on->arch), arch_name(generation));
}

std::optional<ReduceOp> nccl_tests_reduce_op(std::string_view name) {
  // -o mulsum is NCCL's PreMulSum (a scalar multiplied in, then summed), as which NCCL runs a
  // floating-point avg: the same traffic, and no NVLS for either.
  if (name == "mulsum") return ReduceOp::Avg;
  return reduce_op_from_name(name);
}

std::optional<DType> nccl_tests_dtype(std::string_view name) {
  // Timing depends on the element size only: unsigned and fp8 types borrow a
  // collsim type of their size.
  if (name == "uint32" || name == "int") return DType::I32;  // "int", "char": nccl-tests on NCCL 1
  if (name == "char") return DType::I8;
  if (name == "uint64") return DType::I64;
  if (name == "f8e4m3" || name == "f8e5m2" || name == "fp8_e4m3" || name == "fp8_e5m2")
    return DType::U8;
  return dtype_from_name(name);
}

namespace {

// What a log says, line by line (or, from nccl-tests' JSON output, entry by entry), settled
// into an NcclTestsLog once all of it was read.
// Every word kept from a log (a device name, a version, a note quoting the text, the file
// name itself) as UTF-8: logs are bytes, and every JSON output must hold them. One place,
// not a check beside each field: fuzz_nccl_log found a Rank line's device name with a stray
// byte after such checks had been added field by field.
void make_text_utf8(NcclTestsLog& log) {
  for (std::string* s : {&log.file, &log.op_source, &log.ranks_source, &log.nccl_version,
                         &log.tests_version, &log.nccl_algo, &log.nccl_proto, &log.device})
    *s = valid_utf8(*s);
  for (std::string& note : log.notes) note = valid_utf8(note);
  for (NcclTestsRow& row : log.rows) {
    row.type = valid_utf8(row.type);
    row.redop = valid_utf8(row.redop);
  }
}

class LogReader {
 public:
  LogReader(std::string_view text, const std::string& file) : at_{file} {
    log_.file = file;
    log_.digest = fnv1a(text);
  }
  Cursor& at() { return at_; }
  NcclTestsLog& log() { return log_; }
  // Versions, a forced NCCL_ALGO or NCCL_PROTO, and a test binary run, wherever they appear.
  void words(const std::vector<std::string_view>& w) {
    read_versions(w, log_);
    read_forced_lists(w, log_);
    if (!command_op_) {
      command_op_ = op_from_command_line(w);
      if (binary_run(w).starts_with("hypercube")) note_hypercube();
    }
  }

  // A note for the reader of the comparison, once however often its cause appears.
  void note(std::string text) {
    if (std::find(log_.notes.begin(), log_.notes.end(), text) == log_.notes.end())
      log_.notes.push_back(std::move(text));
  }

  // hypercube_perf, as the log's test (its header, or the binary it runs; not prose naming it).
  void note_hypercube() {
    note(
        "hypercube_perf gathers every rank's block onto every rank by log2(ranks) rounds of "
        "point-to-point exchanges; it is simulated as NCCL's all-gather, which moves the same "
        "bytes by NCCL's own algorithms");
  }
  void ranks(std::int64_t first, std::int64_t last) { rank_lines_.add(first, last); }
  Columns& columns() { return columns_; }

  // A '#' line: `h` its words after the '#'.
  void header(const std::vector<std::string_view>& h, std::string_view line) {
    if (!h.empty() && h[0] == "Rank") {
      read_rank_line(h, rank_lines_, at_);
      if (log_.device.empty()) log_.device = device_of_rank_line(h);
    }
    if (std::find(h.begin(), h.end(), "busbw") != h.end()) {
      read_column_headers(h, columns_, at_);
      if (columns_.times_in_ms)
        note_times_in_ms("its column headers (bytes, N, op, res) are that version's");
    }
    if (h.size() >= 2 && h[0] == "Avg" && h[1] == "bus" && !closed_) {
      closed_ = true;
      closed_at_ = at_.line;
    }
    if (!h.empty() && h[0] == "nThread" && !log_.rows.empty())
      at_.fail(
          fmt::format("a second run's header follows the rows of {} (one run per log): "
                      "split the log",
                      row_at(log_, log_.rows.front().line)));
    read_run_line(h, log_, at_);
    if (line.find("Collective test starting:") != std::string_view::npos) {
      const std::string_view name = h.back();
      if (!log_.rows.empty())
        at_.fail(
            fmt::format("a second test starts after the rows of {} (one run per log): "
                        "split the log",
                        row_at(log_, log_.rows.front().line)));
      header_op_ = nccl_tests_op(name);
      if (name.starts_with("hypercube")) note_hypercube();
      if (!header_op_) at_.fail(fmt::format("expected a collective test name, got \"{}\"", name));
    }
  }

  void row(std::vector<std::string_view> w) {
    // nccl-tests prints its closing lines once, after every sweep (-N too): rows after them
    // are another run appended to the file.
    if (closed_at_ > 0)
      at_.fail(
          fmt::format("a row after the closing lines of line {} (# Avg bus bandwidth): "
                      "another run appended to the log (one run per log): split the log",
                      closed_at_));
    NcclTestsRow row = read_row(std::move(w), at_, columns_);
    if (columns_.line == 0 && !time_unit_known_) settle_time_unit(row);
    if (row.redop == "mulsum")
      note(
          "mulsum (NCCL's PreMulSum) is simulated as avg, which NCCL runs as the same PreMulSum "
          "on floating-point data: the same traffic, and no NVLS for either");
    check_algbw(row, at_, columns_.times_in_ms);
    if (row.bytes > 0 && row.out_of_place.time_us <= 0)
      at_.fail(fmt::format("an out-of-place time of 0 for {} bytes: nothing moves that fast",
                           row.bytes));
    // `-d all`, `-o all` and `-r all` run every element type, reduction or root in turn,
    // each from the smallest size: the first run is read, the others named in a note.
    if (!log_.rows.empty() && run_of(row) != run_of(log_.rows.front())) {
      if (other_runs_.empty() || other_runs_.back() != run_of(row))
        other_runs_.push_back(run_of(row));
      return;
    }
    // Past the bound, rows are only counted (for the message), not kept.
    if (++rows_ > kMaxLogRows) {
      if (!first_extra_row_) first_extra_row_ = at_.line;
      return;
    }
    sweeps_.add(std::move(row), log_, at_);
  }

  void close() { closed_ = true; }
  bool closed() const { return closed_at_ > 0; }

  // A file name is the weakest word on the collective ("results-all-gather-2.txt" holds
  // "gather"): where its rows do not fit it and fit the compared collective, that one.
  void prefer_compared_op_to_file_name(const NcclLogHints& hints) {
    if (log_.op_from != OpSource::FileName || !hints.op_otherwise) return;
    const CollectiveOp named = log_.op;
    if (named == *hints.op_otherwise || rows_contradict(log_).empty()) return;
    log_.op = *hints.op_otherwise;
    if (!rows_contradict(log_).empty()) {
      log_.op = named;
      return;
    }
    set_op(log_, *hints.op_otherwise, OpSource::Compared,
           fmt::format("the compared collective (the file name says {}, which its rows do not "
                       "fit)",
                       name_of(named)));
  }

  // A log without column headers says its time unit only through algbw = size / time: old
  // nccl-tests' milliseconds show as times a thousand times too small for their algbw. The
  // first row whose algbw is printed to two digits tells; the rows before it are rescaled.
  void settle_time_unit(NcclTestsRow& row) {
    const NcclTestsResult& r = row.out_of_place;
    if (row.bytes == 0 || r.time_us <= 0 || r.algbw_GBps < 0.1) return;
    // Either reading within the printing's rounding: algbw's two decimals, and a time in
    // milliseconds printed to three ("%7.3f": 0.015 for 15.49 us, 3% off).
    const double implied_if_us = static_cast<double>(row.bytes) / (r.time_us * 1e3);
    const bool us = agrees_with_size_over_time(implied_if_us, r.algbw_GBps, 0, kHalfDigit);
    const bool ms = agrees_with_size_over_time(implied_if_us / 1e3, r.algbw_GBps,
                                               0.0005 / r.time_us, kHalfDigit);
    if (us == ms) return;  // neither (a row the check refuses) or both: a later row tells
    time_unit_known_ = true;
    if (us) return;
    columns_.times_in_ms = true;
    sweeps_.scale_times(log_, 1e3);
    row.out_of_place.time_us *= 1e3;
    if (row.in_place) row.in_place->time_us *= 1e3;
    note_times_in_ms(
        fmt::format("its algbw is size / time with the times in milliseconds (line "
                    "{}), and it prints no column headers to say",
                    at_.line));
  }

  void note_times_in_ms(const std::string& why) {
    note(fmt::format("times read as milliseconds, as nccl-tests printed them before 2.0: {}", why));
  }

  NcclTestsLog finish(const NcclLogHints& hints) {
    const std::string& file = log_.file;
    if (first_extra_row_)
      throw InputError(
          Cursor{file, first_extra_row_, log_.from_json}.where(),
          fmt::format("{} result rows; a log may have at most {} (nccl-tests prints one per "
                      "size, and each is simulated): split the log or trim its sizes",
                      rows_, kMaxLogRows));
    if (log_.rows.empty())
      throw InputError(file, log_.from_json
                                 ? "no result rows: \"results\" is empty (nccl-tests -J writes "
                                   "one entry per size)"
                                 : "no result rows: expected nccl-tests lines of size, count, "
                                   "type, redop, root, time, algbw, busbw, #wrong (out of place, "
                                   "then in place)");
    // A run stopped early (an MPI abort, a timeout) leaves its last sizes out and no closing
    // lines: said, not compared as if whole.
    if (!closed_ && log_.max_bytes > 0 && log_.rows.back().bytes < log_.max_bytes / 2)
      log_.notes.push_back(fmt::format(
          "the log ends at {} B, short of its header's maxBytes {} B, without nccl-tests' "
          "closing lines (# Avg bus bandwidth): the run may have stopped early",
          log_.rows.back().bytes, log_.max_bytes));
    sweeps_.settle(log_);
    if (!other_runs_.empty())
      log_.notes.push_back(fmt::format(
          "the log holds several runs (-d all, -o all or -r all: element types, reductions or "
          "roots in turn); read: {}, left out: {}",
          run_of(log_.rows.front()), fmt::join(other_runs_, ", ")));
    settle_op(log_, header_op_, command_op_, hints, file);
    settle_ranks(log_, rank_lines_, hints.ranks, hints.ranks_otherwise);
    if (!header_op_) prefer_compared_op_to_file_name(hints);
    if (!header_op_)
      if (const std::string why = rows_contradict(log_); !why.empty())
        throw InputError(
            file, fmt::format("the log does not name its collective (no \"Collective "
                              "test starting\" line), and its rows do not fit {} "
                              "(from {}): {}; name the collective it measured{}",
                              name_of(log_.op), log_.op_source.substr(0, log_.op_source.find(" (")),
                              why, hints.op ? "" : " (--collective)"));
    if (hints.ranks > 0 && log_.ranks != hints.ranks)
      throw InputError("--ranks", fmt::format("{} ran on {} GPUs (from {}), not {}: --ranks gives "
                                              "the count of a log that does not say it",
                                              file, log_.ranks, log_.ranks_source, hints.ranks));
    make_text_utf8(log_);
    return std::move(log_);
  }

 private:
  NcclTestsLog log_;
  Cursor at_;
  std::optional<CollectiveOp> header_op_, command_op_;
  RankSet rank_lines_;
  std::int64_t rows_ = 0;                // rows seen, also past kMaxLogRows
  std::vector<std::string> other_runs_;  // after the first run (-d all, -o all, -r all)
  Columns columns_;
  Sweeps sweeps_;
  bool closed_ = false;  // nccl-tests' closing lines ("# Avg bus bandwidth") were printed
  int closed_at_ = 0;    // the line of "# Avg bus bandwidth"; 0: not printed
  bool time_unit_known_ = false;  // without column headers: a row told microseconds or ms
  int first_extra_row_ = 0;
};

void read_text(std::string_view text, LogReader& reader) {
  Cursor& at = reader.at();
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++at.line;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\0') != std::string_view::npos) at.fail("a NUL byte: not a text log");
    const std::string unmarked = without_launcher_marks(with_plain_spaces(line));
    line = unmarked;
    const auto w = split_words(line);
    reader.words(w);
    if (w.empty()) continue;
    if (w[0].starts_with("#")) {
      std::vector<std::string_view> h(w.begin() + 1, w.end());
      if (w[0].size() > 1) h.insert(h.begin(), w[0].substr(1));  // "#Rank" as well as "# Rank"
      reader.header(h, line);
      continue;
    }
    // A lone number ahead of the rows or after the closing lines is a script's (`nvidia-smi -L
    // | wc -l`, `echo $?`); among them, a row cut short.
    if (w.size() == 1 && (reader.log().rows.empty() || reader.closed())) continue;
    if (looks_like_row(w)) reader.row(w);
  }
}

// One measurement of a JSON result entry ({"time", "alg_bw", "bus_bw", "nwrong"}) as the words
// of a printed row.
void json_measurement(const JsonView& m, std::vector<std::string>& words) {
  if (m.has("cpu_time"))
    m.fail_message(
        "the log's times are the CPU's (nccl-tests -C 1 writes \"cpu_time\"): how long the host "
        "took to issue each collective, not how long it ran; rerun without -C");
  for (const char* key : {"time", "alg_bw", "bus_bw"}) {
    const JsonView value = m[key];
    const double number = value.as_number();
    if (!(number >= 0)) value.fail("a number of at least 0");
    words.push_back(fmt::format("{}", number));
  }
  const JsonView wrong = m["nwrong"];
  words.push_back(wrong.raw().is_null() ? "N/A" : fmt::format("{}", wrong.as_number()));
}

// nccl-tests -J FILE.json: {"args": [...], "env": [...], "nccl_version": 22602, "config":
// {"nthreads", "ngpus", "minimum_bytes", "maximum_bytes", ..., "devices": [{"rank", ...}]},
// "results": [{"size", "count", "type", "redop", "root", "out_of_place": {...}, "in_place":
// {...}}], "average_bus_bandwidth": ...}. Each result entry is read as the row nccl-tests
// prints for it, by the same rules; fields this reader does not use are left alone (the
// format grows with nccl-tests' versions).
void read_json(std::string_view text, LogReader& reader) {
  NcclTestsLog& log = reader.log();
  log.from_json = true;
  reader.at().json = true;
  const nlohmann::json doc = parse_json_text(text, log.file);
  const JsonView root(doc, log.file + ":");
  if (!root.is_object() || !root.has("results"))
    root.fail("nccl-tests' JSON output (-J): an object with \"results\"");
  std::vector<std::string> words;
  const auto read_words = [&] {
    reader.words(std::vector<std::string_view>(words.begin(), words.end()));
  };
  for (const char* list : {"args", "env"})
    if (const auto strings = root.find(list)) {
      words = strings->as_string_list();
      read_words();
    }
  if (const auto code = root.find("nccl_version"); code && !code->raw().is_null())
    if (const std::int64_t v = code->as_int(0, INT_MAX); v > 0)
      log.nccl_version = version_from_code(v);
  if (const auto config = root.find("config")) {
    words = {"nThread", fmt::format("{}", (*config)["nthreads"].as_int(1, kMaxLogGpus)), "nGpus",
             fmt::format("{}", (*config)["ngpus"].as_int(1, kMaxLogGpus))};
    for (auto [key, word] : {std::pair{"minimum_bytes", "minBytes"},
                             {"maximum_bytes", "maxBytes"},
                             {"graph", "graph:"}})
      if (const auto bytes = config->find(key))
        words.insert(words.end(),
                     {word, fmt::format("{}", bytes->as_int(0, kMaxBytes))});  // a count
    reader.header(std::vector<std::string_view>(words.begin(), words.end()), "");
    // One entry per process, its first GPU's (nccl-tests parses the first of each process's
    // Rank lines): the process drives nThread x nGpus ranks from there.
    const std::int64_t per_process = std::int64_t{log.threads} * std::max(1, log.gpus_per_thread);
    if (const auto devices = config->find("devices"))
      for (std::size_t i = 0; i < devices->size(); ++i) {
        const std::int64_t rank = (*devices)[i]["rank"].as_int(0, kMaxLogGpus - per_process);
        reader.ranks(rank, rank + per_process - 1);
      }
  }
  Columns& columns = reader.columns();
  columns = {.line = 1, .redop = true, .root = true, .wrong = WrongColumn::Count};
  const JsonView results = root["results"];
  for (std::size_t i = 0; i < results.size(); ++i) {
    const JsonView r = results[i];
    reader.at().line = static_cast<int>(i) + 1;
    words = {fmt::format("{}", r["size"].as_int(0, kMaxBytes)),
             fmt::format("{}", r["count"].as_int(0, kMaxBytes)), r["type"].as_string(),
             r["redop"].as_string()};
    // The root as printed ("%6i", a string): its padding is not part of it.
    const JsonView root_rank = r["root"];
    words.push_back(root_rank.raw().is_number() ? fmt::format("{}", root_rank.as_int(-1, 1 << 20))
                                                : root_rank.as_string());
    words.back().erase(0, std::min(words.back().size(), words.back().find_first_not_of(' ')));
    json_measurement(r["out_of_place"], words);
    if (const auto in_place = r.find("in_place"); in_place && !in_place->raw().is_null())
      json_measurement(*in_place, words);
    reader.row(std::vector<std::string_view>(words.begin(), words.end()));
  }
  if (root.has("average_bus_bandwidth")) reader.close();
}

}  // namespace

NcclTestsLog parse_nccl_tests_log(std::string_view text, const std::string& file,
                                  const NcclLogHints& hints) {
  LogReader reader(text, file);
  // A byte-order mark ahead of the first line (a log saved by a Windows editor) would hide
  // that line's header.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{')
    read_json(text, reader);
  else
    read_text(text, reader);
  return reader.finish(hints);
}

std::int64_t NcclTestsRow::wrong() const {
  return out_of_place.wrong.value_or(0) + (in_place ? in_place->wrong.value_or(0) : 0);
}

bool NcclTestsRow::disturbed() const {
  if (!in_place) return false;
  const double a = out_of_place.time_us, b = in_place->time_us;
  return a > 0 && b > 0 && std::max(a, b) > kColumnsAgree * std::min(a, b);
}

NcclTestsLog read_nccl_tests_log(const std::string& path, const NcclLogHints& hints) {
  return parse_nccl_tests_log(read_input_file(path, kMaxLogBytes, "an nccl-tests log"), path,
                              hints);
}

}  // namespace collsim
