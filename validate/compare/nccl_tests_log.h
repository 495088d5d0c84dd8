#pragma once
// nccl-tests output, read exactly as the tools print it (or as nccl-tests -J writes it, in
// JSON: the same header and rows as named fields): the `#` header (nThread,
// nGpus, minBytes, maxBytes, one `#  Rank ...` line per GPU), then one row per size
// (size, count, type, redop, root, then time, algbw, busbw, #wrong out of place and,
// except for some all-to-all builds, the same in place). Lines that are neither
// (MPI warnings, NCCL INFO lines) are skipped; a row that starts like one but is not
// is an error naming file:line.
//
// Every number is range-checked as it is read (no negative, NaN or infinite time,
// no size above 1 PiB, no GPU count past kMaxLogGpus), and the work a log implies
// is bounded before it is done: at most kMaxLogBytes of text, at most kMaxLogRows
// rows (each row is one simulation when compared or fitted).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/input_file.h"
#include "core/units.h"
#include "network/cost_model.h"
#include "schedule/collective.h"
#include "topology/gpu_model.h"

namespace collsim {

class Topology;

// What a log may hold. nccl-tests prints one row per size, and even a linear sweep
// (-i) of a few hundred sizes stays far below the row bound; the text bound leaves
// room for NCCL_DEBUG=INFO lines of many ranks interleaved with the rows.
inline constexpr std::int64_t kMaxLogRows = 1024;
inline constexpr std::uintmax_t kMaxLogBytes = std::uintmax_t{256} << 20;  // 256 MiB
inline constexpr std::int64_t kMaxLogGpus = std::int64_t{1} << 20;         // as --ranks
// A row's time in microseconds, and its algbw and busbw in GB/s, as nccl-tests prints
// them, within the bounds of a scenario's durations and bandwidths (core/units.h).
inline constexpr double kMaxLogTimeUs = kMaxDuration * 1e6;
inline constexpr double kMaxLogBandwidthGBps = kMaxBandwidth / 1e9;

struct NcclTestsResult {
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::optional<std::int64_t> wrong;  // empty: printed "N/A" (run without checking)
};

// nccl-tests times every size twice, out of place and in place: the same kernels on the
// same data (in place only skips the copy of a rank's own chunk, where there is one). A
// size whose two times differ by more than this factor was disturbed (a first size still
// warming up, a neighbour on the machine): neither time stands for the collective. In the
// published logs in data/nccl-tests undisturbed sizes agree within 1.23x (2 x 8, 512 B).
inline constexpr double kColumnsAgree = 1.25;

struct NcclTestsRow {
  int line = 0;  // 1-based, in the file
  std::int64_t bytes = 0;
  std::int64_t count = 0;
  std::string type;   // as printed: "float", "half", "bfloat16", ...
  std::string redop;  // "sum", ..., "none" for collectives that do not reduce
  bool redop_printed = true;  // false: an old log without the column ("none" above)
  int root = -1;
  NcclTestsResult out_of_place;
  std::optional<NcclTestsResult> in_place;

  // Both columns timed, and further apart than kColumnsAgree.
  bool disturbed() const;
  // Elements nccl-tests found wrong at this size, both columns (old logs print an error
  // magnitude instead, counted as none): a run that failed its check times a broken run.
  std::int64_t wrong() const;
};

// Where a log's collective came from, strongest first (settle_op's order).
enum class OpSource { Header, Given, Binary, FileName, Compared };

struct NcclTestsLog {
  std::string file;  // as given, for messages
  CollectiveOp op = CollectiveOp::AllReduce;
  OpSource op_from = OpSource::Header;
  std::string op_source;  // op_from in words, for messages: "the log's header", "the file name"
  int threads = 0, gpus_per_thread = 0;  // the header's nThread and nGpus (0: absent)
  int graph_launches = 0;  // the header's "graph:" (-G N): the timed loop replays CUDA graphs
  std::int64_t min_bytes = 0, max_bytes = 0;
  int ranks = 0;              // GPUs that took part
  std::string ranks_source;   // how `ranks` was found
  std::string nccl_version;   // "2.26.2" when the log says; else empty
  std::string tests_version;  // nccl-tests' own version when printed
  // The NCCL_ALGO the run was forced to, when the log prints it (NCCL_DEBUG=INFO's "NCCL_ALGO
  // set by environment to Ring", or an "NCCL_ALGO=Ring" line); empty: NCCL chose.
  std::string nccl_algo;
  std::string nccl_proto;          // the same of NCCL_PROTO ("Simple", "^LL128"); empty: NCCL chose
  // The GPU the first Rank line names ("NVIDIA H100 80GB HBM3"); empty where none does.
  std::string device;
  std::uint64_t digest = 0;        // FNV-1a of the text: which log, byte for byte
  bool from_json = false;          // nccl-tests' JSON output (-J), not its printed table
  std::vector<NcclTestsRow> rows;  // in file order
  // What the reading left out or settled that a reader of a comparison should know (the
  // other element types' runs of a `-d all` log).
  std::vector<std::string> notes;
};

// A log line without what launchers put on it (kubectl's --timestamps, Open MPI's
// --tag-output, srun --label, "[0]" rank tags), as nccl-tests printed it.
std::string without_launcher_marks(std::string_view line);

// What a caller knows of a log besides its text. The user's word (`op`, `ranks`: calibrate's
// --collective and --ranks) and, where the log and the user say nothing, the compared
// collective's (`op_otherwise`, `ranks_otherwise`: compare's scenario).
struct NcclLogHints {
  // Over the test binary the log's text runs and the file name; the header still wins.
  std::optional<CollectiveOp> op = std::nullopt;
  std::optional<CollectiveOp> op_otherwise = std::nullopt;
  // Where the log does not say (no `#  Rank` lines, no busbw / algbw count, one GPU per
  // process); where it says another count, refused.
  int ranks = 0;
  int ranks_otherwise = 0;
};

// Parses `text` (the contents of `file`). The collective comes from the header's
// "Collective test starting: X_perf", else `hints.op`, else the test binary the log runs,
// else the file name, else `hints.op_otherwise` (callers check it is the one they
// expected). The GPU count from the `#  Rank` lines or busbw / algbw, else `hints.ranks`,
// else nThread x nGpus of one process, else `hints.ranks_otherwise` (a send/recv log of
// several processes: its busbw is its algbw). Throws InputError("FILE:LINE", what was
// expected), or InputError("--ranks") where the log says another count than `hints.ranks`.
NcclTestsLog parse_nccl_tests_log(std::string_view text, const std::string& file,
                                  const NcclLogHints& hints = {});
NcclTestsLog read_nccl_tests_log(const std::string& path, const NcclLogHints& hints = {});

// How the log's run launched its collectives, from its header: nGpus > 1 is one thread
// driving that many GPUs (-g N), which issues their kernels one after another; unless the
// timed loop replays CUDA graphs (-G N: "graph: N"), which issue nothing per collective.
LaunchMode launch_of(const NcclTestsLog& log);

// The collective a "X_perf" binary name (or a bare "alltoall", "all_reduce") stands for.
std::optional<CollectiveOp> nccl_tests_op(std::string_view name);
// The collsim GPU model (kGpuModels) a device name of a Rank line stands for
// ("NVIDIA A100-SXM4-80GB": a100), or null where it names none of them.
const GpuModel* gpu_model_of_device(std::string_view device);
// Where the log names its GPU and the topology names its model, and they differ: what to
// tell the user ("the log ran on NVIDIA A100-SXM4-80GB (a100); the topology's GPUs are
// h100"); empty otherwise.
std::string device_mismatch(const NcclTestsLog& log, const Topology& topology);

// nccl-tests' reduction names (sum, prod, max, min, avg, mulsum) as collsim's.
std::optional<ReduceOp> nccl_tests_reduce_op(std::string_view name);
// The element type nccl-tests prints ("float", "half", "uint32", "f8e4m3"), as the
// collsim type of the same size (only the size matters to timing).
std::optional<DType> nccl_tests_dtype(std::string_view name);

}  // namespace collsim
