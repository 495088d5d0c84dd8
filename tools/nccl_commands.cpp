#include "nccl_commands.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_view.h"
#include "report/output_dir.h"
#include "scenario/scenario.h"
#include "validate/compare/nccl_compare.h"
#include "validate/fit/nccl_fit.h"

namespace collsim {
namespace {

// A calibration file is a cost model and its provenance: kilobytes, or a few MiB with
// every sample of a long calibration.
constexpr std::uintmax_t kMaxCalibrationBytes = std::uintmax_t{64} << 20;

// A report as JSON text. File names come from the command line and may be any bytes:
// invalid UTF-8 is replaced (U+FFFD), where nlohmann's dump would throw.
std::string json_text(const nlohmann::json& doc) {
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

void refuse_given(const CLI::App* app, std::initializer_list<const char*> options,
                  const std::string& why) {
  for (const char* o : options)
    if (app->count(o)) throw InputError(o, why);
}

}  // namespace

void add_nccl_compare_options(CLI::App* compare, NcclCompareArgs& args) {
  compare->add_option("--nccl-tests", args.log,
                      "Compare with this nccl-tests log (all_reduce_perf and the like) instead "
                      "of a measured.json");
  compare->add_option(
      "--collective", args.collective,
      "nccl-tests log: which of the scenario's collectives (default: its only one)");
  compare->add_option(
      "--sizes", args.sizes,
      "nccl-tests log: only sizes in MIN:MAX, like 1KiB:8GB (either side optional)");
  compare->add_option("--format", args.format, "nccl-tests log: output on stdout")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->capture_default_str();
  compare
      ->add_option("--ranks", args.ranks,
                   "nccl-tests log: its GPU count, when the log does not say")
      ->check(CLI::Range(std::int64_t{1}, kMaxLogGpus));
}

void add_nccl_calibrate_options(CLI::App* calibrate, NcclCalibrateArgs& args) {
  calibrate
      ->add_option("--nccl-tests", args.logs,
                   "Fit the cost model to these nccl-tests logs instead of measuring here")
      ->expected(1, 1 << 16);
  calibrate->add_option("--topology", args.topology,
                        "--nccl-tests: the machine the logs ran on (bundled name or file)");
  calibrate
      ->add_option("--algorithm", args.algorithm,
                   "--nccl-tests: what the logs ran: nccl (NCCL's choice at each size), or a "
                   "collsim algorithm that stands for it")
      ->capture_default_str();
  calibrate->add_option("--nccl-algo", args.nccl_algo,
                        "--nccl-tests: the NCCL_ALGO the logs were run with (ring, tree, nvls, "
                        "...), when they forced one");
  calibrate->add_option("--nccl-proto", args.nccl_proto,
                        "--nccl-tests: the NCCL_PROTO the logs were run with (simple, ^ll128, "
                        "...), when they forced one");
  calibrate->add_option("--network", args.network,
                        "--nccl-tests: the network model to fit under (default: the scenario "
                        "default); a calibration is used under this model only");
  calibrate->add_option("--collective", args.collective,
                        "--nccl-tests: the collective, when a log does not say");
  calibrate
      ->add_option("--terms", args.terms,
                   "--nccl-tests: the cost terms the fit may use (leave out curve for a file "
                   "that carries over to other machines: it holds absolute bandwidths)")
      ->capture_default_str();
}

void check_no_nccl_compare_options(const CLI::App* compare) {
  refuse_given(compare, {"--collective", "--sizes", "--format", "--ranks"},
               "only with --nccl-tests LOG (--measured measured.json compares every "
               "collective, per step and per op)");
}

void check_no_nccl_calibrate_options(const CLI::App* calibrate) {
  refuse_given(calibrate,
               {"--topology", "--algorithm", "--nccl-algo", "--nccl-proto", "--network",
                "--collective", "--terms"},
               "only with --nccl-tests (a calibration measured here fits alpha and beta)");
}

int nccl_compare_command(const std::string& scenario_file, const std::string& log_file,
                         const std::string& calibration, const std::string& out_dir,
                         const NcclCompareArgs& args) {
  Scenario scenario = load_scenario(scenario_file);
  if (!calibration.empty())
    apply_calibration(
        scenario,
        parse_json_text(read_input_file(calibration, kMaxCalibrationBytes, "a calibration file"),
                        calibration),
        calibration);
  const NcclComparison c = compare_with_nccl_log(
      scenario,
      {.log = log_file, .collective = args.collective, .sizes = args.sizes, .ranks = args.ranks});
  if (!out_dir.empty()) {
    OutputDir out(out_dir);
    write_nccl_comparison_csv(out.open("compare.csv"), c);
    out.open("compare.json") << json_text(nccl_comparison_json(c)) << "\n";
    out.commit();
  }
  if (args.format == "json")
    std::cout << json_text(nccl_comparison_json(c)) << "\n";
  else if (args.format == "csv")
    write_nccl_comparison_csv(std::cout, c);
  else
    std::cout << nccl_comparison_table(c);
  return 0;
}

int nccl_calibrate_command(const NcclCalibrateArgs& args, const CLI::App* calibrate,
                           const std::string& out, int ranks) {
  refuse_given(calibrate,
               {"--backend", "--iters", "--warmup", "--rounds", "--quantile", "--timeout",
                "--sizes", "--step"},
               "measures on this machine: not with --nccl-tests");
  const NcclFitRequest req = nccl_fit_request({.logs = args.logs,
                                               .topology = args.topology,
                                               .algorithm = args.algorithm,
                                               .nccl_algo = args.nccl_algo,
                                               .nccl_proto = args.nccl_proto,
                                               .network = args.network,
                                               .collective = args.collective,
                                               .terms = args.terms,
                                               .ranks = calibrate->count("--ranks") ? ranks : 0,
                                               .base_dir = std::filesystem::current_path()});
  const NcclFit fit = fit_nccl_tests(req);
  write_calibration_file(out, nccl_calibration_json(req, fit, calibration_date()));
  std::cout << nccl_fit_report(req, fit) << "# wrote " << out << "\n";
  return 0;
}

}  // namespace collsim
