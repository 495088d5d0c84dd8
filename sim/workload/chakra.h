#pragma once
// Chakra execution traces (MLCommons Chakra; what ASTRA-sim reads) as a workload:
// one protobuf file per rank, DIR/NAME.0.et ... DIR/NAME.(K-1).et, each a DAG of
// compute, memory and communication nodes. read_chakra() turns the K files into one
// StepGraph: a rank's compute node becomes a compute task on that rank, the i-th
// collective each member of a process group issues becomes one collective task
// across the group, and a send is paired with its recv into a one-way transfer.
//
// Reading the files needs protobuf (found at configure time); the mapping from
// parsed nodes to a step graph does not, so chakra_step_graph() is always built.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedule/collective.h"
#include "workload/chakra_options.h"
#include "workload/step_graph.h"

namespace collsim {

// Node types, numbered as in the Chakra schema.
enum class ChakraNodeType : int {
  Invalid = 0,
  Metadata = 1,
  MemLoad = 2,
  MemStore = 3,
  Compute = 4,
  Send = 5,
  Recv = 6,
  Collective = 7,
  Storage = 8,
  Batch = 9,
  Checkpoint = 10,
};

// Collective kinds, the values of a collective node's "comm_type" attribute.
enum class ChakraCommType : int {
  AllReduce = 0,
  Reduce = 1,
  AllGather = 2,
  Gather = 3,
  Scatter = 4,
  Broadcast = 5,
  AllToAll = 6,
  ReduceScatter = 7,
  ReduceScatterBlock = 8,
  Barrier = 9,
};

// One node of one rank's trace: the fields and attributes collsim reads, whichever
// integer type the trace stored an attribute in. Absent attributes stay empty.
struct ChakraNode {
  std::uint64_t id = 0;
  std::string name;
  int type = 0;  // a ChakraNodeType value (unknown ones are refused: chakra_node_type_known)
  std::vector<std::uint64_t> data_deps;
  std::vector<std::uint64_t> ctrl_deps;
  std::uint64_t duration_micros = 0;
  std::optional<std::int64_t> comm_type;    // collective nodes
  std::optional<std::int64_t> comm_size;    // bytes (all-gather: each rank's input)
  std::optional<std::int64_t> comm_src;     // recv nodes: the sending rank
  std::optional<std::int64_t> comm_dst;     // send nodes: the receiving rank
  std::optional<std::int64_t> comm_tag;     // send/recv matching
  std::optional<std::int64_t> num_ops;      // compute nodes: floating-point operations
  std::optional<std::int64_t> tensor_size;  // memory nodes (and the roofline): bytes
  std::optional<std::string> pg_name;       // collective nodes: the process group
  std::optional<bool> is_cpu_op;
  std::vector<bool> involved_dim;  // ASTRA-sim's network dimensions a collective spans
};

struct ChakraTrace {
  std::string version;            // the global metadata's schema version, e.g. "0.0.4"
  std::vector<ChakraNode> nodes;  // in file order
};

// Bounds on a trace, each checked while the files are read, before what it bounds is
// allocated: a file of 50 MB of zero bytes would otherwise be 52 M empty nodes. Ranks:
// as many as a topology may have GPUs. Bytes: all the rank files together, each read
// whole into memory. Nodes and dependencies: all ranks together (a node is some
// hundred bytes once parsed, a dependency some tens). One message: a node with its
// attributes (a real one takes hundreds of bytes; protobuf parses a message whole).
inline constexpr int kMaxChakraRanks = 1 << 20;
inline constexpr std::int64_t kMaxChakraBytes = std::int64_t{1} << 30;  // 1 GiB
inline constexpr std::int64_t kMaxChakraNodes = 1 << 20;
inline constexpr std::int64_t kMaxChakraDependencies = 1 << 24;
inline constexpr std::int64_t kMaxChakraMessageBytes = 1 << 20;  // 1 MiB

// What is left of those bounds while one trace's rank files are read in turn.
struct ChakraBudget {
  std::int64_t bytes = kMaxChakraBytes;
  std::int64_t nodes = kMaxChakraNodes;
  std::int64_t dependencies = kMaxChakraDependencies;
};

// Metadata (1) to checkpoint (10): the node types the Chakra schema defines. Anything
// else (0 is an empty node) is refused, never dropped: a dropped node loses its work.
bool chakra_node_type_known(int type);
// "type 99 is not a Chakra node type: expected 1 (metadata) .. 10 (checkpoint)".
std::string chakra_node_type_problem(int type);

// False when collsim was built without protobuf: read_chakra_file, write_chakra_file
// and read_chakra then throw, saying so.
bool chakra_files_supported();

// One rank's file content, the bytes of NAME.<r>.et (at most kMaxChakraBytes), as
// read_chakra_file parses it; the fuzz target calls this directly. Errors name `where`;
// each node and each dependency counts against `budget` as it is read.
ChakraTrace parse_chakra_trace(std::string_view bytes, const std::string& where,
                               ChakraBudget& budget);

// One rank's file: a regular file (after symlinks; a FIFO or a device is refused
// before it is read), read whole within budget.bytes (which it spends), then
// parse_chakra_trace. Errors (a missing file, a truncated message) name the file.
ChakraTrace read_chakra_file(const std::filesystem::path& file, ChakraBudget& budget);
ChakraTrace read_chakra_file(const std::filesystem::path& file);  // a fresh budget
// Writes a trace in the same framing (for tests, and for exporting workloads).
void write_chakra_file(const std::filesystem::path& file, const ChakraTrace& trace);

// The files DIR/NAME.<r>.et for r = 0..K-1 of prefix "DIR/NAME": K from options.ranks
// or, when 0, from the files present (gaps are an error, and so is a rank of
// kMaxChakraRanks or more, however many digits it has).
std::vector<std::filesystem::path> chakra_rank_files(const std::filesystem::path& prefix,
                                                     int ranks);

// The step graph of traces[r] = rank r's trace. `where` prefixes errors (e.g. the JSON
// path of the workload and the trace prefix).
StepGraph chakra_step_graph(const std::vector<ChakraTrace>& traces, const ChakraOptions& options,
                            const std::string& where);

// read_chakra_file on every rank's file with one budget, then chakra_step_graph.
StepGraph read_chakra(const std::filesystem::path& prefix, const ChakraOptions& options = {});

}  // namespace collsim
