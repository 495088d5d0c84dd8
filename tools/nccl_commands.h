#pragma once
// The nccl-tests side of `collsim compare` and `collsim calibrate`: a log as the
// measured side of a comparison, and a calibration file fitted to logs.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace collsim {

struct NcclCompareArgs {
  std::string log;  // --nccl-tests
  std::string collective;
  std::string sizes;
  std::string format = "text";
  int ranks = 0;
};

struct NcclCalibrateArgs {
  std::vector<std::string> logs;
  std::string topology;
  std::string algorithm = "nccl";
  std::string nccl_algo;
  std::string nccl_proto;
  std::string network;
  std::string collective;
  std::string terms = "launch,latency,efficiency,curve";
};

void add_nccl_compare_options(CLI::App* compare, NcclCompareArgs& args);
void add_nccl_calibrate_options(CLI::App* calibrate, NcclCalibrateArgs& args);

// `calibration` and `out_dir` as compare's own options gave them.
int nccl_compare_command(const std::string& scenario, const std::string& log,
                         const std::string& calibration, const std::string& out_dir,
                         const NcclCompareArgs& args);
// Refuses nccl-tests-only options on a comparison with a measured.json.
void check_no_nccl_compare_options(const CLI::App* compare);

// Refuses --nccl-tests' options on a calibration measured here.
void check_no_nccl_calibrate_options(const CLI::App* calibrate);

// `calibrate` is the subcommand (to refuse its measuring options here); `ranks` counts
// only when given.
int nccl_calibrate_command(const NcclCalibrateArgs& args, const CLI::App* calibrate,
                           const std::string& out, int ranks);

}  // namespace collsim
