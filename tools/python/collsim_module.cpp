// `import collsim`: the simulator from Python. Documents cross as JSON text through
// Python's json module, so each call returns exactly what the matching command
// prints with --format json (collsim run, sweep, topo), as dicts and lists.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/error.h"
#include "core/json_view.h"
#include "report/reports.h"
#include "report/workload_report.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "simulate/run_workload.h"
#include "sweep/sweep.h"
#include "topology/summary.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace {

using namespace collsim;

// A scenario as a path (str or os.PathLike) or as a dict: a dict's relative file names
// (a topology file, a calibration) resolve against the working directory.
Scenario scenario_of(const py::object& scenario) {
  if (py::isinstance<py::dict>(scenario)) {
    const std::string text =
        py::module_::import("json").attr("dumps")(scenario).cast<std::string>();
    return parse_scenario(parse_json_text(text, "scenario"), fs::current_path());
  }
  const auto path = py::str(py::module_::import("os").attr("fspath")(scenario)).cast<std::string>();
  return load_scenario(path);
}

py::object to_python(const nlohmann::json& doc) {
  return py::module_::import("json").attr("loads")(doc.dump());
}

py::object run(const py::object& scenario) {
  const Scenario s = scenario_of(scenario);
  nlohmann::json doc;
  {
    py::gil_scoped_release unlocked;  // other Python threads run while this one simulates
    SimulationOptions options;
    options.record_ops = false;  // as `collsim run` without --out: no per-op timeline
    if (!s.workloads.empty()) {
      doc = workload_document(s, run_workloads(s));  // as `collsim run` on a training step
    } else {
      const ScenarioResult result = run_scenario(s, options);
      doc = result_json(s, result, analyse_traffic(s, result));
    }
  }
  return to_python(doc);
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
  return list.cast<std::vector<std::string>>();
}

// Sizes as the CLI's --sizes ("1KiB..1GiB", "1MiB,4MiB") or a list of byte counts.
std::vector<std::int64_t> sizes_of(const py::object& sizes, const std::string& step) {
  if (py::isinstance<py::str>(sizes)) return parse_sizes(sizes.cast<std::string>(), step);
  return sizes.cast<std::vector<std::int64_t>>();
}

py::object sweep(const py::object& scenario, const std::string& collective, const py::object& sizes,
                 const std::string& step, const py::object& algorithms,
                 const std::vector<int>& ranks) {
  const Scenario s = scenario_of(scenario);
  SweepRequest req;
  req.collective = collective;
  req.sizes = sizes_of(sizes, step);
  req.algorithms = names_of(algorithms);
  req.rank_counts = ranks;
  nlohmann::json doc;
  {
    py::gil_scoped_release unlocked;
    doc = sweep_json(run_sweep(s, req));
  }
  return to_python(doc);
}

// A bundled name, a topology or scenario file, JSON text, or a dict of either.
py::object topology(const py::object& spec) {
  std::string arg;
  if (py::isinstance<py::dict>(spec))
    arg = py::module_::import("json").attr("dumps")(spec).cast<std::string>();
  else
    arg = py::str(py::module_::import("os").attr("fspath")(spec)).cast<std::string>();
  return to_python(topology_summary_json(load_topology_argument(arg, fs::current_path())));
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
      py::object error = py::handle(input_error.ptr())(e.what());  // an instance, to fill in
      error.attr("path") = e.where();
      error.attr("message") = e.message();
      PyErr_SetObject(input_error.ptr(), error.ptr());
    }
  });

  m.def("run", &run, py::arg("scenario"),
        "Simulate a scenario (a path or a dict) and return `collsim run --format json`'s "
        "document: per collective its time, bandwidths and hottest links, and totals.");
  m.def("sweep", &sweep, py::arg("scenario"), py::kw_only(), py::arg("collective") = "",
        py::arg("sizes") = py::str("1KiB..1GiB"), py::arg("step") = "x2",
        py::arg("algorithms") = py::none(), py::arg("ranks") = std::vector<int>{},
        "Run one of the scenario's collectives (default: the first) across sizes (\"1KiB..1GiB\" "
        "with step \"x2\", a comma list, or a list of byte counts), algorithms (default: every "
        "applicable one) and rank counts; returns `collsim sweep --format json`'s document.");
  m.def("topology", &topology, py::arg("topology"),
        "Summarise a topology: a bundled name (\"cluster-8x8\"), a topology or scenario file, or "
        "a dict; returns `collsim topo --format json`'s document (bytes/s).");
}
