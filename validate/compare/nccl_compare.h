#pragma once
// A scenario's collective against an nccl-tests log: simulated at every size the log
// measured (same collective, same GPU count, the log's element type), per size and
// as mean absolute percentage errors overall and by size range.
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "validate/compare/nccl_tests_log.h"

namespace collsim {

// The scenario's collective named `name`; with an empty name, its only one.
const CollectiveSpec& pick_collective(const Scenario& s, const std::string& name);

// One size of `base`, shaped like the log's row: bytes, element type, reduction, root.
CollectiveSpec sized_like(const CollectiveSpec& base, const NcclTestsRow& row);

struct SizedRun {
  double time_s = 0;
  double busbw_Bps = 0;
  std::int64_t transfer_bytes = 0;  // the largest transfer between two ranks
  std::string plan;                 // what ran, as planned: "nccl: ring/LL128/16ch", "ring LL"
  std::string algorithm;            // the schedule that ran ("ring", "nvls"): NCCL's pick's
  HeldBy held_by = HeldBy::Nothing;  // what held it past its ops (CollectiveOutcome::held_by)
};

// `c` alone on the scenario's network, planned as `collsim run` plans it.
SizedRun simulate_alone(const Scenario& s, const CollectiveSpec& c);

struct NcclCompareRow {
  std::int64_t bytes = 0;
  double simulated_s = 0, measured_s = 0;
  double error_pct = 0;  // (simulated - measured) / measured
  double simulated_busbw_GBps = 0, measured_busbw_GBps = 0;
  std::string plan;  // what was simulated at this size (NCCL's pick changes with size)
  HeldBy held_by = HeldBy::Nothing;  // what held it past its ops (CollectiveOutcome::held_by)
  double in_place_s = 0;             // the log's in-place time; 0 when it has none
  bool disturbed = false;            // NcclTestsRow::disturbed: the two times disagree
  std::int64_t wrong = 0;            // NcclTestsRow::wrong: nccl-tests' check failed
};

struct SizeRangeError {
  std::string label;
  std::int64_t min_bytes = 0, max_bytes = 0;  // inclusive
  int sizes = 0;
  double mape_pct = 0;
};

struct NcclComparison {
  std::string scenario, collective;
  std::string algorithm;       // as the scenario asks for it ("nccl", "ring", "auto")
  LaunchMode launch;           // as simulated: the scenario's, else the log's
  bool nccl_filtered = false;  // the collective restricts NCCL's algorithms ("nccl_algo")
  bool nccl_proto_filtered = false;  // and its protocols ("nccl_proto")
  CollectiveOp op = CollectiveOp::AllReduce;
  int ranks = 0;
  std::shared_ptr<const NcclTestsLog> log;  // a copy: the comparison outlives the caller's log
  std::vector<NcclCompareRow> rows;  // sizes within the range asked for
  double mape_pct = 0;
  std::vector<SizeRangeError> ranges;  // below 64 KiB, 64 KiB to 4 MiB, above 4 MiB
  // Over the sizes that were not disturbed (their two times agree) and passed nccl-tests'
  // check: how far the model is from what the machine does, without the sizes where the
  // log cannot say.
  int steady_sizes = 0;
  double steady_mape_pct = 0;
  int zero_byte_rows = 0;  // in the range asked for, left out: nothing to time
  std::vector<std::string> calibrations;  // the scenario's (Scenario::calibrations)
  // The log's GPU is not the topology's (device_mismatch): said, and compared all the same.
  std::string device_mismatch;
};

// Size 0 rows (nothing to time) and rows outside [min_bytes, max_bytes] are left out.
// The launch mode is the scenario's when it sets "launch", else the log's (launch_of).
// Throws InputError when the log's collective or GPU count differs from the scenario's.
NcclComparison compare_nccl_log(const Scenario& s, const CollectiveSpec& base,
                                const NcclTestsLog& log, std::int64_t min_bytes,
                                std::int64_t max_bytes);

// What `collsim compare --nccl-tests` and Python's collsim.compare do, in one place: the
// scenario's collective against an nccl-tests log, over a range of sizes.
struct NcclCompareRequest {
  std::string log;         // the log's path
  std::string collective;  // which of the scenario's collectives ("": its only one)
  std::string sizes;       // "MIN:MAX", either side optional ("": every size the log has)
  int ranks = 0;           // the log's GPU count, when the log does not say
};
NcclComparison compare_with_nccl_log(const Scenario& s, const NcclCompareRequest& request);

// Mean of |error_pct| over rows with bytes in [lo, hi].
double mape_between(const std::vector<NcclCompareRow>& rows, std::int64_t lo, std::int64_t hi,
                    int* count = nullptr);

std::string nccl_comparison_table(const NcclComparison& c);
void write_nccl_comparison_csv(std::ostream& out, const NcclComparison& c);
nlohmann::json nccl_comparison_json(const NcclComparison& c);

// "MIN:MAX", either side optional ("1KiB:", ":8GB"); sizes as in scenarios.
std::pair<std::int64_t, std::int64_t> parse_size_range(const std::string& text,
                                                       const std::string& where);

}  // namespace collsim
