#include "validate/shm_runner.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>

#include "replay/replayer.h"
#include "schedule/layout.h"
#include "validate/validation_error.h"

namespace collsim {
namespace {

constexpr std::uint64_t kMagic = 0x636f6c6c73696d31ull;  // "collsim1"
constexpr const char* kPrefix = "collsim-";

volatile std::sig_atomic_t g_interrupted = 0;
void on_interrupt(int) {
  g_interrupted = 1;
}

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Shared (not process-private) futexes: the waiters live in other processes.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, long timeout_ns) {
  timespec ts{0, timeout_ns};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, expected, &ts, nullptr,
          0);
}
void futex_wake_all(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
          0);
}

std::uint64_t align(std::uint64_t x) {
  return (x + 63) & ~std::uint64_t{63};
}

// Where each array sits in the segment (byte offsets from its start).
struct Layout {
  std::uint64_t off_ops, off_dep_begin, off_deps, off_done, off_times, off_current, off_buffer_at,
      off_data, size;
};

struct Header {
  std::uint64_t magic;
  std::uint32_t ranks, num_ops, num_buffers, iterations;
  std::int32_t kill_rank;
  DType dtype;
  ReduceOp reduce_op;
  Layout layout;
  std::atomic<std::uint32_t> go;        // the iteration ranks may run (1-based)
  std::atomic<std::uint32_t> finished;  // ranks done with the current iteration
  std::atomic<std::uint32_t> abort;
};

// A mapped segment and typed views into it.
struct Segment {
  void* base = nullptr;
  std::size_t size = 0;

  Header& header() const { return *static_cast<Header*>(base); }
  template <class T>
  T* at(std::uint64_t offset) const {
    return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
  }
  Op* ops() const { return at<Op>(header().layout.off_ops); }
  std::uint32_t* dep_begin() const { return at<std::uint32_t>(header().layout.off_dep_begin); }
  OpId* deps() const { return at<OpId>(header().layout.off_deps); }
  std::atomic<std::uint32_t>* done() const {
    return at<std::atomic<std::uint32_t>>(header().layout.off_done);
  }
  std::int64_t* times() const {
    return at<std::int64_t>(header().layout.off_times);
  }  // [iteration][op][start, end]
  std::atomic<std::int32_t>* current() const {
    return at<std::atomic<std::int32_t>>(header().layout.off_current);
  }
  std::uint64_t* buffer_at() const { return at<std::uint64_t>(header().layout.off_buffer_at); }
  char* buffer(int rank, int b) const {
    return at<char>(header().layout.off_data +
                    buffer_at()[static_cast<std::size_t>(rank) * header().num_buffers + b]);
  }
};

template <class F>
void with_element_type(DType t, F&& f) {
  switch (t) {
    case DType::F32:
      return f(float{});
    case DType::F64:
      return f(double{});
    case DType::I32:
      return f(std::int32_t{});
    case DType::I64:
      return f(std::int64_t{});
    case DType::BF16:
      return f(BFloat16{});
    default:
      throw ValidationError(fmt::format(
          "the shm backend runs float32, float64, int32, int64 and bfloat16, not {}", name_of(t)));
  }
}

template <class T>
void execute(const Segment& seg, const Op& op) {
  const T* src = reinterpret_cast<const T*>(seg.buffer(op.src_rank, op.src_buffer)) + op.src_offset;
  T* dst = reinterpret_cast<T*>(seg.buffer(op.dst_rank, op.dst_buffer)) + op.dst_offset;
  if (op.kind == OpKind::Copy) {
    std::memcpy(dst, src, static_cast<std::size_t>(op.count) * sizeof(T));
    return;
  }
  // One loop per reduction, the choice made once: the compiler vectorises each.
  auto fold = [&](auto f) {
    for (std::int64_t i = 0; i < op.count; ++i) dst[i] = f(dst[i], src[i]);
  };
  switch (seg.header().reduce_op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return fold([](const T& a, const T& b) { return combine(ReduceOp::Sum, a, b); });
    case ReduceOp::Prod:
      return fold([](const T& a, const T& b) { return combine(ReduceOp::Prod, a, b); });
    case ReduceOp::Max:
      return fold([](const T& a, const T& b) { return combine(ReduceOp::Max, a, b); });
    case ReduceOp::Min:
      return fold([](const T& a, const T& b) { return combine(ReduceOp::Min, a, b); });
  }
}

// Waits for `word` to reach `target`; false if the runner called the run off.
bool wait_for(const Segment& seg, std::atomic<std::uint32_t>& word, std::uint32_t target) {
  for (std::uint32_t v; (v = word.load(std::memory_order_acquire)) < target;) {
    if (seg.header().abort.load()) return false;
    futex_wait(word, v, 50'000'000);
  }
  return true;
}

// Owns the segment and the rank processes; tearing it down always leaves nothing behind.
class Run {
 public:
  Run() = default;
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  ~Run() {
    if (seg_.base) seg_.header().abort = 1;
    for (pid_t p : pids_)
      if (p > 0) kill(p, SIGKILL);
    for (pid_t p : pids_)
      if (p > 0) waitpid(p, nullptr, 0);
    if (seg_.base) munmap(seg_.base, seg_.size);
    if (fd_ >= 0) close(fd_);
    if (!name_.empty()) shm_unlink(name_.c_str());
    std::signal(SIGINT, old_int_);
    std::signal(SIGTERM, old_term_);
  }

  Segment& create(std::size_t size) {
    static std::atomic<int> counter{0};
    name_ = fmt::format("/{}{}-{}", kPrefix, getpid(), counter++);
    old_int_ = std::signal(SIGINT, on_interrupt);
    old_term_ = std::signal(SIGTERM, on_interrupt);
    const int fd = shm_open(name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
      throw ValidationError(
          fmt::format("cannot create shared memory {}: {}", name_, std::strerror(errno)));
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
      close(fd);
      throw ValidationError(
          fmt::format("cannot size shared memory to {} bytes: {}", size, std::strerror(errno)));
    }
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    // The name goes at once: the ranks inherit the descriptor instead, so nothing can
    // be left in /dev/shm, whatever happens to this process.
    shm_unlink(name_.c_str());
    name_.clear();
    fd_ = fd;
    fcntl(fd_, F_SETFD, 0);  // keep it open across exec
    if (p == MAP_FAILED)
      throw ValidationError(fmt::format("cannot map shared memory: {}", std::strerror(errno)));
    seg_ = {p, size};
    return seg_;
  }

  void spawn(const std::string& exe, int ranks) {
    const pid_t parent = getpid();
    for (int r = 0; r < ranks; ++r) {
      const pid_t pid = fork();
      if (pid < 0) throw ValidationError(fmt::format("fork failed: {}", std::strerror(errno)));
      if (pid == 0) {
        // If the runner dies without cleaning up (SIGKILL), its ranks die with it.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);
        const std::string rank = std::to_string(r), fd = "fd:" + std::to_string(fd_);
        execl(exe.c_str(), exe.c_str(), "__rank", fd.c_str(), rank.c_str(),
              static_cast<char*>(nullptr));
        _exit(127);
      }
      pids_.push_back(pid);
    }
  }

  // Throws, naming the rank and its op, if a rank has ended before finishing.
  void check_ranks(std::uint32_t iteration) {
    for (std::size_t r = 0; r < pids_.size(); ++r) {
      int status = 0;
      if (pids_[r] <= 0 || waitpid(pids_[r], &status, WNOHANG) != pids_[r]) continue;
      pids_[r] = -1;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && iteration == seg_.header().iterations)
        continue;
      const int op = seg_.current()[r].load();
      const std::string how = WIFSIGNALED(status)
                                  ? fmt::format("was killed by signal {}", WTERMSIG(status))
                                  : fmt::format("exited with status {}", WEXITSTATUS(status));
      throw ValidationError(fmt::format(
          "rank {} {} during iteration {}{}; the other ranks were stopped", r, how, iteration,
          op >= 0 ? fmt::format(", at op {} (step {})", op, seg_.ops()[op].step) : std::string()));
    }
  }

  void wait_exit() {
    for (pid_t& p : pids_) {
      if (p <= 0) continue;
      int status = 0;
      waitpid(p, &status, 0);
      p = -1;
    }
  }

  std::string hung_ranks() const {
    std::string out;
    for (std::size_t r = 0; r < pids_.size(); ++r) {
      const int op = seg_.current()[r].load();
      if (op >= 0)
        out += fmt::format("{}rank {} at op {} (step {})", out.empty() ? "" : ", ", r, op,
                           seg_.ops()[op].step);
    }
    return out.empty() ? "no rank inside an op" : out;
  }

 private:
  std::string name_;
  int fd_ = -1;
  Segment seg_;
  std::vector<pid_t> pids_;
  void (*old_int_)(int) = SIG_DFL;
  void (*old_term_)(int) = SIG_DFL;
};

template <class T>
void random_inputs(const Schedule& s, Buffers<T>& b, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  fill_inputs(s, b, [&](int, std::int64_t) {
    if constexpr (std::is_same_v<T, BFloat16>)
      return BFloat16::from_float(std::uniform_real_distribution<float>(-1, 1)(rng));
    else if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(std::uniform_real_distribution<double>(-1, 1)(rng));
    else
      return static_cast<T>(rng());
  });
}

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

}  // namespace

std::vector<std::string> leftover_segments() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
    if (e.path().filename().string().starts_with(kPrefix))
      out.push_back(e.path().filename().string());
  return out;
}

ShmMeasurement run_on_shm(const Schedule& s, const ShmOptions& options) {
  ShmMeasurement m;
  with_element_type(s.shape.dtype, [&](auto element) {
    using T = decltype(element);
    const int K = s.shape.ranks;
    const std::uint32_t iterations =
        static_cast<std::uint32_t>(options.warmup + options.iterations);
    // Layout.
    Layout h{};
    std::uint64_t at = align(sizeof(Header));
    auto take = [&](std::uint64_t bytes) {
      const std::uint64_t here = at;
      at = align(at + bytes);
      return here;
    };
    h.off_ops = take(s.ops.size() * sizeof(Op));
    h.off_dep_begin = take(s.dep_begin.size() * sizeof(std::uint32_t));
    h.off_deps = take(s.deps.size() * sizeof(OpId));
    h.off_done = take(s.ops.size() * sizeof(std::uint32_t));
    h.off_times =
        take(static_cast<std::uint64_t>(iterations) * s.ops.size() * 2 * sizeof(std::int64_t));
    h.off_current = take(K * sizeof(std::int32_t));
    h.off_buffer_at = take(s.buffer_counts.size() * sizeof(std::uint64_t));
    std::vector<std::uint64_t> buffer_at;
    std::uint64_t data = 0;
    for (std::int64_t n : s.buffer_counts) {
      buffer_at.push_back(data);
      data = align(data + static_cast<std::uint64_t>(n) * sizeof(T));
    }
    h.off_data = take(data);
    h.size = at;

    Run run;
    Segment& seg = run.create(h.size);
    Header& hd = seg.header();
    hd.magic = kMagic;
    hd.ranks = static_cast<std::uint32_t>(K);
    hd.num_ops = static_cast<std::uint32_t>(s.ops.size());
    hd.num_buffers = static_cast<std::uint32_t>(s.num_buffers);
    hd.iterations = iterations;
    hd.kill_rank = options.kill_rank;
    hd.dtype = s.shape.dtype;
    hd.reduce_op = s.shape.reduce_op;
    hd.layout = h;
    auto copy_in = [](void* to, const auto& from) {  // empty vectors may have no data() at all
      if (!from.empty()) std::memcpy(to, from.data(), from.size() * sizeof(from[0]));
    };
    copy_in(seg.ops(), s.ops);
    copy_in(seg.dep_begin(), s.dep_begin);
    copy_in(seg.deps(), s.deps);
    copy_in(seg.buffer_at(), buffer_at);
    for (int r = 0; r < K; ++r) seg.current()[r] = -1;

    // Inputs, and what the replayer says the outputs must be.
    Buffers<T> inputs(s);
    random_inputs(s, inputs, 0x5eed + K);
    Buffers<T> expected = inputs;
    replay_by_step(s, expected);

    run.spawn(options.executable, K);
    for (std::uint32_t it = 1; it <= iterations; ++it) {
      for (int r = 0; r < K; ++r)
        for (int b = 0; b < s.num_buffers; ++b) copy_in(seg.buffer(r, b), inputs.at(r, b));
      hd.finished = 0;
      hd.go.store(it, std::memory_order_release);
      futex_wake_all(hd.go);
      const auto started = std::chrono::steady_clock::now();
      for (std::uint32_t f;
           (f = hd.finished.load(std::memory_order_acquire)) < static_cast<std::uint32_t>(K);) {
        if (g_interrupted)
          throw ValidationError(
              "interrupted; the ranks were stopped and the shared memory removed");
        run.check_ranks(it);
        if (std::chrono::steady_clock::now() - started >
            std::chrono::duration<double>(options.timeout_s))
          throw ValidationError(
              fmt::format("iteration {} did not finish within {} s: {}; the ranks were stopped", it,
                          options.timeout_s, run.hung_ranks()));
        futex_wait(hd.finished, f, 10'000'000);
      }
    }
    run.wait_exit();
    if (s.shape.reduce_op == ReduceOp::Avg && is_reducing(s.shape.op)) {
      // The division by K after the last reduction, as ncclAvg does: done here, once.
      for (int r = 0; r < K; ++r)
        for (const Region& reg : output_regions(s.shape, r)) {
          T* v = reinterpret_cast<T*>(seg.buffer(r, reg.buffer)) + reg.offset;
          for (std::int64_t i = 0; i < reg.count; ++i) v[i] = divide_by(v[i], K);
        }
    }

    // Results: bitwise against the replayer (same schedule, same order of reduction).
    for (int r = 0; r < K; ++r)
      for (const Region& reg : output_regions(s.shape, r)) {
        const T* got = reinterpret_cast<const T*>(seg.buffer(r, reg.buffer)) + reg.offset;
        for (std::int64_t i = 0; i < reg.count; ++i) {
          ++m.checked;
          if (!same_bits(got[i], expected.at(r, reg.buffer)[reg.offset + i])) ++m.wrong;
        }
      }
    // Times of the measured iterations.
    const std::int64_t* times = seg.times();
    const std::size_t n = s.ops.size();
    std::vector<std::pair<double, std::uint32_t>> by_length;
    for (std::uint32_t it = static_cast<std::uint32_t>(options.warmup); it < iterations; ++it) {
      std::int64_t first = INT64_MAX, last = INT64_MIN;
      for (std::size_t op = 0; op < n; ++op) {
        first = std::min(first, times[(it * n + op) * 2]);
        last = std::max(last, times[(it * n + op) * 2 + 1]);
      }
      const double len = n ? (last - first) / 1e9 : 0;
      m.iteration_s.push_back(len);
      by_length.emplace_back(len, it);
    }
    std::sort(by_length.begin(), by_length.end());
    if (!by_length.empty()) {
      const auto [median, it] = by_length[by_length.size() / 2];
      m.median_s = median;
      std::int64_t first = INT64_MAX;
      for (std::size_t op = 0; op < n; ++op) first = std::min(first, times[(it * n + op) * 2]);
      for (std::size_t op = 0; op < n; ++op)
        m.ops.push_back({(times[(it * n + op) * 2] - first) * 1000,
                         (times[(it * n + op) * 2 + 1] - first) * 1000});
    }
  });
  return m;
}

int shm_rank_main(const std::string& segment, int rank) {
  // "fd:N": the runner's descriptor, inherited across exec.
  const int fd = segment.starts_with("fd:") ? std::atoi(segment.c_str() + 3)
                                            : shm_open(segment.c_str(), O_RDWR, 0);
  if (fd < 0) return 3;
  struct stat st {};
  fstat(fd, &st);
  void* p = mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED,
                 fd, 0);
  close(fd);
  if (p == MAP_FAILED) return 3;
  const Segment seg{p, static_cast<std::size_t>(st.st_size)};
  Header& h = seg.header();
  if (h.magic != kMagic) return 3;

  std::vector<OpId> mine;  // the ops this rank runs: those writing into its buffers, in step order
  for (OpId id = 0; id < h.num_ops; ++id)
    if (seg.ops()[id].dst_rank == rank) mine.push_back(id);
  auto run_op = [&](OpId id) {
    with_element_type(h.dtype,
                      [&](auto element) { execute<decltype(element)>(seg, seg.ops()[id]); });
  };
  for (std::uint32_t it = 1; it <= h.iterations; ++it) {
    if (!wait_for(seg, h.go, it)) return 4;
    for (OpId id : mine) {
      seg.current()[rank] = static_cast<std::int32_t>(id);
      if (h.kill_rank == rank) kill(getpid(), SIGKILL);  // fault injection (tests)
      for (std::uint32_t d = seg.dep_begin()[id]; d < seg.dep_begin()[id + 1]; ++d)
        if (!wait_for(seg, seg.done()[seg.deps()[d]], it)) return 4;
      std::int64_t* t = seg.times() + (static_cast<std::size_t>(it - 1) * h.num_ops + id) * 2;
      t[0] = now_ns();
      run_op(id);
      t[1] = now_ns();
      seg.done()[id].store(it, std::memory_order_release);
      futex_wake_all(seg.done()[id]);
    }
    seg.current()[rank] = -1;
    h.finished.fetch_add(1, std::memory_order_acq_rel);
    futex_wake_all(h.finished);
  }
  munmap(p, static_cast<std::size_t>(st.st_size));
  return 0;
}

}  // namespace collsim
