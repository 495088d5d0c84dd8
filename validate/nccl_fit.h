#pragma once
// Fits the cost model (network/cost_model.h) to nccl-tests logs: each logged size is
// simulated on a topology with the algorithm NCCL ran, and the terms are chosen so
// the simulated times match the measured ones.
//
// Under the ideal model a collective's time is affine in each term: launch once,
// the per-transfer latency once per transfer on the critical path, and 1/efficiency
// multiplying the bandwidth part. Three simulations per size give those
// coefficients; launch, latency and efficiency then come from a least-squares fit of
// relative errors (Huber-weighted, so an odd size does not drag the rest), and a
// bandwidth curve by transfer size closes the gap left at sizes where bandwidth
// matters (the mid-size ramp).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "network/cost_model.h"
#include "validate/nccl_tests_log.h"

namespace collsim {

// Which terms a fit may use.
struct FitTerms {
  bool launch = true, latency = true, efficiency = true, curve = true;
};

struct NcclFitRequest {
  std::vector<NcclTestsLog> logs;
  nlohmann::json topology;               // a bundled name, a file, or an inline topology object
  std::filesystem::path base_dir = ".";  // resolves a topology file
  std::string algorithm = "ring";
  FitTerms terms;  // what the user allows (--terms)
};

// "launch,latency,efficiency,curve" (any subset) as FitTerms; `where` names the option.
FitTerms parse_fit_terms(const std::string& list, const std::string& where);

// The fitted values.
struct FitValues {
  double launch_s = 0;
  double latency_s = 0;
  double efficiency = 1;
  std::vector<std::pair<std::int64_t, double>> curve;  // transfer bytes -> B/s
  int clamped = 0;                                     // sizes whose gap the curve could not close
};

struct FitResidual {
  std::size_t log = 0;  // index into the request's logs
  std::int64_t bytes = 0;
  double measured_s = 0, fitted_s = 0, error_pct = 0;
};

struct AblationRow {
  std::string without;  // the term left out ("" for the full fit, "all" for nominal α-β)
  FitValues values;
  double mape_pct = 0;
};

struct NcclFit {
  std::string topology_name, algorithm;
  std::vector<LinkKind> kinds;  // link kinds the logged collectives' transfers cross
  double nominal_Bps = 0;       // their slowest nominal bandwidth
  FitTerms used;                // the terms the full fit could identify
  FitValues values;
  CostModel model;
  std::vector<FitResidual> residuals;
  double mape_pct = 0;
  std::vector<AblationRow> ablation;
  std::vector<std::string> notes;     // what the fit decided and why
  std::vector<std::string> warnings;  // where it fits poorly
};

NcclFit fit_nccl_tests(const NcclFitRequest& request);

// The calibration file: the cost model's keys (read by read_cost_model), "alpha_s": 0
// (the terms replace α), and "provenance" and "fit" for people. `date` as given,
// so that the same inputs give the same bytes.
nlohmann::json nccl_calibration_json(const NcclFitRequest& request, const NcclFit& fit,
                                     const std::string& date);

// Fitted terms, residuals per size, MAPE, the ablation table, notes and warnings.
std::string nccl_fit_report(const NcclFitRequest& request, const NcclFit& fit);

}  // namespace collsim
