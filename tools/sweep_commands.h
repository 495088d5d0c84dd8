#pragma once
// `collsim sweep` (on threads, MPI ranks or one shard of a job array) and
// `collsim merge` (shards back into one sweep's reports).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace collsim {

struct SweepArgs {
  std::string scenario;
  std::string collective;
  std::string sizes = "1KiB..1GiB";
  std::string step = "x2";
  std::string algorithms;
  std::string ranks;
  std::string format = "text";
  std::string out_dir;
  int jobs = 1;
  std::string shard;
  std::string measured;  // an nccl-tests log to draw beside the simulated lines
};

struct MergeArgs {
  std::vector<std::string> parts;
  std::string format = "text";
  std::string out_dir;
  std::string measured;
};

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args);
CLI::App* add_merge_command(CLI::App& app, MergeArgs& args);

int sweep_command(const SweepArgs& args);
int merge_command(const MergeArgs& args);

}  // namespace collsim
