#pragma once
// Fits the machine's cost terms (network/cost_model.h) to nccl-tests logs: each logged
// size is simulated on a topology with what NCCL ran there (NCCL's pick, or the
// algorithm the log forced), under the network model and launch mode it will be used
// with, and the terms are chosen so the simulated times match the measured ones.
//
// The terms describe the machine, not an algorithm: launch_s is its per-collective
// latency and latency_s per link kind its per-hop latency (both as NCCL's ring/Simple
// entry, NCCL's model scaling the other algorithms and protocols from them), and
// efficiency per kind its usable share of the nominal rate. They replace NCCL's
// defaults for the same quantities (nccl/protocol.h), so NCCL's model runs on top.
//
// The time is close to affine in each term for a fixed pick: finite differences at the
// current values give the coefficients, a Huber-weighted least squares of relative
// errors gives the terms, and a second linearisation at the fitted values refines
// them (a launch floor or shared links make the time only piecewise affine). Which
// terms are kept is decided on sizes the fit did not see: fit on every other size,
// predict the rest, keep the set of terms with the lowest held-out error.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "network/cost_model.h"
#include "validate/compare/nccl_tests_log.h"

namespace collsim {

// What `calibrate --nccl-tests` is asked, as the CLI's options and Python's arguments
// give it (by the CLI's option names in errors).
struct NcclCalibrateRequest {
  std::vector<std::string> logs;  // --nccl-tests files
  std::string topology;           // a bundled name, a topology file or inline JSON ('{...}')
  std::string algorithm = "nccl";
  std::string nccl_algo;
  std::string nccl_proto;
  std::string network;
  std::string collective;  // "": from each log
  std::string terms = "launch,latency,efficiency,curve";
  int ranks = 0;  // 0: from each log
  std::filesystem::path base_dir = ".";
};

// Which terms a fit may use.
struct FitTerms {
  bool launch = true, latency = true, efficiency = true, curve = true;
};

struct NcclFitRequest {
  std::vector<NcclTestsLog> logs;
  nlohmann::json topology;               // a bundled name, a file, or an inline topology object
  std::filesystem::path base_dir = ".";  // resolves a topology file
  std::string algorithm = "nccl";        // "nccl" (NCCL's pick per size) or a catalogue name
  std::string nccl_algo;                 // the logs' NCCL_ALGO ("": NCCL chose)
  std::string nccl_proto;                // the logs' NCCL_PROTO ("": NCCL chose)
  std::string network;                   // the network model to fit under ("": the default)
  FitTerms terms;                        // what the user allows (--terms)
};

// "launch,latency,efficiency,curve" (any subset) as FitTerms; `where` names the option.
FitTerms parse_fit_terms(const std::string& list, const std::string& where);

// The fitted values. Per link kind they follow NCCL's proportions: the latency of kind
// k is latency_scale x NCCL's ring/Simple hop latency of k's class, its efficiency
// efficiency x the kind's default usable share (NCCL's for NVLink and for the network,
// else 1). The bandwidth by transfer size (the curve) is the slowest kind's, its nominal
// rate x the curve's share: the kind that bounds the sizes it is read from (across nodes
// the network; NVLink keeps its efficiency).
struct FitValues {
  double launch_s = 0;
  double latency_scale = 0;
  double efficiency = 1;
  std::vector<std::pair<std::int64_t, double>> curve;  // transfer bytes -> share of nominal
  std::vector<std::string> curve_algorithms;           // whose transfers the curve was read from
  int clamped = 0;                                     // sizes whose gap the curve could not close
};

struct FitResidual {
  std::size_t log = 0;  // index into the request's logs
  std::int64_t bytes = 0;
  double measured_s = 0, fitted_s = 0, error_pct = 0;
};

// One set of terms tried: fitted on every other size, MAPE on the sizes left out.
struct TermsTrial {
  FitTerms terms;
  FitValues values;
  double heldout_mape_pct = 0;
};

struct NcclFit {
  std::string topology_name, algorithm, network;
  std::vector<std::string> launches;       // each log's launch mode, described
  std::vector<LinkKind> kinds;             // link kinds the logged collectives' transfers cross
  std::vector<double> default_efficiency;  // per kind in `kinds`: the usable share unfitted
  std::vector<double> nominal_Bps;         // per kind in `kinds`: its slowest link's rate
  std::size_t curve_kind = 0;              // in `kinds`: the one the curve describes
  FitTerms used;     // the terms kept (the trial with the lowest held-out error)
  FitValues values;  // fitted on every size
  CostModel model;
  std::vector<FitResidual> residuals;
  double mape_pct = 0;           // in sample: every size, fitted on every size
  double heldout_mape_pct = 0;   // the kept terms fitted on every other size, on the rest
  double defaults_mape_pct = 0;  // uncalibrated, on every size
  std::vector<TermsTrial> trials;
  std::vector<std::string> notes;     // what the fit decided and why
  std::vector<std::string> warnings;  // where it fits poorly
};

// Throws InputError when the fit predicts its own logs worse than the defaults do.
NcclFit fit_nccl_tests(const NcclFitRequest& request);

// The logs read and checked against the request (each of the collective asked, when
// asked), as a fit request; InputError naming the option otherwise.
NcclFitRequest nccl_fit_request(const NcclCalibrateRequest& request);

// Writes a calibration document to `file` as `calibrate --out` does: whole or not at all,
// two-space JSON, invalid UTF-8 in file names replaced.
void write_calibration_file(const std::filesystem::path& file, const nlohmann::json& doc);

// Today in UTC (YYYY-MM-DD), or SOURCE_DATE_EPOCH's day when set: a rerun then writes
// the same bytes.
std::string calibration_date();

// The calibration file: the cost model's keys (read by read_cost_model), "alpha_s": 0
// (the terms replace α), and "provenance" and "fit" for people. `date` as given,
// so that the same inputs give the same bytes.
nlohmann::json nccl_calibration_json(const NcclFitRequest& request, const NcclFit& fit,
                                     const std::string& date);

// Fitted terms, residuals per size, MAPE in sample, held out and uncalibrated, the
// term sets tried, notes and warnings.
std::string nccl_fit_report(const NcclFitRequest& request, const NcclFit& fit);

}  // namespace collsim
