#include "validate/measure/runner.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "core/checked.h"
#include "core/interrupt.h"
#include "core/memory.h"
#include "core/units.h"
#include "replay/replayer.h"
#include "schedule/layout.h"
#include "validate/measure/element_type.h"
#include "validate/measure/measure.h"
#include "validate/measure/rank_device.h"

namespace collsim {
namespace {

constexpr std::uint64_t kMagic = 0x636f6c6c73696d34ull;  // "collsim4"
constexpr const char* kPrefix = "collsim-";

std::uint64_t align(std::uint64_t x) {
  return (x + 63) & ~std::uint64_t{63};
}

// Where everything goes; buffer_at receives each rank's buffer offsets in the data area.
SegmentLayout plan_layout(const Schedule& s, Backend backend, std::uint32_t iterations,
                          std::size_t element, std::vector<std::uint64_t>& buffer_at) {
  SegmentLayout l{};
  std::uint64_t at = align(sizeof(SegmentHeader));
  auto take = [&](std::uint64_t bytes) {
    const std::uint64_t here = at;
    at = align(at + bytes);
    return here;
  };
  const std::uint64_t K = static_cast<std::uint64_t>(s.shape.ranks), n = s.ops.size();
  l.off_ops = take(n * sizeof(Op));
  l.off_dep_begin = take(s.dep_begin.size() * sizeof(DepIndex));
  l.off_deps = take(s.deps.size() * sizeof(OpId));
  l.off_done = take(n * kLineBytes);
  l.off_times = take(std::uint64_t{iterations} * n * 2 * sizeof(std::int64_t));
  l.off_starts = take(std::uint64_t{iterations} * sizeof(std::int64_t));
  l.off_current = take(K * kLineBytes);
  l.off_buffer_at = take(s.buffer_counts.size() * sizeof(std::uint64_t));
  l.off_errors = take(K * kErrorBytes);
  l.off_rank_handles = take(K * kHandleBytes);
  // An event handle per op only where ranks exchange them (cuda-ipc).
  l.off_op_handles = take(backend == Backend::CudaIpc ? n * kHandleBytes : 0);
  l.off_affinity = take(K * 2 * sizeof(std::int32_t));
  std::uint64_t data = 0;
  for (std::int64_t count : s.buffer_counts) {
    buffer_at.push_back(data);
    data = align(data + static_cast<std::uint64_t>(count) * element);
  }
  l.off_data = take(data);
  l.size = at;
  return l;
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
  }

  Segment& create(std::size_t size) {
    static std::atomic<int> counter{0};
    const std::string name = fmt::format("/{}{}-{}", kPrefix, getpid(), counter++);
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
      throw ValidationError(
          fmt::format("cannot create shared memory {}: {}", name, std::strerror(errno)));
    // The name goes at once: the ranks inherit the descriptor instead, so nothing can
    // be left in /dev/shm, whatever happens to this process.
    shm_unlink(name.c_str());
    fd_ = fd;
    if (ftruncate(fd, static_cast<off_t>(size)) != 0)
      throw ValidationError(
          fmt::format("cannot size shared memory to {} bytes: {}", size, std::strerror(errno)));
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    fcntl(fd_, F_SETFD, 0);  // keep it open across exec
    if (p == MAP_FAILED)
      throw ValidationError(fmt::format("cannot map shared memory: {}", std::strerror(errno)));
    seg_ = {p, size};
    return seg_;
  }

  // cpus[r] >= 0: rank r is bound to that CPU before it runs anything (kept across exec).
  void spawn(const std::string& exe, int ranks, const std::vector<int>& cpus) {
    const pid_t parent = getpid();
    for (int r = 0; r < ranks; ++r) {
      const pid_t pid = fork();
      if (pid < 0) throw ValidationError(fmt::format("fork failed: {}", std::strerror(errno)));
      if (pid == 0) {
        // If the runner dies without cleaning up (SIGKILL), its ranks die with it.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);
        if (cpus[r] >= 0) pin_to(r, cpus[r]);
        const std::string rank = std::to_string(r), fd = "fd:" + std::to_string(fd_);
        execl(exe.c_str(), exe.c_str(), "__rank", fd.c_str(), rank.c_str(),
              static_cast<char*>(nullptr));
        _exit(127);
      }
      pids_.push_back(pid);
    }
  }

  // Waits until every rank has started (exec, the segment mapped, its device made): that
  // is no iteration's time, and a --timeout of a few milliseconds stopped iteration 1 while
  // the ranks were still starting. Throws, as run_phase, if a rank ends or `timeout_s` passes.
  void wait_ready(double timeout_s) {
    SegmentHeader& h = seg_.header();
    const auto started = std::chrono::steady_clock::now();
    for (std::uint32_t n; (n = h.ready.load(std::memory_order_acquire)) < h.ranks;) {
      poll_interrupt();
      check_ranks(1);
      if (std::chrono::steady_clock::now() - started > std::chrono::duration<double>(timeout_s))
        throw ValidationError(
            fmt::format("{} of {} ranks started within {} s; the ranks were "
                        "stopped",
                        n, h.ranks, timeout_s));
      futex_wait(h.ready, n, 10'000'000);
    }
  }

  // Posts `phase` and waits for every rank to finish it. Throws, naming the rank and
  // its op, if a rank ends or the phase takes longer than the timeout.
  void run_phase(std::uint32_t phase, double timeout_s) {
    SegmentHeader& h = seg_.header();
    const std::uint32_t K = h.ranks;
    h.finished = 0;
    h.phase.store(phase, std::memory_order_release);
    futex_wake_all(h.phase);
    const auto started = std::chrono::steady_clock::now();
    for (std::uint32_t f; (f = h.finished.load(std::memory_order_acquire)) < K;) {
      // The process's stop request (Ctrl-C, SIGTERM; Python's KeyboardInterrupt): this run
      // had a handler of its own, whose flag nothing read once the last phase was over, so
      // a stop near the end exited 0 and wrote its files. Interrupted unwinds through the
      // Run's destructor (ranks killed, shared memory unmapped), and --out writes nothing.
      poll_interrupt();
      check_ranks(phase);
      if (std::chrono::steady_clock::now() - started > std::chrono::duration<double>(timeout_s))
        throw ValidationError(
            fmt::format("{} did not finish within {} s: {}; the ranks were stopped",
                        phase_name(phase), timeout_s, hung_ranks()));
      futex_wait(h.finished, f, 10'000'000);
    }
  }

  // Lets the ranks release what they hold and exit; they must all exit cleanly.
  void finish(double timeout_s) {
    SegmentHeader& h = seg_.header();
    h.phase.store(h.exit_phase(), std::memory_order_release);
    futex_wake_all(h.phase);
    const auto started = std::chrono::steady_clock::now();
    while (std::any_of(pids_.begin(), pids_.end(), [](pid_t p) { return p > 0; })) {
      check_ranks(h.exit_phase());
      if (std::chrono::steady_clock::now() - started > std::chrono::duration<double>(timeout_s))
        throw ValidationError(fmt::format(
            "ranks did not exit within {} s after the run; they were killed", timeout_s));
      usleep(1000);
    }
  }

 private:
  std::string phase_name(std::uint32_t phase) const {
    const SegmentHeader& h = seg_.header();
    if (phase <= h.iterations) return fmt::format("iteration {}", phase);
    return phase == h.collect_phase() ? "collecting the outputs" : "releasing the buffers";
  }

  void check_ranks(std::uint32_t phase) {
    const SegmentHeader& h = seg_.header();
    for (std::size_t r = 0; r < pids_.size(); ++r) {
      int status = 0;
      if (pids_[r] <= 0 || waitpid(pids_[r], &status, WNOHANG) != pids_[r]) continue;
      pids_[r] = -1;
      if (phase == h.exit_phase() && WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
      const int rank = static_cast<int>(r);
      const std::string error(seg_.error(rank), strnlen(seg_.error(rank), kErrorBytes));
      const std::string how = !error.empty() ? "failed: " + error
                              : WIFSIGNALED(status)
                                  ? fmt::format("was killed by signal {}", WTERMSIG(status))
                                  : fmt::format("exited with status {}", WEXITSTATUS(status));
      const int op = seg_.current(r).load();
      const std::string when =
          h.ready.load() < h.ranks ? "while setting up" : "during " + phase_name(phase);
      throw ValidationError(fmt::format(
          "rank {} {} ({}{}); the other ranks were stopped", rank, how, when,
          op >= 0 ? fmt::format(", at op {} of step {}", op, seg_.op(op).step) : std::string()));
    }
  }

  std::string hung_ranks() const {
    std::string out;
    for (std::size_t r = 0; r < pids_.size(); ++r) {
      const int op = seg_.current(r).load();
      const char* sep = out.empty() ? "" : ", ";
      if (op >= 0)
        out += fmt::format("{}rank {} at op {} (step {})", sep, r, op, seg_.op(op).step);
      else if (stopped(pids_[r]))  // between ops, paused by a signal: it was named by no one
        out +=
            fmt::format("{}rank {} stopped between ops (its process is paused: SIGSTOP?)", sep, r);
    }
    return out.empty() ? "no rank inside an op" : out;
  }

  // Whether the process is stopped by a signal (state T or t in /proc/PID/stat).
  static bool stopped(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto name_end = line.rfind(')');  // the name may hold spaces and parentheses
    if (name_end == std::string::npos || name_end + 2 >= line.size()) return false;
    const char state = line[name_end + 2];
    return state == 'T' || state == 't';
  }

  // In the child, before exec: a failure is the rank's error, reported by the runner.
  void pin_to(int rank, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) == 0) return;
    std::snprintf(seg_.error(rank), kErrorBytes, "cannot bind to CPU %d: %s (try --no-pin)", cpu,
                  std::strerror(errno));
    _exit(1);
  }

  int fd_ = -1;
  Segment seg_;
  std::vector<pid_t> pids_;
};

// Uniform in [-1, 1) from the top 53 bits of one draw: the same inputs with every standard
// library (uniform_real_distribution's values are the library's own), and no logarithm per
// element, which libstdc++'s generate_canonical takes unoptimised (a quarter of a
// sanitized `collsim validate`).
double minus_one_to_one(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1p-52 - 1.0;
}

template <class T>
void random_inputs(const Schedule& s, Buffers<T>& b, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  fill_inputs(s, b, [&](int, std::int64_t) {
    if constexpr (std::is_same_v<T, BFloat16>)
      return BFloat16::from_float(static_cast<float>(minus_one_to_one(rng)));
    else if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(minus_one_to_one(rng));
    else
      return static_cast<T>(rng());
  });
}

void copy_in(void* to, const auto& from) {  // empty vectors may have no data() at all
  if (!from.empty()) std::memcpy(to, from.data(), from.size() * sizeof(from[0]));
}

// Every output element, bitwise against the replayer's (same schedule, same order of
// reduction), after the division of an average, which ncclAvg also does once at the end.
template <class T>
void check_outputs(const Schedule& s, const Segment& seg, const Buffers<T>& expected,
                   Measurement& m) {
  const int K = s.shape.ranks;
  const bool average = s.shape.reduce_op == ReduceOp::Avg && is_reducing(s.shape.op);
  for (int r = 0; r < K; ++r)
    for (const Region& reg : output_regions(s.shape, r)) {
      T* got = reinterpret_cast<T*>(seg.buffer(r, reg.buffer)) + reg.offset;
      for (std::int64_t i = 0; i < reg.count; ++i) {
        if (average) got[i] = divide_by(got[i], K);
        ++m.checked;
        if (std::memcmp(&got[i], &expected.at(r, reg.buffer)[reg.offset + i], sizeof(T)) != 0)
          ++m.wrong;
      }
    }
}

// The iteration at quantile q of the lengths stands for the run: its length and its op
// timings.
void settle_time(Measurement& m, double q) {
  if (m.iteration_s.empty()) return;
  std::vector<std::pair<double, std::size_t>> by_length;
  for (std::size_t i = 0; i < m.iteration_s.size(); ++i)
    by_length.emplace_back(m.iteration_s[i], i);
  std::sort(by_length.begin(), by_length.end());
  const std::size_t at = quantile_index(by_length.size(), q);
  m.time_s = by_length[at].first;
  m.ops = m.iteration_ops[by_length[at].second];
}

// An iteration is timed from the instant every rank was released, as the simulator
// starts every rank at zero: timed from its first op instead, it would leave out the
// first rank's way from the release to its op and keep the others' (the ranks' skew).
// A GPU's op times come through an epoch estimate, which may put one a little earlier.
std::int64_t iteration_origin(const Segment& seg, std::uint32_t it) {
  const std::int64_t* t = seg.iteration_times(it);
  std::int64_t first = seg.iteration_start(it);
  for (std::size_t op = 0; op < seg.header().num_ops; ++op) first = std::min(first, t[2 * op]);
  return first;
}

// The measured iterations' lengths and op timings, and the one that stands for them.
void collect_times(const Schedule& s, const Segment& seg, const RunOptions& options,
                   Measurement& m) {
  const std::size_t n = s.ops.size();
  const auto iterations = static_cast<std::uint32_t>(options.warmup + options.iterations);
  for (std::uint32_t it = static_cast<std::uint32_t>(options.warmup); it < iterations; ++it) {
    const std::int64_t* t = seg.iteration_times(it);
    std::int64_t first = iteration_origin(seg, it), last = first;
    for (std::size_t op = 0; op < n; ++op) last = std::max(last, t[2 * op + 1]);
    m.iteration_s.push_back(static_cast<double>(last - first) / 1e9);
    auto& ops = m.iteration_ops.emplace_back();
    for (std::size_t op = 0; op < n; ++op)
      ops.push_back({(t[2 * op] - first) * 1000, (t[2 * op + 1] - first) * 1000});
  }
  settle_time(m, options.quantile);
}

std::unique_ptr<RankDevice> make_device(const Segment& seg, int rank) {
  switch (seg.header().backend) {
    case Backend::Shm:
      return make_shm_device(seg, rank);
    case Backend::CudaIpc:
#ifdef COLLSIM_HAVE_CUDA
      return make_cuda_ipc_device(seg, rank);
#else
      break;
#endif
  }
  throw ValidationError("this collsim was built without the cuda-ipc transport");
}

// The ops a rank runs, in op order (step order: dependencies point to earlier steps,
// so running them in this order on every rank cannot deadlock).
std::vector<OpId> ops_run_by(const Segment& seg, int rank) {
  std::vector<OpId> mine;
  for (OpId id = 0; id < seg.header().num_ops; ++id)
    if (seg.op(id).executor() == rank) mine.push_back(id);
  return mine;
}

// A barrier that releases every rank at the same instant: the last to arrive sets a
// start time a little ahead, and all spin on the clock until it. Released by the
// barrier alone, the ranks that waited would start a wake-up (~0.5 us) after the last
// one, a skew the simulator, whose ranks all start at zero, has no term for.
bool start_together(const Segment& seg, std::uint32_t it) {
  SegmentHeader& h = seg.header();
  constexpr std::int64_t kLeadNs = 2000;  // enough for a spinning rank to see the time
  if (h.loaded.fetch_add(1, std::memory_order_seq_cst) + 1 == it * h.ranks) {
    const std::int64_t start = monotonic_ns() + kLeadNs;
    seg.iteration_start(it - 1) = start;  // read by the runner once the iteration is over
    h.start_ns.store(start, std::memory_order_seq_cst);
    h.go.store(it, std::memory_order_seq_cst);
    wake(seg, h.go);
  } else if (!wait_for(seg, h.go, it)) {
    return false;
  }
  const std::int64_t start = h.start_ns.load(std::memory_order_seq_cst);
  while (monotonic_ns() < start) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  return true;
}

// One iteration of the schedule on this rank. False if the runner called the run off.
bool run_iteration(const Segment& seg, RankDevice& device, const std::vector<OpId>& mine, int rank,
                   std::uint32_t it) {
  SegmentHeader& h = seg.header();
  device.load_inputs();
  // Nobody may write into or read from a peer's buffers before that peer's inputs are in.
  if (!start_together(seg, it)) return false;
  std::int64_t* times = seg.iteration_times(it - 1);
  for (OpId id : mine) {
    seg.current(rank) = static_cast<std::int32_t>(id);
    if (h.kill_rank == rank) kill(getpid(), SIGKILL);  // fault injection (tests)
    if (h.fail_rank == rank) throw ValidationError("injected failure");
    for (DepIndex d = seg.dep_begin()[id]; d < seg.dep_begin()[id + 1]; ++d)
      if (!wait_for(seg, seg.done(seg.deps()[d]), it)) return false;
    device.run(id, times);
    seg.done(id).store(it, std::memory_order_seq_cst);
    wake(seg, seg.done(id));
  }
  device.end_iteration(times);
  seg.current(rank) = -1;
  return true;
}

// What the kernel holds for this process: how many CPUs it may use, and the lowest.
void record_affinity(const Segment& seg, int rank) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::int32_t* out = seg.affinity(rank);
  out[0] = out[1] = -1;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  out[0] = CPU_COUNT(&set);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) {
      out[1] = c;
      break;
    }
}

// The last rank to finish a phase wakes the runner; earlier ones do not, or the runner
// would take a core from a rank still running its ops (a broadcast's root copied at
// a third of its speed while the idle rank's wake-up let the runner run).
void finish_phase(SegmentHeader& h) {
  if (h.finished.fetch_add(1, std::memory_order_acq_rel) + 1 == h.ranks) futex_wake_all(h.finished);
}

int rank_loop(const Segment& seg, int rank) {
  SegmentHeader& h = seg.header();
  record_affinity(seg, rank);
  const std::unique_ptr<RankDevice> device = make_device(seg, rank);
  arrive(seg, h.ready);
  if (!wait_for(seg, h.ready, h.ranks)) return 4;
  device->connect();
  const std::vector<OpId> mine = ops_run_by(seg, rank);
  for (std::uint32_t it = 1; it <= h.iterations; ++it) {
    if (!wait_for(seg, h.phase, it) || !run_iteration(seg, *device, mine, rank, it)) return 4;
    finish_phase(h);
  }
  if (!wait_for(seg, h.phase, h.collect_phase())) return 4;
  device->collect_outputs();
  finish_phase(h);
  if (!wait_for(seg, h.phase, h.exit_phase())) return 4;
  return 0;  // the device goes now: every peer has stopped using this rank's memory
}

}  // namespace

std::string_view name_of(Backend b) {
  return b == Backend::CudaIpc ? "cuda-ipc" : "shm";
}

std::optional<Backend> backend_from_name(std::string_view name) {
  if (name == "shm") return Backend::Shm;
  if (name == "cuda-ipc") return Backend::CudaIpc;
  return std::nullopt;
}

std::string backend_device(Backend b) {
  if (b == Backend::Shm) return cpu_name();
#ifdef COLLSIM_HAVE_CUDA
  return cuda_device_summary();
#else
  throw ValidationError(
      "--backend cuda-ipc: this collsim was built without a CUDA toolkit, so no CUDA device is "
      "usable; rebuild where nvcc is found, or use --backend shm");
#endif
}

SharedUnits backend_units(Backend b) {
#ifdef COLLSIM_HAVE_CUDA
  if (b == Backend::CudaIpc) return {cuda_device_count(), "GPU"};
#endif
  if (b == Backend::CudaIpc) return {0, "GPU"};
  return {static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)), "CPU core"};
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) out.push_back(c);
  if (out.empty()) out.push_back(0);  // no mask readable: one CPU is the safe guess
  return out;
}

Pinning plan_pinning(int ranks, const std::vector<int>& allowed, bool pin, int gpus) {
  Pinning p;
  p.pinned = pin;
  p.allowed = static_cast<int>(allowed.size());
  p.gpus = gpus;
  for (int r = 0; r < ranks; ++r)
    p.cpus.push_back(pin ? allowed[static_cast<std::size_t>(r) % allowed.size()] : -1);
  const bool cpus_shared = ranks > p.allowed, gpus_shared = gpus > 0 && ranks > gpus;
  p.shared = cpus_shared || gpus_shared;
  if (!pin)
    p.note = fmt::format("{} ranks not pinned (--no-pin): the scheduler places them on {} CPU{}",
                         ranks, p.allowed, p.allowed == 1 ? "" : "s");
  else if (cpus_shared)
    p.note = fmt::format(
        "{} ranks on {} CPU{}: pinned round-robin (rank r on CPU {} of the allowed set), so "
        "ranks share cores and take turns",
        ranks, p.allowed, p.allowed == 1 ? "" : "s", "r mod " + std::to_string(p.allowed));
  else
    p.note = fmt::format("{} ranks pinned one per CPU core (CPUs {})", ranks,
                         fmt::join(p.cpus.begin(), p.cpus.end(), ","));
  if (gpus_shared)
    p.note += fmt::format("; {} ranks on {} GPU{}: rank r on GPU r mod {}, so ranks share GPUs",
                          ranks, gpus, gpus == 1 ? "" : "s", gpus);
  else if (gpus > 0)
    p.note += "; one GPU per rank (rank r on GPU r)";
  return p;
}

std::vector<std::string> leftover_segments() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
    if (e.path().filename().string().starts_with(kPrefix))
      out.push_back(e.path().filename().string());
  return out;
}

std::size_t quantile_index(std::size_t n, double q) {
  return static_cast<std::size_t>(std::clamp(q, 0.0, 1.0) * static_cast<double>(n - 1) + 0.5);
}

std::string quantile_name(double q) {
  return q == 0.5 ? "median" : fmt::format("p{:g}", q * 100);
}

int effective_rounds(const RunOptions& options) {
  return std::clamp(options.rounds, 1, std::max(1, options.iterations));
}

std::vector<Measurement> run_in_rounds(const std::vector<const Schedule*>& schedules,
                                       const RunOptions& options,
                                       const std::vector<std::string>& names) {
  const int rounds = effective_rounds(options);
  std::vector<Measurement> out(schedules.size());
  for (int round = 0; round < rounds; ++round) {
    RunOptions part = options;
    // Iterations spread evenly; the first rounds take the remainder.
    part.iterations = options.iterations / rounds + (round < options.iterations % rounds ? 1 : 0);
    for (std::size_t i = 0; i < schedules.size(); ++i) {
      Measurement m;
      try {
        m = run_for_real(*schedules[i], part);
      } catch (const ValidationError& e) {  // which of a scenario's collectives, and when
        if (names.empty()) throw;
        throw ValidationError(fmt::format(
            "{} [collective \"{}\"{}]", e.what(), names[i],
            rounds > 1 ? fmt::format(", round {} of {}", round + 1, rounds) : std::string()));
      }
      Measurement& into = out[i];
      into.iteration_s.insert(into.iteration_s.end(), m.iteration_s.begin(), m.iteration_s.end());
      for (auto& ops : m.iteration_ops) into.iteration_ops.push_back(std::move(ops));
      into.checked += m.checked;
      into.wrong += m.wrong;
      into.pinning = std::move(m.pinning);
      into.affinity = std::move(m.affinity);
    }
  }
  for (auto& m : out) settle_time(m, options.quantile);
  return out;
}

std::string real_run_problem(const Schedule& s, const RunOptions& options) {
  if (!runs_for_real(s.shape.dtype)) return real_run_types_problem(s.shape.dtype);
  return with_element_type(s.shape.dtype, [&](auto element) -> std::string {
    std::vector<std::uint64_t> buffer_at;
    // One round's segment: its warm-up and its share of the iterations (run_in_rounds).
    const int rounds = effective_rounds(options);
    const auto iterations =
        static_cast<std::uint32_t>(options.warmup + (options.iterations + rounds - 1) / rounds);
    const SegmentLayout layout =
        plan_layout(s, options.backend, iterations, sizeof(element), buffer_at);
    const std::uint64_t data = layout.size - layout.off_data;
    const std::uint64_t needed = layout.size + 2 * data;  // + the runner's inputs and expected
    const std::uint64_t available = memory_available();
    if (available == 0 || needed <= available) return {};
    return fmt::format(
        "running it for real needs about {} of memory (its buffers twice in the "
        "runner, and once more shared with the ranks), more than the {} this "
        "machine has available; validate it at a smaller \"bytes\"",
        format_bytes(static_cast<std::int64_t>(needed)),
        format_bytes(static_cast<std::int64_t>(available)));
  });
}

// The least time the ranks have to start, whatever the iterations' timeout.
constexpr double kStartUpSeconds = 60;

Measurement run_for_real(const Schedule& s, const RunOptions& options) {
  backend_device(options.backend);  // refuses here, once, rather than in every rank
  Measurement m;
  with_element_type(s.shape.dtype, [&](auto element) {
    using T = decltype(element);
    const int K = s.shape.ranks;
    const auto iterations = static_cast<std::uint32_t>(options.warmup + options.iterations);
    std::vector<std::uint64_t> buffer_at;
    const SegmentLayout layout = plan_layout(s, options.backend, iterations, sizeof(T), buffer_at);

    Run run;
    Segment& seg = run.create(layout.size);
    SegmentHeader& h = seg.header();
    h.magic = kMagic;
    h.backend = options.backend;
    h.ranks = static_cast<std::uint32_t>(K);
    h.num_ops = checked_count<std::uint32_t>(s.ops.size(), "ops run for real");
    h.num_buffers = static_cast<std::uint32_t>(s.num_buffers);
    for (bool network : {false, true}) {
      const auto [n, stride] = s.switch_groups(network);
      h.switch_group[network] = static_cast<std::uint32_t>(n);
      h.switch_stride[network] = static_cast<std::uint32_t>(stride);
    }
    h.iterations = iterations;
    h.kill_rank = options.kill_rank;
    h.fail_rank = options.fail_rank;
    h.dtype = s.shape.dtype;
    h.reduce_op = s.shape.reduce_op;
    const int gpus = options.backend == Backend::CudaIpc ? backend_units(options.backend).count : 0;
    m.pinning = plan_pinning(K, allowed_cpus(), options.pin, gpus);
    // Spinning only helps when every rank has a core to spin on.
    h.spin_ns = K <= m.pinning.allowed ? 20'000 : 0;
    h.layout = layout;
    copy_in(seg.ops(), s.ops);
    copy_in(seg.dep_begin(), s.dep_begin);
    copy_in(seg.deps(), s.deps);
    copy_in(seg.buffer_at(), buffer_at);
    for (int r = 0; r < K; ++r) seg.current(r) = -1;

    // Inputs, and what the replayer says the outputs must be.
    Buffers<T> inputs(s);
    random_inputs(s, inputs, 0x5eed + K);
    Buffers<T> expected = inputs;
    replay_by_step(s, expected);

    run.spawn(options.executable, K, m.pinning.cpus);
    run.wait_ready(std::max(options.timeout_s, kStartUpSeconds));
    for (std::uint32_t it = 1; it <= iterations; ++it) {
      for (int r = 0; r < K; ++r)
        for (int b = 0; b < s.num_buffers; ++b) copy_in(seg.buffer(r, b), inputs.at(r, b));
      run.run_phase(it, options.timeout_s);
    }
    run.run_phase(h.collect_phase(), options.timeout_s);
    run.finish(options.timeout_s);
    check_outputs(s, seg, expected, m);
    collect_times(s, seg, options, m);
    for (int r = 0; r < K; ++r) m.affinity.push_back({seg.affinity(r)[0], seg.affinity(r)[1]});
  });
  return m;
}

int rank_main(const std::string& segment, int rank) {
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
  if (seg.header().magic != kMagic || rank < 0 || rank >= static_cast<int>(seg.header().ranks))
    return 3;
  try {
    return rank_loop(seg, rank);
  } catch (const std::exception& e) {
    // The runner reads this when it sees the rank gone, and names it in its error.
    std::snprintf(seg.error(rank), kErrorBytes, "%s", e.what());
    return 5;
  }
}

}  // namespace collsim
