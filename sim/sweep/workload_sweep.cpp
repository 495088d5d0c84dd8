#include "sweep/workload_sweep.h"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "core/csv.h"
#include "core/error.h"
#include "core/json_view.h"
#include "core/units.h"
#include "scenario/scenario.h"
#include "simulate/run_workload.h"

namespace collsim {
namespace workload_sweep {

nlohmann::json value_of(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return text;  // "10MB", "ring": strings
  }
}

// The object at a dotted path (created as needed); the first job when it meets a list (a
// scenario's "workload" of several jobs: --set changes the first).
nlohmann::json& at_path(nlohmann::json& doc, const std::string& path) {
  nlohmann::json* at = &doc;
  std::size_t from = 0;
  std::string parent = "the scenario";
  while (true) {
    if (at->is_array() && !at->empty()) at = &(*at)[0];
    const std::size_t dot = path.find('.', from);
    const std::string key = path.substr(from, dot - from);
    // Made where missing: the loader then names a misspelt key as it names any ("did you
    // mean"), where this said the key "is null".
    if (at->is_null()) *at = nlohmann::json::object();
    if (!at->is_object())
      throw InputError("--set", fmt::format("\"{}\": {} is {}, not an object whose \"{}\" could "
                                            "be set (write it out as an object in the scenario)",
                                            path, parent, at->dump(), key));
    parent = fmt::format("\"{}\"", path.substr(0, dot));
    at = &(*at)[key];
    if (dot == std::string::npos) return *at;
    from = dot + 1;
  }
}

// Every (dp, tp, pp) with dp x tp x pp = gpus, tp a power of two up to a node's GPUs.
std::vector<std::array<int, 3>> splits_of(int gpus, int per_node) {
  std::vector<std::array<int, 3>> out;
  for (int tp = 1; tp <= std::min(gpus, per_node); tp *= 2)
    for (int pp = 1; pp * tp <= gpus; ++pp)
      if (gpus % (tp * pp) == 0) out.push_back({gpus / (tp * pp), tp, pp});
  return out;
}

// Activation recomputation from least to most: each trades compute for memory.
constexpr std::array<const char*, 3> kRecompute{"none", "selective", "full"};

// What one point of the sweep runs: its scenario and settings, or why a split is refused
// before it runs.
struct Todo {
  nlohmann::json doc;
  std::vector<std::string> settings;
  std::string refused;
  bool split = false;  // tried with more recomputation when it does not fit
};

// Micro-batches per pipeline for `dp` replicas: Megatron's global batch / (dp x
// micro-batch size), with the scenario's global batch (`batch` micro-batches: its
// micro_batches x dp) and micro-batch size kept; 0 when dp does not divide them.
int micro_batches_for(std::int64_t batch, int dp) {
  return batch % dp == 0 ? static_cast<int>(batch / dp) : 0;
}

// Why a split cannot run its micro-batches; empty when it can.
std::string micro_batch_refusal(std::int64_t batch, int dp, int pp, int micro) {
  if (micro == 0)
    return fmt::format("the global batch of {} micro-batches does not split over dp = {}", batch,
                       dp);
  if (micro < pp)
    return fmt::format("{} micro-batch{} per pipeline cannot fill pp = {} stages", micro,
                       micro == 1 ? "" : "es", pp);
  return {};
}

WorkloadPoint measure(const nlohmann::json& doc, const std::filesystem::path& base) {
  WorkloadPoint p;
  try {
    const Scenario s = parse_scenario(doc, base);
    if (s.workloads.empty()) throw InputError("workload", "the scenario has no workload to sweep");
    const WorkloadRun run = run_workloads(s);
    const JobOutcome& j = run.jobs[0];
    p.step_s = j.step_s;
    p.compute_s = j.compute_s;
    p.exposed_comm_s = j.exposed_comm_s;
    p.idle_s = j.idle_s;
    p.speedup = j.speedup;
    p.scaling_efficiency = j.scaling_efficiency;
    p.mfu = j.mfu;
    p.tokens_per_s_per_gpu = j.tokens_per_s_per_gpu;
    p.gpus = static_cast<int>(j.spec->ranks.size());
    if (j.spec->has_model()) {
      p.memory_bytes = static_cast<double>(j.facts.memory_total());
      p.memory_capacity = static_cast<double>(j.spec->gpu.memory);
      p.fits = j.facts.memory_total() <= j.spec->gpu.memory;
    }
  } catch (const InputError& e) {
    p.error = e.what();
    p.fits = false;
  }
  return p;
}

// A split with the least recomputation, from the scenario's own, that fits (the most
// when none does); its recompute appended to its settings.
WorkloadPoint measure_least_recompute(nlohmann::json doc, const std::filesystem::path& base,
                                      std::vector<std::string> settings) {
  nlohmann::json& par = at_path(doc, "workload.parallelism");
  auto level = std::find(kRecompute.begin(), kRecompute.end(),
                         par.value("recompute", std::string("none")));
  // With flash attention the scores are never stored: selective would keep the same bytes.
  // The job at_path set: the workload, or the first of a list of jobs.
  const nlohmann::json* job = &at_path(doc, "workload");
  if (job->is_array() && !job->empty()) job = &job->front();
  const bool flash = !job->is_object() || job->value("flash_attention", true);
  WorkloadPoint p = measure(doc, base);
  // An unknown level is left as it is, for the parser's message.
  while (p.error.empty() && !p.fits && level != kRecompute.end() && ++level != kRecompute.end()) {
    if (flash && std::string_view(*level) == "selective") continue;
    par["recompute"] = *level;
    p = measure(doc, base);
  }
  p.settings = std::move(settings);
  p.settings.push_back(p.error.empty() ? par.value("recompute", std::string("none")) : "-");
  return p;
}

WorkloadPoint run_todo(Todo& t, const std::filesystem::path& base) {
  if (!t.refused.empty()) {
    WorkloadPoint p;
    p.error = std::move(t.refused);
    p.fits = false;
    p.settings = std::move(t.settings);
    p.settings.push_back("-");
    return p;
  }
  if (t.split) return measure_least_recompute(std::move(t.doc), base, std::move(t.settings));
  WorkloadPoint p = measure(t.doc, base);
  p.settings = std::move(t.settings);
  return p;
}

int gpus_per_node(const nlohmann::json& doc, const std::filesystem::path& base) {
  const Scenario s = parse_scenario(doc, base);
  int most = 1;
  std::vector<int> count;
  for (int r = 0; r < s.topology.num_ranks(); ++r) {
    const int host = s.topology.node(s.topology.gpu_of_rank(r)).host;
    if (host < 0) return s.topology.num_ranks();  // no hosts known: one node
    if (host >= static_cast<int>(count.size())) count.resize(host + 1);
    most = std::max(most, ++count[host]);
  }
  return most;
}

// Every dp x tp x pp of the point's job, with the micro-batches its dp leaves.
void add_splits(std::vector<Todo>& todo, const nlohmann::json& point,
                const std::vector<std::string>& settings, const std::filesystem::path& base) {
  std::optional<Scenario> parsed;
  try {
    parsed = parse_scenario(point, base);
  } catch (const InputError& e) {  // a --set value the scenario refuses: this point alone
    std::vector<std::string> unsplit = settings;
    unsplit.insert(unsplit.end(), {"-", "-", "-", "-"});
    todo.push_back({point, std::move(unsplit), e.what(), true});
    return;
  }
  const Scenario& s = *parsed;
  if (s.workloads.empty()) throw InputError("workload", "the scenario has no workload to sweep");
  const WorkloadSpec& job = s.workloads[0];
  if (!job.has_model()) {
    const char* form =
        job.is_chakra() ? "a Chakra trace" : "of the minimal form (gradients and compute)";
    throw InputError("--splits", fmt::format("splits a model's parallelism; {} is {}: sweep its "
                                             "settings with --set",
                                             job.name, form));
  }
  const Parallelism& own = job.parallelism;
  const std::int64_t batch = std::int64_t{own.micro_batches} * own.dp;
  // Context parallelism is kept: dp x tp x pp is split out of the ranks it leaves.
  const int gpus = static_cast<int>(job.ranks.size()) / own.cp;
  for (const auto& [dp, tp, pp] : splits_of(gpus, gpus_per_node(point, base))) {
    const int micro = micro_batches_for(batch, dp);
    std::string refused = micro_batch_refusal(batch, dp, pp, micro);
    if (dp % own.ep != 0)  // said in its row, not left out (the table once had one row)
      refused = fmt::format(
          "ep = {} does not divide dp = {} (expert parallelism is carved out of data "
          "parallelism)",
          own.ep, dp);
    Todo t{point, settings, std::move(refused), true};
    nlohmann::json& par = at_path(t.doc, "workload.parallelism");
    if (!par.is_object()) par = nlohmann::json::object();
    par.update({{"dp", dp}, {"tp", tp}, {"pp", pp}, {"micro_batches", std::max(micro, 1)}});
    t.settings.insert(t.settings.end(),
                      {std::to_string(dp), std::to_string(tp), std::to_string(pp),
                       micro > 0 ? std::to_string(micro) : "-"});
    todo.push_back(std::move(t));
  }
}

// The scenario's and its first job's names, for titles; empty where it does not parse
// (each point then says why).
void name_sweep(WorkloadSweep& out, const nlohmann::json& doc, const std::filesystem::path& base) {
  try {
    const Scenario s = parse_scenario(doc, base);
    out.scenario = s.name;
    if (!s.workloads.empty()) out.job = s.workloads[0].name;
  } catch (const InputError&) {
  }
}

}  // namespace workload_sweep

WorkloadSweepOptions workload_sweep_options(const std::vector<std::string>& sets, bool splits) {
  WorkloadSweepOptions options;
  // A path inside another's value (or the same path) would have its values overwritten.
  const auto within = [](const std::string& path, const std::string& outer) {
    return path == outer || path.starts_with(outer + ".");
  };
  for (const auto& text : sets) {
    SweepAxis axis = parse_axis(text);
    for (const SweepAxis& earlier : options.axes)
      if (within(axis.path, earlier.path) || within(earlier.path, axis.path))
        throw InputError("--set",
                         axis.path == earlier.path
                             ? fmt::format("\"{}\" is set twice; give all its values in one --set "
                                           "{}=V1,V2",
                                           axis.path, axis.path)
                             : fmt::format("\"{}\" and \"{}\": one sets part of the other; sweep "
                                           "one of them",
                                           earlier.path, axis.path));
    if (splits)
      for (const char* set_by_splits : {"dp", "tp", "pp", "micro_batches"})
        if (within("workload.parallelism." + std::string(set_by_splits), axis.path))
          throw InputError("--set", fmt::format("\"{}\": --splits sets workload.parallelism's "
                                                "dp, tp, pp and micro_batches itself",
                                                axis.path));
    options.axes.push_back(std::move(axis));
  }
  options.splits = splits;
  if (options.axes.empty() && !options.splits)
    throw InputError("--set", "give at least one --set PATH=V1,V2 or --splits");
  return options;
}

namespace {

// The comma after the value that starts at `from`, or the end. A value that starts as JSON's
// string, list or object ("\"ring,tree\"" for NCCL_ALGO's list, [1,2]) runs to where it
// closes, commas inside it its own; it must close, and a comma or the end must follow it.
std::size_t next_separator(const std::string& text, std::size_t from) {
  const auto plain = [&] { return std::min(text.find(',', from), text.size()); };
  if (from == text.size() || std::string_view("\"[{").find(text[from]) == std::string::npos)
    return plain();
  bool quoted = false;
  int depth = 0;
  for (std::size_t i = from; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
    if (quoted || depth > 0) continue;
    if (i + 1 < text.size() && text[i + 1] != ',')
      throw InputError("--set", fmt::format("\"{}\": a comma or the end must follow the JSON "
                                            "value \"{}\"",
                                            text, text.substr(from, i + 1 - from)));
    return i + 1;
  }
  throw InputError("--set", fmt::format("\"{}\": the JSON value from \"{}\" never closes "
                                        "(a \" or a [ or {{ left open)",
                                        text, text.substr(from)));
}

}  // namespace

SweepAxis parse_axis(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError(
        "--set",
        fmt::format("expected PATH=V1,V2,... like workload.bucket=10MB,25MB, got \"{}\"", text));
  try {
    (void)nlohmann::json(text).dump();  // checks the text is UTF-8, as every report needs
  } catch (const nlohmann::json::type_error&) {
    throw InputError("--set", "the setting is not UTF-8 text");
  }
  SweepAxis a;
  a.path = text.substr(0, eq);
  for (std::size_t from = eq + 1; from <= text.size();) {
    const std::size_t comma = next_separator(text, from);
    a.values.push_back(text.substr(from, comma - from));
    if (a.values.back().empty())
      throw InputError("--set", fmt::format("an empty value in \"{}\"", text));
    // As sweep refuses a rank count given twice: its points would run twice.
    if (std::find(a.values.begin(), a.values.end() - 1, a.values.back()) != a.values.end() - 1)
      throw InputError("--set", fmt::format("{} is given twice in \"{}\"", a.values.back(), text));
    from = comma + 1;
  }
  return a;
}

WorkloadSweep sweep_workload(const nlohmann::json& doc, const std::filesystem::path& base_dir,
                             const WorkloadSweepOptions& options) {
  using namespace workload_sweep;
  WorkloadSweep out;
  name_sweep(out, doc, base_dir);
  for (const auto& a : options.axes) out.columns.push_back(a.path);
  if (options.splits)
    out.columns.insert(out.columns.end(), {"dp", "tp", "pp", "micro_batches", "recompute"});
  // The cartesian product of the axes, the last varying fastest: every point's scenario
  // first, so that progress can say how many there are.
  std::vector<Todo> todo;
  std::vector<std::size_t> index(options.axes.size(), 0);
  while (true) {
    nlohmann::json point = doc;
    std::vector<std::string> settings;
    for (std::size_t i = 0; i < index.size(); ++i) {
      at_path(point, options.axes[i].path) = value_of(options.axes[i].values[index[i]]);
      settings.push_back(options.axes[i].values[index[i]]);
    }
    if (options.splits)
      add_splits(todo, point, settings, base_dir);
    else
      todo.push_back({std::move(point), std::move(settings), {}, false});
    std::size_t axis = index.size();
    while (axis > 0 && ++index[axis - 1] == options.axes[axis - 1].values.size()) index[--axis] = 0;
    if (axis == 0) break;
  }
  for (std::size_t i = 0; i < todo.size(); ++i) {
    out.points.push_back(run_todo(todo[i], base_dir));
    if (options.progress) options.progress(i + 1, todo.size());
  }
  // The best does the most work per second: the job's tokens per second where every point
  // counts tokens (points of other GPU counts do other amounts of work in a step: the
  // fastest step of a weak-scaling sweep was its smallest job), else the shortest step.
  const auto ran = [](const WorkloadPoint& p) { return p.error.empty() && p.fits; };
  const bool tokens = std::all_of(out.points.begin(), out.points.end(), [&](const auto& p) {
    return !ran(p) || p.tokens_per_s_per_gpu > 0;
  });
  const auto better = [&](const WorkloadPoint& a, const WorkloadPoint& b) {
    return tokens ? a.tokens_per_s_per_gpu * a.gpus > b.tokens_per_s_per_gpu * b.gpus
                  : a.step_s < b.step_s;
  };
  for (std::size_t i = 0; i < out.points.size(); ++i)
    if (ran(out.points[i]) && (out.best < 0 || better(out.points[i], out.points[out.best])))
      out.best = static_cast<int>(i);
  return out;
}

std::string workload_sweep_table(const WorkloadSweep& s) {
  std::string out;
  std::vector<std::size_t> width;
  for (std::size_t c = 0; c < s.columns.size(); ++c) {
    std::size_t w = s.columns[c].size();
    for (const auto& p : s.points) w = std::max(w, p.settings[c].size());
    width.push_back(w);
    out += fmt::format("{:<{}}  ", s.columns[c], w);
  }
  out += fmt::format("{:>5} {:>10} {:>10} {:>10} {:>10} {:>9} {:>6} {:>6} {:>10} {:>9}\n", "gpus",
                     "step", "compute", "exposed", "idle", "speedup", "eff", "MFU", "tok/s/GPU",
                     "mem/GPU");
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    for (std::size_t c = 0; c < s.columns.size(); ++c)
      out += fmt::format("{:<{}}  ", p.settings[c], width[c]);
    if (!p.error.empty()) {
      out += "refused: " + p.error + "\n";
      continue;
    }
    out += fmt::format(
        "{:>5} {:>10} {:>10} {:>10} {:>10} {:>8.2f}x {:>5.1f}% {:>6} {:>10} {:>9}{}{}\n", p.gpus,
        format_duration(p.step_s), format_duration(p.compute_s), format_duration(p.exposed_comm_s),
        format_duration(p.idle_s), p.speedup, 100 * p.scaling_efficiency,
        // The minimal form has no FLOPs or tokens to count.
        p.mfu > 0 ? fmt::format("{:.1f}%", 100 * p.mfu) : "-",
        p.tokens_per_s_per_gpu > 0 ? fmt::format("{:.0f}", p.tokens_per_s_per_gpu) : "-",
        p.memory_bytes > 0 ? fmt::format("{:.1f} GB", p.memory_bytes / 1e9) : "-",
        p.fits ? "" : " (does not fit)", static_cast<int>(i) == s.best ? "  <- best" : "");
  }
  if (s.best < 0)
    out += s.points.empty() || every_point_refused(s) ? "# every point was refused\n"
                                                      : "# no point fits in the GPU's memory\n";
  return out;
}

bool every_point_refused(const WorkloadSweep& s) {
  return !s.points.empty() && std::all_of(s.points.begin(), s.points.end(),
                                          [](const auto& p) { return !p.error.empty(); });
}

void require_a_point_ran(const WorkloadSweep& s, const WorkloadSweepOptions& options) {
  if (!every_point_refused(s)) return;
  // Named for what made the points: a --splits sweep's refusals were said to be --set's.
  const char* where = !options.splits        ? "--set"
                      : options.axes.empty() ? "--splits"
                                             : "--set/--splits";
  throw InputError(where,
                   "every point of the sweep was refused; the first: " + s.points.front().error);
}

std::string workload_sweep_csv(const WorkloadSweep& s) {
  std::string out;
  for (const auto& c : s.columns) out += csv_field(c) + ",";
  out +=
      "gpus,step_s,compute_s,exposed_comm_s,idle_s,speedup,scaling_efficiency,mfu,"
      "tokens_per_s_per_gpu,memory_bytes,fits,best,error\n";
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    for (const auto& v : p.settings) out += csv_field(v) + ",";
    // A refused point has no figures: empty cells, not zeros a reader would take for some.
    if (!p.error.empty()) {
      out += fmt::format(",,,,,,,,,,,0,{}\n", csv_field(p.error));
      continue;
    }
    out += fmt::format("{},{:.9g},{:.9g},{:.9g},{:.9g},{:.6g},{:.6g},{:.6g},{:.6g},{:.0f},{},{},\n",
                       p.gpus, p.step_s, p.compute_s, p.exposed_comm_s, p.idle_s, p.speedup,
                       p.scaling_efficiency, p.mfu, p.tokens_per_s_per_gpu, p.memory_bytes,
                       p.fits ? 1 : 0, static_cast<int>(i) == s.best ? 1 : 0);
  }
  return out;
}

nlohmann::json workload_sweep_json(const WorkloadSweep& s) {
  nlohmann::json points = nlohmann::json::array();
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    nlohmann::json o;
    for (std::size_t c = 0; c < s.columns.size(); ++c) o["settings"][s.columns[c]] = p.settings[c];
    if (!p.error.empty()) {
      o["error"] = p.error;
    } else {
      o.update({{"gpus", p.gpus},
                {"step_s", p.step_s},
                {"compute_s", p.compute_s},
                {"exposed_comm_s", p.exposed_comm_s},
                {"idle_s", p.idle_s},
                {"speedup", p.speedup},
                {"scaling_efficiency", p.scaling_efficiency},
                {"mfu", p.mfu},
                {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
                {"memory_bytes", p.memory_bytes},
                {"memory_capacity", p.memory_capacity},
                {"fits", p.fits}});
    }
    o["best"] = static_cast<int>(i) == s.best;  // on refused points too: one shape to read
    points.push_back(std::move(o));
  }
  return {{"scenario", s.scenario},
          {"job", s.job},
          {"columns", s.columns},
          {"points", points},
          {"best", s.best < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.best)}};
}

}  // namespace collsim
