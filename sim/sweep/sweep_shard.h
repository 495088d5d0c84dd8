#pragma once
// A sweep split up and put back together: shards for job arrays (`collsim sweep
// --shard i/n`, then `collsim merge`), and the rows MPI ranks send to rank 0.
//
// A shard file stands alone: the sweep's plan, a digest of the scenario file, which
// shard it is and its rows. Merging checks that the files are one sweep's, every
// shard once, each with exactly its points, and hands finish_sweep the rows one
// process would have had, so the reports come out byte for byte the same.
#include <cstdint>
#include <nlohmann/json.hpp>  // ShardFile holds one; included by the sweep command only
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sweep/sweep.h"

namespace collsim {

struct Shard {
  int index = 1;  // 1..count, as Slurm's array task ids --array=1-N
  int count = 1;
};

// "i/n" with 1 <= i <= n; InputError naming --shard otherwise.
Shard parse_shard(const std::string& text);

// Shard i's points of `points`: i-1, i-1+n, i-1+2n, ... Round robin, so every
// shard gets small and large sizes alike and they take about as long.
std::vector<std::size_t> shard_points(std::size_t points, Shard shard);

// "sweep-shard-2-of-8.json"
std::string shard_file_name(Shard shard);

// FNV-1a of a scenario file's bytes, in hex: shards of one sweep ran the same file.
std::string text_digest(std::string_view text);

// Rows with the points they are for ({"point": k, ...}); numbers round-trip exactly.
nlohmann::json rows_json(std::span<const std::size_t> points, std::span<const SweepRow> rows);
// Back, each checked against the plan's point; `where` names the array in errors.
std::vector<std::pair<std::size_t, SweepRow>> rows_from_json(const SweepPlan& plan,
                                                             const nlohmann::json& rows,
                                                             const std::string& where);

// The most points a sweep read back may have (each one a simulation): points() is
// then far from wrapping, and lists sized by it fit in memory.
inline constexpr double kMaxSweepPoints = 1 << 30;

nlohmann::json sweep_plan_json(const SweepPlan& plan);
SweepPlan sweep_plan_from_json(const nlohmann::json& doc, const std::string& where);

// One shard's file: `rows` for shard_points(plan.points(), shard), in that order.
nlohmann::json shard_json(const SweepPlan& plan, const std::string& scenario_digest, Shard shard,
                          std::span<const SweepRow> rows);

// A shard file's text: about 250 bytes a row, so some 250 000 points, parsed into
// nlohmann's tree (several times the text) well within collsim's memory.
inline constexpr std::uintmax_t kMaxShardFileBytes = std::uintmax_t{64} << 20;

struct ShardFile {
  std::string name;  // where it came from, for errors
  nlohmann::json doc;
};

// The whole sweep from every shard's file, in any order. InputError naming the file
// when one is not a shard file, is from another sweep or scenario, repeats a shard,
// or lacks points; or naming the shards that are missing.
SweepResult merge_shards(std::span<const ShardFile> files);

// Rows gathered from wherever they ran, in any order, as one sweep: each point once.
SweepResult assemble_sweep(SweepPlan plan, std::vector<std::pair<std::size_t, SweepRow>> rows,
                           const std::string& where);

}  // namespace collsim
