// Chakra traces -> step graph. The file reading (protobuf) is in chakra_io.cpp; this
// part works on parsed nodes and is built with or without protobuf.
#include "workload/chakra.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/units.h"

namespace collsim {
namespace fs = std::filesystem;

namespace {

// ---- Which files make up a trace ----

// The rank r of a file named "<name>.<r>.et" (r written without leading zeros), or
// nullopt for another file. A rank of kMaxChakraRanks or more comes back as
// kMaxChakraRanks, however many digits it has, for the caller to refuse.
std::optional<int> rank_of_file(const std::string& file, const std::string& name) {
  const std::string tail = ".et";
  if (file.size() <= name.size() + 1 + tail.size() || file.compare(0, name.size(), name) != 0 ||
      file[name.size()] != '.' || !file.ends_with(tail))
    return std::nullopt;
  const std::string_view digits(file.data() + name.size() + 1,
                                file.size() - name.size() - 1 - tail.size());
  if (digits.empty() || (digits.size() > 1 && digits[0] == '0') ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::int64_t rank = 0;
  for (char c : digits) {
    rank = rank * 10 + (c - '0');
    if (rank >= kMaxChakraRanks) return kMaxChakraRanks;
  }
  return static_cast<int>(rank);
}

// ---- Reading a rank file ----

// Closes a file descriptor when it goes out of scope.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// The whole content of a regular file of at most `most` bytes. The file is opened
// without blocking (a FIFO would wait for a writer) and checked with fstat, after
// symlinks: a FIFO, a device (/dev/zero never ends) or a folder is refused before
// a byte is read, and a file that grows past `most` meanwhile is refused as it is read.
std::string read_regular_file(const fs::path& file, std::int64_t most) {
  const std::string where = file.string();
  const FileDescriptor f{::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0)
    throw InputError(where, fmt::format("cannot open the trace file: {}", std::strerror(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw InputError(where, "not a regular file (a FIFO, a device or a folder): a trace is read "
                            "from regular files only");
  const auto too_big = [&](std::int64_t size) {
    return InputError(where, fmt::format("{} bytes: a trace's files may hold at most {} bytes "
                                         "(1 GiB) together",
                                         size, kMaxChakraBytes));
  };
  if (st.st_size > most) throw too_big(st.st_size);
  std::string bytes(static_cast<std::size_t>(st.st_size) + 1, '\0');  // one more: growth
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(f.fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw InputError(where, fmt::format("reading the trace file failed: {}", std::strerror(errno)));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (static_cast<std::int64_t>(got) > most) throw too_big(static_cast<std::int64_t>(got));
  bytes.resize(got);
  return bytes;
}

// ---- One rank's nodes as a DAG ----

struct RankGraph {
  std::vector<std::vector<std::size_t>> deps;  // parents of node i, as indices, ascending
  std::vector<std::size_t> order;              // a topological order, file order where it can
};

std::string group_label(const std::string& pg) {
  return pg.empty() ? std::string("the group of all ranks")
                    : fmt::format("process group \"{}\"", pg);
}

// Ranks as "0,1,2"; a list longer than 16 as its first 16 and the count.
std::string short_rank_list(const std::vector<int>& ranks) {
  constexpr std::size_t kShown = 16;
  if (ranks.size() <= kShown) return fmt::format("{}", fmt::join(ranks, ","));
  return fmt::format("{},... ({} ranks)", fmt::join(ranks.begin(), ranks.begin() + kShown, ","),
                     ranks.size());
}

std::string node_label(int rank, const ChakraNode& n) {
  return n.name.empty() ? fmt::format("rank {} node {}", rank, n.id)
                        : fmt::format("rank {} node {} (\"{}\")", rank, n.id, n.name);
}

RankGraph rank_graph(const ChakraTrace& trace, int rank, const std::string& where) {
  const auto& nodes = trace.nodes;
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (!index.emplace(nodes[i].id, i).second)
      throw InputError(where, fmt::format("rank {}: two nodes have the id {}", rank, nodes[i].id));
  RankGraph g;
  g.deps.resize(nodes.size());
  std::vector<std::vector<std::size_t>> children(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    // Data and control dependencies order a node alike.
    for (const auto* list : {&nodes[i].data_deps, &nodes[i].ctrl_deps})
      for (std::uint64_t id : *list) {
        const auto it = index.find(id);
        if (it == index.end())
          throw InputError(where, fmt::format("{} depends on node {}, which rank {}'s trace lacks",
                                              node_label(rank, nodes[i]), id, rank));
        if (it->second == i)
          throw InputError(where, fmt::format("{} depends on itself", node_label(rank, nodes[i])));
        g.deps[i].push_back(it->second);
      }
    std::sort(g.deps[i].begin(), g.deps[i].end());
    g.deps[i].erase(std::unique(g.deps[i].begin(), g.deps[i].end()), g.deps[i].end());
    for (std::size_t p : g.deps[i]) children[p].push_back(i);
  }
  // Kahn's algorithm, smallest file position first: a file already in dependency
  // order keeps its order (dependencies may point forward: Chakra allows it).
  std::vector<std::size_t> waiting(nodes.size());
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if ((waiting[i] = g.deps[i].size()) == 0) ready.push(i);
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    g.order.push_back(i);
    for (std::size_t c : children[i])
      if (--waiting[c] == 0) ready.push(c);
  }
  if (g.order.size() != nodes.size()) {
    const auto stuck = std::find_if(waiting.begin(), waiting.end(), [](auto w) { return w > 0; });
    throw InputError(where, fmt::format("{} is on a dependency cycle",
                                        node_label(rank, nodes[stuck - waiting.begin()])));
  }
  return g;
}

// ---- Nodes grouped into tasks ("units") ----

struct Member {
  int rank;
  std::size_t node;
};

struct Unit {
  StepTask task;
  std::vector<Member> members;
  std::set<std::int32_t> after;  // other units
  // Point to point: which ends were seen; collectives: the group's size.
  bool has_send = false, has_recv = false;
};

constexpr std::int32_t kPassThrough = -1;

std::optional<CollectiveOp> collsim_op(ChakraCommType t) {
  switch (t) {
    case ChakraCommType::AllReduce:
      return CollectiveOp::AllReduce;
    case ChakraCommType::Reduce:
      return CollectiveOp::Reduce;
    case ChakraCommType::AllGather:
      return CollectiveOp::AllGather;
    case ChakraCommType::Broadcast:
      return CollectiveOp::Broadcast;
    case ChakraCommType::AllToAll:
      return CollectiveOp::AllToAll;
    case ChakraCommType::ReduceScatter:
    case ChakraCommType::ReduceScatterBlock:
      return CollectiveOp::ReduceScatter;
    case ChakraCommType::Barrier:
      return CollectiveOp::Barrier;
    case ChakraCommType::Gather:
    case ChakraCommType::Scatter:
      break;
  }
  return std::nullopt;
}

class GraphMaker {
 public:
  GraphMaker(const std::vector<ChakraTrace>& traces, const ChakraOptions& options,
             std::string where)
      : traces_(traces),
        opt_(options),
        where_(std::move(where)),
        K_(static_cast<int>(traces.size())) {}

  StepGraph make() {
    check_options();
    for (int r = 0; r < K_; ++r) {
      graphs_.push_back(rank_graph(traces_[r], r, where_));
      for (const ChakraNode& n : traces_[r].nodes)
        if (static_cast<ChakraNodeType>(n.type) == ChakraNodeType::Collective) {
          ++issued_in_[{n.pg_name.value_or(""), r}];
          if (!n.pg_name) continue;
          auto& users = users_[*n.pg_name];
          if (users.empty() || users.back() != r) users.push_back(r);
        }
    }
    std::size_t nodes = 0;
    for (const auto& t : traces_) nodes += t.nodes.size();
    units_.reserve(nodes);  // at most one unit per node; no task is copied on growth
    unit_of_.resize(K_);
    for (int r = 0; r < K_; ++r) {
      unit_of_[r].assign(traces_[r].nodes.size(), kPassThrough);
      for (std::size_t i = 0; i < traces_[r].nodes.size(); ++i) place(r, i);
    }
    check_complete();
    link_dependencies();
    return ordered_graph();
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw InputError(where_, message); }
  const ChakraNode& node(int r, std::size_t i) const { return traces_[r].nodes[i]; }

  void check_options() const {
    if (K_ == 0) fail("the trace has no ranks");
    if (!(opt_.peak_flops >= 0) || !std::isfinite(opt_.peak_flops))
      fail("the GPU's peak FLOP/s must be a finite number of at least 0");
    if (!(opt_.mfu > 0 && opt_.mfu <= 1)) fail("the MFU must be in (0, 1]");
    if (!(opt_.memory_bandwidth >= 0) || !std::isfinite(opt_.memory_bandwidth))
      fail("the memory bandwidth must be a finite number of at least 0 bytes/s");
    for (const auto& [name, ranks] : opt_.process_groups) {
      if (ranks.empty()) fail(fmt::format("process group \"{}\" has no ranks", name));
      std::set<int> seen;
      for (int r : ranks) {
        if (r < 0 || r >= K_)
          fail(fmt::format("process group \"{}\" names rank {}; the trace has ranks 0..{}", name, r,
                           K_ - 1));
        if (!seen.insert(r).second)
          fail(fmt::format("process group \"{}\" names rank {} twice", name, r));
      }
    }
  }

  // ---- Placing each node in a unit ----

  void place(int r, std::size_t i) {
    const ChakraNode& n = node(r, i);
    switch (static_cast<ChakraNodeType>(n.type)) {
      case ChakraNodeType::Compute:
        unit_of_[r][i] = add_unit(compute_task(r, n), {r, i});
        break;
      case ChakraNodeType::MemLoad:
      case ChakraNodeType::MemStore:
        if (opt_.memory_bandwidth > 0) unit_of_[r][i] = add_unit(memory_task(r, n), {r, i});
        break;
      case ChakraNodeType::Collective:
        place_collective(r, i);
        break;
      case ChakraNodeType::Send:
      case ChakraNodeType::Recv:
        place_p2p(r, i);
        break;
      case ChakraNodeType::Metadata:
      case ChakraNodeType::Storage:
      case ChakraNodeType::Batch:
      case ChakraNodeType::Checkpoint:
        break;  // no work of ours: dependencies pass through
      default:
        fail(fmt::format("{}: {}", node_label(r, n), chakra_node_type_problem(n.type)));
    }
  }

  std::int32_t add_unit(StepTask task, Member m) {
    units_.push_back(Unit{std::move(task), {m}, {}});
    return static_cast<std::int32_t>(units_.size() - 1);
  }

  StepTask compute_task(int r, const ChakraNode& n) const {
    StepTask t;
    t.kind = StepTaskKind::Compute;
    t.name = fmt::format("rank{}.{}", r, n.name.empty() ? fmt::format("node{}", n.id) : n.name);
    t.category = "compute";
    t.ranks = {r};
    if (n.num_ops && *n.num_ops < 0)
      fail(fmt::format("{} has num_ops {}: expected a FLOP count of at least 0", node_label(r, n),
                       *n.num_ops));
    if (n.duration_micros > 0) {  // measured: it wins over a FLOP count
      t.duration_s = static_cast<double>(n.duration_micros) * 1e-6;
    } else if (n.num_ops && *n.num_ops > 0) {
      if (opt_.peak_flops <= 0)
        fail(
            fmt::format("{} gives {} FLOPs (num_ops) but no duration: give the GPU's peak "
                        "FLOP/s (and MFU) to time it",
                        node_label(r, n), *n.num_ops));
      t.duration_s = static_cast<double>(*n.num_ops) / (opt_.peak_flops * opt_.mfu);
    }
    check_duration(r, n, t.duration_s);
    return t;
  }

  StepTask memory_task(int r, const ChakraNode& n) const {
    if (!n.tensor_size)
      fail(fmt::format("{} is a memory node without a tensor_size", node_label(r, n)));
    if (*n.tensor_size < 0)
      fail(fmt::format("{} has tensor_size {}: expected a byte count of at least 0",
                       node_label(r, n), *n.tensor_size));
    StepTask t;
    t.kind = StepTaskKind::Compute;
    t.name = fmt::format("rank{}.{}", r, n.name.empty() ? fmt::format("node{}", n.id) : n.name);
    t.category = "memory";
    t.ranks = {r};
    t.duration_s = static_cast<double>(*n.tensor_size) / opt_.memory_bandwidth;
    check_duration(r, n, t.duration_s);
    return t;
  }

  void check_duration(int r, const ChakraNode& n, double seconds) const {
    if (!(seconds <= kMaxDuration))
      fail(fmt::format("{} lasts {} s, longer than collsim simulates", node_label(r, n), seconds));
  }

  // A process group: its ranks in the algorithm's order, the same sorted (membership
  // in log time: a group may have every one of 2^20 ranks), and how many collectives
  // all its members issue (the most it can run: collective #k of a rank that issues
  // more has no partner on some member, refused before its task is made).
  struct Group {
    std::vector<int> ranks, sorted;
    int complete = 0;
  };

  // The process group of a collective node on rank r.
  const Group& group_of(int r, const ChakraNode& n) {
    const std::string key = n.pg_name.value_or("");
    auto it = groups_.find(key);
    if (it == groups_.end()) {
      Group g;
      if (key.empty()) {
        for (int q = 0; q < K_; ++q) g.ranks.push_back(q);
      } else if (auto given = opt_.process_groups.find(key); given != opt_.process_groups.end()) {
        g.ranks = given->second;
      } else {  // the ranks whose traces use the name
        g.ranks = users_.at(key);
      }
      g.sorted = g.ranks;
      std::sort(g.sorted.begin(), g.sorted.end());
      g.complete = std::numeric_limits<int>::max();
      for (int q : g.ranks) {
        const auto c = issued_in_.find({key, q});
        g.complete = std::min(g.complete, c == issued_in_.end() ? 0 : c->second);
      }
      it = groups_.emplace(key, std::move(g)).first;
    }
    if (!std::binary_search(it->second.sorted.begin(), it->second.sorted.end(), r))
      fail(fmt::format("{} is a collective of {}, which does not include rank {}", node_label(r, n),
                       group_label(key), r));
    return it->second;
  }

  // Collective #k of a group whose members do not all issue k + 1 collectives in it.
  [[noreturn]] void fail_incomplete(int r, const ChakraNode& n, const Group& g, int k) const {
    const std::string pg = n.pg_name.value_or("");
    const auto fewer = std::find_if(g.ranks.begin(), g.ranks.end(), [&](int q) {
      const auto c = issued_in_.find({pg, q});
      return c == issued_in_.end() || c->second <= k;
    });
    fail(fmt::format("{} is a collective over ranks {} but rank {} issues fewer collectives in {}",
                     node_label(r, n), short_rank_list(g.ranks), *fewer, group_label(pg)));
  }

  std::int64_t comm_bytes(int r, const ChakraNode& n) const {
    if (!n.comm_size)
      fail(fmt::format("{} is a communication node without a comm_size", node_label(r, n)));
    if (*n.comm_size < 0 || *n.comm_size > kMaxBytes)
      fail(fmt::format("{} has comm_size {}: expected 0 to 2^50 bytes", node_label(r, n),
                       *n.comm_size));
    return *n.comm_size;
  }

  // A collective's shape and size from its first member; the others must agree.
  StepTask collective_task(int r, const ChakraNode& n, const std::vector<int>& group) const {
    if (!n.comm_type) fail(fmt::format("{} is a collective without a comm_type", node_label(r, n)));
    const auto type = static_cast<ChakraCommType>(*n.comm_type);
    const auto op = *n.comm_type >= 0 && *n.comm_type <= 9 ? collsim_op(type) : std::nullopt;
    if (!op)
      fail(
          fmt::format("{} has comm_type {}: collsim reads all-reduce (0), reduce (1), all-gather "
                      "(2), broadcast (5), all-to-all (6), reduce-scatter (7, 8) and barrier (9); "
                      "gather and scatter have no agreed size in Chakra",
                      node_label(r, n), *n.comm_type));
    if (std::find(n.involved_dim.begin(), n.involved_dim.end(), false) != n.involved_dim.end())
      fail(
          fmt::format("{} spans only some of ASTRA-sim's network dimensions (involved_dim); "
                      "collsim has no dimensions: give the collective a process group instead",
                      node_label(r, n)));
    const auto K = static_cast<std::int64_t>(group.size());
    std::int64_t bytes = *op == CollectiveOp::Barrier ? 0 : comm_bytes(r, n);
    // Chakra's all-gather size is each rank's input; collsim's is the whole output. Each rank's
    // part is whole elements (6 bytes of float32 read as 48 B in all, 12 elements).
    if (*op == CollectiveOp::AllGather) {
      check_whole_elements(r, n, bytes);
      if (bytes > kMaxBytes / K)
        fail(fmt::format("{}: the all-gather's output, {} ranks x {} bytes, passes 2^50 bytes",
                         node_label(r, n), K, bytes));
      bytes *= K;
    }
    return p2p_or_collective(r, n, *op, bytes, group);
  }

  void check_whole_elements(int r, const ChakraNode& n, std::int64_t bytes) const {
    if (bytes % element_size(opt_.dtype) != 0)
      fail(fmt::format("{}: {} bytes is not a whole number of {} elements", node_label(r, n), bytes,
                       name_of(opt_.dtype)));
  }

  StepTask p2p_or_collective(int r, const ChakraNode& n, CollectiveOp op, std::int64_t bytes,
                             const std::vector<int>& ranks) const {
    const int esize = element_size(opt_.dtype);
    check_whole_elements(r, n, bytes);
    StepTask t;
    t.kind = StepTaskKind::Collective;
    t.name = n.name.empty() ? fmt::format("{}.rank{}.node{}", name_of(op), r, n.id) : n.name;
    t.category = "comm";
    t.ranks = ranks;
    CollectiveSpec& c = t.collective.edit();
    c.name = t.name;
    c.json_path = fmt::format("{}: {}", where_, node_label(r, n));
    c.shape.op = op;
    c.shape.dtype = opt_.dtype;
    c.shape.ranks = static_cast<int>(ranks.size());
    c.shape.count = bytes / esize;
    c.shape.root = 0;  // Chakra names no root: the group's first rank
    c.bytes = bytes;
    c.ranks = ranks;
    c.algorithm = opt_.algorithm;
    return t;
  }

  // The k-th collective a rank issues in a group (in file order) is the k-th of
  // every other member.
  void place_collective(int r, std::size_t i) {
    const ChakraNode& n = node(r, i);
    const Group& group = group_of(r, n);
    const std::string pg = n.pg_name.value_or("");
    const int k = issued_[{pg, r}]++;
    auto [it, fresh] = collectives_.try_emplace({pg, k}, -1);
    if (fresh) {
      if (k >= group.complete) fail_incomplete(r, n, group, k);
      it->second = add_unit(collective_task(r, n, group.ranks), {r, i});
    } else {
      Unit& u = units_[it->second];
      const ChakraNode& first = node(u.members[0].rank, u.members[0].node);
      if (n.comm_type != first.comm_type ||
          (n.comm_size != first.comm_size && n.comm_type.value_or(0) != 9))
        fail(fmt::format(
            "{} is collective #{} of {} on rank {} but {} is #{} on "
            "rank {}: the type or size differs (comm_type {} vs {}, comm_size {} vs "
            "{}); every member must issue the group's collectives in the same order",
            node_label(r, n), k, group_label(pg), r, node_label(u.members[0].rank, first), k,
            u.members[0].rank, n.comm_type.value_or(-1), first.comm_type.value_or(-1),
            n.comm_size.value_or(-1), first.comm_size.value_or(-1)));
      u.members.push_back({r, i});
    }
    unit_of_[r][i] = it->second;
  }

  // The k-th send from s to d with a tag meets the k-th recv on d from s with that tag:
  // one transfer, an all-to-all over {s, d} whose only non-zero entry is s -> d.
  void place_p2p(int r, std::size_t i) {
    const ChakraNode& n = node(r, i);
    const bool send = static_cast<ChakraNodeType>(n.type) == ChakraNodeType::Send;
    const auto& peer = send ? n.comm_dst : n.comm_src;
    if (!peer)
      fail(fmt::format("{} is a {} without a {}", node_label(r, n), send ? "send" : "recv",
                       send ? "comm_dst" : "comm_src"));
    if (*peer < 0 || *peer >= K_ || *peer == r)
      fail(fmt::format("{} {} rank {}: expected another rank of 0..{}", node_label(r, n),
                       send ? "sends to" : "receives from", *peer, K_ - 1));
    // The end that is this rank, where the trace names it, must be this rank.
    if (const auto& own = send ? n.comm_src : n.comm_dst; own && *own != r)
      fail(fmt::format("{} is a {} in rank {}'s trace with {} {}: expected {} or none",
                       node_label(r, n), send ? "send" : "recv", r, send ? "comm_src" : "comm_dst",
                       *own, r));
    const int s = send ? r : static_cast<int>(*peer), d = send ? static_cast<int>(*peer) : r;
    const std::int64_t tag = n.comm_tag.value_or(0);
    const std::int64_t bytes = comm_bytes(r, n);
    const int k = (send ? sends_ : recvs_)[{s, d, tag}]++;
    auto [it, fresh] = transfers_.try_emplace({s, d, tag, k}, -1);
    if (fresh) {
      StepTask t = p2p_or_collective(r, n, CollectiveOp::AllToAll, bytes, {s, d});
      t.category = "p2p";
      if (n.name.empty()) t.name = fmt::format("p2p.{}to{}.tag{}.{}", s, d, tag, k);
      auto matrix = std::make_shared<std::vector<std::int64_t>>(4, 0);
      CollectiveSpec& c = t.collective.edit();
      (*matrix)[1] = c.shape.count;  // [s * 2 + d] with s = 0, d = 1
      // Per rank, the mean of what the ranks send (all-to-allv's size convention).
      c.shape.count /= 2;
      c.bytes = c.shape.count * element_size(opt_.dtype);
      c.shape.matrix = std::move(matrix);
      c.algorithm = "direct";
      it->second = add_unit(std::move(t), {r, i});
    } else {
      Unit& u = units_[it->second];
      const ChakraNode& other = node(u.members[0].rank, u.members[0].node);
      if (other.comm_size != n.comm_size)
        fail(
            fmt::format("{} and {} are the matching send and recv #{} from rank {} to rank {} "
                        "(tag {}) but their comm_size differ ({} vs {})",
                        node_label(u.members[0].rank, other), node_label(r, n), k, s, d, tag,
                        other.comm_size.value_or(-1), bytes));
      u.members.push_back({r, i});
    }
    (send ? units_[it->second].has_send : units_[it->second].has_recv) = true;
    unit_of_[r][i] = it->second;
  }

  // Every send has its recv (a collective's members are checked as it is placed).
  void check_complete() const {
    for (const Unit& u : units_) {
      const Member m0 = u.members[0];
      const ChakraNode& n = node(m0.rank, m0.node);
      if (u.task.category == "p2p") {
        if (!u.has_send || !u.has_recv)
          fail(
              fmt::format("{} has no matching {} on rank {} (same tag, same position among the "
                          "transfers between the two ranks)",
                          node_label(m0.rank, n), u.has_send ? "recv" : "send",
                          u.has_send ? u.task.ranks[1] : u.task.ranks[0]));
      }
    }
  }

  // ---- Dependencies between units ----

  void link_dependencies() {
    for (int r = 0; r < K_; ++r) {
      // The units a node's completion stands for: its own, or, for a node that is no
      // task, those its own dependencies stand for.
      std::vector<std::vector<std::int32_t>> stands_for(traces_[r].nodes.size());
      std::int32_t last_compute[2] = {-1, -1};  // per CPU / GPU, for serialize_compute
      for (std::size_t i : graphs_[r].order) {
        std::set<std::int32_t> before;
        for (std::size_t p : graphs_[r].deps[i]) {
          spend_edges(stands_for[p].size(), r, i);
          before.insert(stands_for[p].begin(), stands_for[p].end());
        }
        const std::int32_t u = unit_of_[r][i];
        if (u == kPassThrough) {
          stands_for[i].assign(before.begin(), before.end());
          continue;
        }
        stands_for[i] = {u};
        if (opt_.serialize_compute && units_[u].task.category == "compute") {
          // Chakra's feeder counts a node without is_cpu_op as a CPU op.
          std::int32_t& last = last_compute[node(r, i).is_cpu_op.value_or(true) ? 0 : 1];
          if (last >= 0) before.insert(last);
          last = u;
        }
        before.erase(u);
        units_[u].after.insert(before.begin(), before.end());
      }
    }
  }

  // A node that is no task stands for the units its own dependencies stand for, so
  // chains of them multiply edges (n units, then n such nodes each after the previous
  // one and one unit: n^2/2). Counted as they are gathered, within the bound on a
  // trace's dependencies.
  void spend_edges(std::size_t edges, int r, std::size_t i) {
    edges_left_ -= static_cast<std::int64_t>(edges);
    if (edges_left_ < 0)
      fail(fmt::format("{}: the dependencies between tasks pass {} edges, through nodes that are "
                       "no task (metadata, storage, memory nodes without a memory bandwidth) "
                       "standing for all the tasks before them",
                       node_label(r, node(r, i)), kMaxChakraDependencies));
  }

  // Units in an order where every dependency comes first (Kahn's, creation order
  // among the ready); what is left over waits on itself across ranks: a deadlock.
  StepGraph ordered_graph() {
    const std::size_t n = units_.size();
    std::vector<std::vector<std::int32_t>> children(n);
    std::vector<std::size_t> waiting(n);
    std::priority_queue<std::int32_t, std::vector<std::int32_t>, std::greater<>> ready;
    for (std::size_t u = 0; u < n; ++u) {
      for (std::int32_t p : units_[u].after) children[p].push_back(static_cast<std::int32_t>(u));
      if ((waiting[u] = units_[u].after.size()) == 0) ready.push(static_cast<std::int32_t>(u));
    }
    std::vector<std::int32_t> position(n, -1);
    StepGraph g;
    while (!ready.empty()) {
      const std::int32_t u = ready.top();
      ready.pop();
      position[u] = static_cast<std::int32_t>(g.tasks.size());
      StepTask t = std::move(units_[u].task);
      for (std::int32_t p : units_[u].after) t.after.push_back(position[p]);
      std::sort(t.after.begin(), t.after.end());
      g.tasks.push_back(std::move(t));
      for (std::int32_t c : children[u])
        if (--waiting[c] == 0) ready.push(c);
    }
    if (g.tasks.size() != n) {
      const auto stuck = std::find(position.begin(), position.end(), -1) - position.begin();
      const Member m = units_[stuck].members[0];
      fail(
          fmt::format("the ranks' traces deadlock: {} waits, across ranks, on itself (collectives "
                      "or sends and recvs issued in orders that cannot all be met)",
                      node_label(m.rank, node(m.rank, m.node))));
    }
    return g;
  }

  const std::vector<ChakraTrace>& traces_;
  const ChakraOptions& opt_;
  std::string where_;
  int K_;
  std::vector<RankGraph> graphs_;
  std::vector<std::vector<std::int32_t>> unit_of_;  // [rank][node]: its unit, or kPassThrough
  std::vector<Unit> units_;
  std::map<std::string, Group> groups_;                // pg_name ("" = every rank) -> group
  std::map<std::string, std::vector<int>> users_;      // pg_name -> the ranks using it, ascending
  std::map<std::pair<std::string, int>, int> issued_;     // (pg, rank) -> collectives so far
  std::map<std::pair<std::string, int>, int> issued_in_;  // (pg, rank) -> in the whole trace
  std::int64_t edges_left_ = kMaxChakraDependencies;
  std::map<std::pair<std::string, int>, std::int32_t> collectives_;  // (pg, k) -> unit
  std::map<std::tuple<int, int, std::int64_t>, int> sends_, recvs_;  // (s, d, tag) -> count
  std::map<std::tuple<int, int, std::int64_t, int>, std::int32_t> transfers_;  // + k -> unit
};

}  // namespace

bool chakra_node_type_known(int type) {
  return type >= static_cast<int>(ChakraNodeType::Metadata) &&
         type <= static_cast<int>(ChakraNodeType::Checkpoint);
}

std::string chakra_node_type_problem(int type) {
  return fmt::format("type {}{} is not a Chakra node type: expected 1 (metadata) .. 10 (checkpoint)",
                     type, type == 0 ? " (invalid: an empty or unset node)" : "");
}

std::vector<fs::path> chakra_rank_files(const fs::path& prefix, int ranks) {
  const fs::path dir = prefix.parent_path().empty() ? fs::path(".") : prefix.parent_path();
  const std::string name = prefix.filename().string();
  const std::string pattern = fmt::format("{}/{}.<rank>.et", dir.string(), name);
  std::error_code ec;
  if (name.empty() || !fs::is_directory(dir, ec))
    throw InputError(prefix.string(), fmt::format("expected a trace prefix DIR/NAME naming the "
                                                  "files {}",
                                                  pattern));
  std::set<int> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    const auto r = rank_of_file(file, name);
    if (r && *r >= kMaxChakraRanks)
      throw InputError(prefix.string(), fmt::format("{} is past the {} ranks a trace may have "
                                                    "(files {}.0.et .. {}.{}.et)",
                                                    file, kMaxChakraRanks, name, name,
                                                    kMaxChakraRanks - 1));
    if (r) found.insert(*r);
  }
  if (ec)
    throw InputError(prefix.string(), fmt::format("cannot list {}: {}", dir.string(), ec.message()));
  if (found.empty()) throw InputError(prefix.string(), fmt::format("no files {}", pattern));
  const int K = ranks > 0 ? ranks : *found.rbegin() + 1;
  for (int r = 0; r < K; ++r)
    if (!found.count(r))
      throw InputError(
          prefix.string(),
          fmt::format("{}.{}.et is missing (a trace of {} ranks has one file per rank)", name, r,
                      K));
  if (*found.rbegin() >= K)
    throw InputError(prefix.string(), fmt::format("{}.{}.et is there but the trace should have "
                                                  "{} ranks",
                                                  name, *found.rbegin(), K));
  std::vector<fs::path> files;
  for (int r = 0; r < K; ++r) files.push_back(dir / fmt::format("{}.{}.et", name, r));
  return files;
}

ChakraTrace read_chakra_file(const fs::path& file, ChakraBudget& budget) {
  if (!chakra_files_supported()) return parse_chakra_trace({}, file.string(), budget);  // throws
  std::string bytes = read_regular_file(file, budget.bytes);
  budget.bytes -= static_cast<std::int64_t>(bytes.size());
  return parse_chakra_trace(bytes, file.string(), budget);
}

ChakraTrace read_chakra_file(const fs::path& file) {
  ChakraBudget budget;
  return read_chakra_file(file, budget);
}

StepGraph chakra_step_graph(const std::vector<ChakraTrace>& traces, const ChakraOptions& options,
                            const std::string& where) {
  return GraphMaker(traces, options, where).make();
}

StepGraph read_chakra(const fs::path& prefix, const ChakraOptions& options) {
  ChakraBudget budget;
  if (!chakra_files_supported()) read_chakra_file(prefix, budget);  // throws: no protobuf
  std::vector<ChakraTrace> traces;
  for (const auto& file : chakra_rank_files(prefix, options.ranks))
    traces.push_back(read_chakra_file(file, budget));
  return chakra_step_graph(traces, options, prefix.string());
}

}  // namespace collsim
