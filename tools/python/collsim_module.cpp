// `import collsim`: the simulator from Python. Documents cross as JSON text through
// Python's json module, so each call returns exactly what the matching command
// prints with --format json (collsim run, sweep, topo), as dicts and lists.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/json_view.h"
#include "core/units.h"
#include "plan/plan_report.h"
#include "report/reports.h"
#include "report/run_use_case.h"
#include "scenario/scenario.h"
#include "scenario/schema.h"
#include "simulate/run_scenario.h"
#include "simulate/simulated_plan.h"
#include "sweep/sweep.h"
#include "sweep/workload_sweep.h"
#include "topology/summary.h"
#include "validate/compare/nccl_compare.h"
#include "validate/fit/nccl_fit.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace {

using namespace collsim;

// A path as str, bytes or os.PathLike, as the bytes the file system names it by (os.fsencode:
// a name that is not UTF-8 stays what it was, where decoding it failed in the cast); anything
// else is a TypeError naming the argument.
// `or_dict`: where the argument may also be a dict (its caller took that case first).
std::string path_of(const py::object& value, const char* argument, bool or_dict = false) {
  const py::module_ os = py::module_::import("os");
  if (!py::isinstance<py::str>(value) && !py::isinstance<py::bytes>(value) &&
      !py::hasattr(value, "__fspath__"))
    throw py::type_error(std::string(argument) + ": expected a path (str, bytes or os.PathLike)" +
                         (or_dict ? " or a dict" : "") + ", got " +
                         py::str(py::type::of(value).attr("__name__")).cast<std::string>());
  std::string path = os.attr("fsencode")(os.attr("fspath")(value)).cast<py::bytes>();
  // The file system would read the name up to it, another file: refused as open() refuses it.
  if (path.find('\0') != std::string::npos)
    throw InputError(argument, "a path with a NUL byte (\\x00) in it names no file");
  return path;
}

// Refuses, at its JSON path, the first value under `v` that is not JSON: a NaN or an infinity
// (json.dumps writes them as NaN and Infinity, which no JSON reader takes), a value of
// another type than dict, list, tuple, str, int, float, bool or None (a set), or nesting
// deeper than a JSON file may have (kMaxJsonDepth: a dict holding itself is infinitely deep,
// and took the interpreter down with this function's stack).
void check_json_value(const py::handle& v, const std::string& path, int depth = 0) {
  const bool nests =
      py::isinstance<py::dict>(v) || py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v);
  if (nests && depth >= kMaxJsonDepth)
    throw InputError(path.empty() ? "scenario" : path,
                     fmt::format("nested deeper than {} levels of dicts and lists (a dict or "
                                 "list that holds itself?)",
                                 kMaxJsonDepth));
  if (py::isinstance<py::dict>(v)) {
    for (const auto& [key, item] : py::reinterpret_borrow<py::dict>(v)) {
      const std::string name = py::str(key).cast<std::string>();
      check_json_value(item, path.empty() ? name : path + "." + name, depth + 1);
    }
  } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    std::size_t i = 0;
    for (const auto& item : py::reinterpret_borrow<py::sequence>(v))
      check_json_value(item, fmt::format("{}[{}]", path, i++), depth + 1);
  } else if (py::isinstance<py::float_>(v)) {
    if (const double d = v.cast<double>(); !std::isfinite(d))
      throw InputError(path, fmt::format("expected a finite number, got {}", d));
  } else if (!py::isinstance<py::str>(v) && !py::isinstance<py::int_>(v) && !v.is_none()) {
    throw InputError(path, "expected a JSON value (dict, list, str, number, bool or None), got " +
                               py::str(py::type::of(v).attr("__name__")).cast<std::string>());
  }
}

// An error's place as Python names it: the CLI's options as the keyword arguments that stand
// for them ("--nccl-tests" is nccl_tests=, "--topology/--algorithm" topology/algorithm).
std::string keyword_names(std::string where) {
  for (std::size_t at = where.find("--"); at != std::string::npos; at = where.find("--", at)) {
    where.erase(at, 2);
    for (std::size_t i = at;
         i < where.size() &&
         (std::isalnum(static_cast<unsigned char>(where[i])) || where[i] == '-');
         ++i)
      if (where[i] == '-') where[i] = '_';
  }
  return where;
}

// A dict as JSON text, once check_json_value found every value JSON's.
std::string json_text_of(const py::object& dict) {
  check_json_value(dict, "");
  return py::module_::import("json")
      .attr("dumps")(dict, py::arg("allow_nan") = false)
      .cast<std::string>();
}

// The GPU count an nccl-tests log does not show, as the CLI's --ranks takes it (0: none
// given). A negative count was taken for none.
// Taken as a 64-bit integer: a count past int's range got pybind's "incompatible function
// arguments" instead.
int log_ranks(std::int64_t ranks) {
  if (ranks < 0 || ranks > kMaxLogGpus)
    throw InputError("ranks", fmt::format("expected 1 to {} GPUs (0: what the log says), got {}",
                                          kMaxLogGpus, ranks));
  return static_cast<int>(ranks);
}

// A sweep's GPU counts, each within 1..2^20 (the sweep then holds them to the topology's).
std::vector<int> rank_counts(const std::vector<std::int64_t>& ranks) {
  std::vector<int> out;
  for (std::int64_t n : ranks) {
    if (n < 1 || n > kMaxLogGpus)
      throw InputError("ranks",
                       fmt::format("expected counts from 1 to {} GPUs, got {}", kMaxLogGpus, n));
    out.push_back(static_cast<int>(n));
  }
  return out;
}

// A scenario as a path or as a dict: a dict's relative file names (a topology file, a
// calibration) resolve against the working directory.
Scenario scenario_of(const py::object& scenario) {
  if (py::isinstance<py::dict>(scenario)) {
    const std::string text = json_text_of(scenario);
    return parse_scenario(parse_json_text(text, "scenario"), fs::current_path());
  }
  return load_scenario(path_of(scenario, "scenario", true));
}

// Runs `work` (no Python objects inside) on a thread of its own while this one, without
// the GIL, looks for signals every 100 ms: Ctrl-C stops the work (its own stop token,
// core/interrupt.h: calls on other Python threads go on) and raises KeyboardInterrupt
// here within a fraction of a second, leaving nothing behind.
template <class Work>
auto interruptible(Work&& work) {
  using Result = decltype(work());
  std::optional<Result> result;
  std::exception_ptr failure;
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    const StopScope scope(&stop);
    try {
      result.emplace(work());
    } catch (...) {
      failure = std::current_exception();
    }
    std::lock_guard lock(mutex);
    done = true;
    finished.notify_one();
  });
  bool interrupted = false;
  {
    py::gil_scoped_release unlocked;  // other Python threads run meanwhile
    std::unique_lock lock(mutex);
    while (!finished.wait_for(lock, std::chrono::milliseconds(100), [&] { return done; })) {
      lock.unlock();
      {
        py::gil_scoped_acquire python;
        if (PyErr_CheckSignals() != 0) {  // KeyboardInterrupt (or a handler's error) is set
          interrupted = true;
          stop = true;
        }
      }
      lock.lock();
      if (interrupted) break;
    }
  }
  worker.join();  // the work polls the token: it stops within milliseconds
  if (interrupted) throw py::error_already_set();
  if (failure) std::rethrow_exception(failure);
  return std::move(*result);
}

py::object to_python(const nlohmann::json& doc) {
  return py::module_::import("json").attr("loads")(doc.dump());
}

// `out`: a folder to write what `collsim run --out` writes there (report.html, the
// timeline, result.json, the CSVs); `stream`: as `collsim run --stream`; `symmetry`: as
// `collsim run --symmetry`.
py::object run(const py::object& scenario, const py::object& out, bool stream, bool symmetry) {
  const Scenario s = scenario_of(scenario);
  RunRequest request;
  if (!out.is_none()) request.out = path_of(out, "out");
  request.stream = stream;
  request.fold = symmetry;
  // As `collsim run --format json` writes it, read by Python's json: a run of 100,000
  // collectives is never one nlohmann document.
  const std::string text = interruptible([&] {
    std::ostringstream document;
    write_run_document(document, s, run_use_case(s, request));
    return document.str();
  });
  return py::module_::import("json").attr("loads")(text);
}

// A comma list in a string, or a list of strings.
std::vector<std::string> names_of(const py::object& list) {
  if (list.is_none()) return {};
  std::vector<std::string> out;
  if (py::isinstance<py::str>(list)) {
    const std::string text = list.cast<std::string>();
    for (std::size_t at = 0; at <= text.size();) {
      const std::size_t comma = std::min(text.find(',', at), text.size());
      if (comma > at) out.push_back(text.substr(at, comma - at));
      at = comma + 1;
    }
    return out;
  }
  if (!py::isinstance<py::list>(list) && !py::isinstance<py::tuple>(list))
    throw py::type_error("algorithms: expected a comma list in a str, or a list of str");
  for (const py::handle item : list) {
    if (!py::isinstance<py::str>(item))
      throw py::type_error("algorithms: expected str items, got " +
                           py::str(py::type::of(item).attr("__name__")).cast<std::string>());
    out.push_back(item.cast<std::string>());
  }
  return out;
}

// Sizes as the CLI's --sizes ("1KiB..1GiB", "1MiB,4MiB") or a list of byte counts,
// checked as the CLI checks them (sweep.h: check_sizes).
std::vector<std::int64_t> sizes_of(const py::object& sizes, const std::string& step) {
  if (py::isinstance<py::str>(sizes)) return parse_sizes(sizes.cast<std::string>(), step);
  if (!py::isinstance<py::list>(sizes) && !py::isinstance<py::tuple>(sizes))
    throw py::type_error("sizes: expected a str like \"1KiB..1GiB\" or a list of int byte counts");
  step_factor(step);  // beside a list too, as the CLI checks it
  std::vector<std::int64_t> out;
  for (const py::handle item : sizes) {
    const std::string where = "sizes[" + std::to_string(out.size()) + "]";
    if (!py::isinstance<py::int_>(item) || py::isinstance<py::bool_>(item))
      throw py::type_error(where + ": expected an int byte count, got " +
                           py::str(py::type::of(item).attr("__name__")).cast<std::string>());
    const long long bytes = PyLong_AsLongLong(item.ptr());
    if (bytes == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      throw InputError(where, "expected a size of at most " + std::to_string(kMaxBytes) + " bytes");
    }
    out.push_back(bytes);
  }
  check_sizes(out, "sizes");
  return out;
}

py::object sweep(const py::object& scenario, const std::string& collective, const py::object& sizes,
                 const std::string& step, const py::object& algorithms,
                 const std::vector<std::int64_t>& ranks) {
  const Scenario s = scenario_of(scenario);
  SweepRequest req;
  req.collective = collective;
  req.sizes = sizes_of(sizes, step);
  req.algorithms = names_of(algorithms);
  req.rank_counts = rank_counts(ranks);
  return to_python(interruptible([&] { return sweep_json(run_sweep(s, req)); }));
}

// A training step across settings and splits: `collsim workload-sweep --format json`'s
// document. `set` takes the CLI's --set texts ("workload.bucket=10MB,25MB").
py::object workload_sweep(const py::object& scenario, const std::vector<std::string>& set,
                          bool splits) {
  nlohmann::json doc;
  fs::path base = fs::current_path();
  if (py::isinstance<py::dict>(scenario)) {
    doc = parse_json_text(json_text_of(scenario), "scenario");
  } else {
    const std::string file = path_of(scenario, "scenario", true);
    doc = read_json_file(file, file);
    base = fs::path(file).parent_path();
  }
  const WorkloadSweepOptions options = workload_sweep_options(set, splits);
  return to_python(interruptible([&] {
    const WorkloadSweep sweep = sweep_workload(doc, base, options);
    require_a_point_ran(sweep, options);  // as the CLI: a sweep of refusals is bad input
    return workload_sweep_json(sweep);
  }));
}

// Every choice settled, per collective: `collsim plan --format json`'s document.
py::object plan(const py::object& scenario) {
  const Scenario s = scenario_of(scenario);
  require_collectives(s);
  return to_python(interruptible([&] { return plan_json(s, plan_as_run(s)); }));
}

// The scenario's collective against an nccl-tests log (`collsim compare --nccl-tests
// --format json`'s document); `calibration` (a path) is applied to the scenario first.
py::object compare(const py::object& scenario, const py::object& nccl_tests,
                   const std::string& collective, const std::string& sizes, std::int64_t ranks,
                   const py::object& calibration) {
  Scenario s = scenario_of(scenario);
  if (!calibration.is_none()) {
    const std::string file = path_of(calibration, "calibration");
    apply_calibration(s, read_json_file(file, "calibration"), file);
  }
  const NcclCompareRequest request{.log = path_of(nccl_tests, "nccl_tests"),
                                   .collective = collective,
                                   .sizes = sizes,
                                   .ranks = log_ranks(ranks)};
  return to_python(
      interruptible([&] { return nccl_comparison_json(compare_with_nccl_log(s, request)); }));
}

// A machine fitted to its nccl-tests logs: the calibration `collsim calibrate
// --nccl-tests LOGS --out FILE` writes, as a dict (its "fit" holds the MAPE in sample,
// held out and uncalibrated, and the residuals); written to `out` too when given.
py::object calibrate(const py::object& nccl_tests, const py::object& topology,
                     const std::string& algorithm, const std::string& nccl_algo,
                     const std::string& nccl_proto, const std::string& network,
                     const std::string& collective, const std::string& terms, std::int64_t ranks,
                     const py::object& out) {
  NcclCalibrateRequest request{.logs = {},
                               .topology = {},
                               .algorithm = algorithm,
                               .nccl_algo = nccl_algo,
                               .nccl_proto = nccl_proto,
                               .network = network,
                               .collective = collective,
                               .terms = terms,
                               .ranks = log_ranks(ranks),
                               .base_dir = fs::current_path()};
  if (py::isinstance<py::list>(nccl_tests) || py::isinstance<py::tuple>(nccl_tests)) {
    for (const py::handle log : nccl_tests)
      request.logs.push_back(path_of(py::reinterpret_borrow<py::object>(log), "nccl_tests"));
  } else {
    request.logs.push_back(path_of(nccl_tests, "nccl_tests"));
  }
  request.topology = py::isinstance<py::dict>(topology) ? json_text_of(topology)
                                                        : path_of(topology, "topology", true);
  const nlohmann::json doc = interruptible([&] {
    const NcclFitRequest req = nccl_fit_request(request);
    return nccl_calibration_json(req, fit_nccl_tests(req), calibration_date());
  });
  if (!out.is_none()) write_calibration_file(path_of(out, "out"), doc);
  return to_python(doc);
}

// A bundled name, a topology or scenario file, JSON text, or a dict of either.
py::object topology(const py::object& spec) {
  const std::string arg =
      py::isinstance<py::dict>(spec) ? json_text_of(spec) : path_of(spec, "topology", true);
  return to_python(topology_summary_json(load_topology_argument(arg, fs::current_path())));
}

// `collsim schema [scenario|topology]`'s document.
py::object schema(const std::string& which) {
  if (which != "scenario" && which != "topology")
    throw py::value_error("schema: \"scenario\" or \"topology\", not \"" + which + "\"");
  return py::module_::import("json").attr("loads")(which == "topology" ? topology_schema()
                                                                       : scenario_schema_whole());
}

}  // namespace

PYBIND11_MODULE(collsim, m) {
  m.doc() =
      "collsim: a discrete-event simulator of collective communication on GPU clusters.\n"
      "run(), sweep() and topology() return what `collsim run|sweep|topo --format json` prints.";
  m.attr("__version__") = COLLSIM_VERSION;

  // A bad scenario: ValueError's subclass, with the JSON path apart from the message.
  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      // Decoded as file names are: a path that is not UTF-8 (a missing "none\xff.json")
      // raised UnicodeDecodeError instead of the error.
      const py::module_ os = py::module_::import("os");
      const auto text = [&](const std::string& s) { return os.attr("fsdecode")(py::bytes(s)); };
      const InputError named(keyword_names(e.where()), e.message());
      py::object error = py::handle(input_error.ptr())(text(named.what()));  // to fill in
      error.attr("path") = text(named.where());
      error.attr("message") = text(named.message());
      PyErr_SetObject(input_error.ptr(), error.ptr());
    }
  });

  m.def("run", &run, py::arg("scenario"), py::kw_only(), py::arg("out") = py::none(),
        py::arg("stream") = false, py::arg("symmetry") = false,
        "Simulate a scenario (a path or a dict) and return `collsim run --format json`'s "
        "document: per collective its time, bandwidths and hottest links, and totals. With "
        "out=DIR, also write there what `collsim run --out DIR` writes (report.html, "
        "timeline.json, result.json, the CSVs); stream=True: as `collsim run --stream`, "
        "no schedule held whole; symmetry=True: as `collsim run --symmetry`, a collective whose "
        "ranks are alike timed by one rank's ops, a training step by its first replicas.");
  m.def("sweep", &sweep, py::arg("scenario"), py::kw_only(), py::arg("collective") = "",
        py::arg("sizes") = py::str("1KiB..1GiB"), py::arg("step") = "x2",
        py::arg("algorithms") = py::none(), py::arg("ranks") = std::vector<int>{},
        "Run one of the scenario's collectives (default: the first) across sizes (\"1KiB..1GiB\" "
        "with step \"x2\", a comma list, or a list of byte counts), algorithms (default: every "
        "applicable one) and rank counts; returns `collsim sweep --format json`'s document.");
  m.def("workload_sweep", &workload_sweep, py::arg("scenario"), py::kw_only(),
        py::arg("set") = std::vector<std::string>{}, py::arg("splits") = false,
        "Run the scenario's training step across settings (set=[\"workload.bucket=10MB,25MB\"]) "
        "and/or every parallel split (splits=True); returns `collsim workload-sweep --format "
        "json`'s document, whose \"points\" are one dict per point and \"best\" the fastest "
        "that fits.");
  m.def("plan", &plan, py::arg("scenario"),
        "Every choice settled per collective (algorithm, protocol, channels, segments, and "
        "NCCL's pick where asked); returns `collsim plan --format json`'s document.");
  m.def("compare", &compare, py::arg("scenario"), py::kw_only(), py::arg("nccl_tests"),
        py::arg("collective") = "", py::arg("sizes") = "", py::arg("ranks") = 0,
        py::arg("calibration") = py::none(),
        "Simulate one of the scenario's collectives at every size of an nccl-tests log and "
        "compare; returns `collsim compare --nccl-tests LOG --format json`'s document, whose "
        "\"rows\" are one flat dict per size (pandas.DataFrame(doc[\"rows\"])).");
  m.def("calibrate", &calibrate, py::arg("nccl_tests"), py::kw_only(), py::arg("topology"),
        py::arg("algorithm") = "nccl", py::arg("nccl_algo") = "", py::arg("nccl_proto") = "",
        py::arg("network") = "", py::arg("collective") = "",
        py::arg("terms") = "launch,latency,efficiency,curve", py::arg("ranks") = 0,
        py::arg("out") = py::none(),
        "Fit the machine's cost terms to nccl-tests logs (a path or a list of paths) run on "
        "`topology` (a bundled name, a file, or a dict); returns the calibration `collsim "
        "calibrate --nccl-tests LOGS --topology T --out FILE` writes, and writes it to `out` "
        "when given. Use it with compare(..., calibration=FILE) or a scenario's "
        "\"network\": {\"calibration\": FILE}.");
  m.def("schema", &schema, py::arg("which") = "scenario",
        "The JSON Schema of scenario (or \"topology\") files: `collsim schema`'s, with the "
        "topology schema it refers to inside it, so that one document validates a scenario "
        "dict (jsonschema.validate(doc, collsim.schema())) before running it.");
  m.def("topology", &topology, py::arg("topology"),
        "Summarise a topology: a bundled name (\"cluster-8x8\"), a topology or scenario file, or "
        "a dict; returns `collsim topo --format json`'s document (bytes/s).");
}
