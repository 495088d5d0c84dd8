// Validation on this machine: schedules run for real over shared memory between
// processes, checked against the replayer; faults cleaned up; α-β fitting.
#include <dirent.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "helpers.h"
#include "scenario/scenario.h"
#include "schedule/builder.h"
#include "simulate/run_scenario.h"
#include "validate/measure/calibrate.h"
#include "validate/compare/compare.h"
#include "validate/measure/runner.h"
#include "validate/measure/validation_error.h"

namespace fs = std::filesystem;
using namespace collsim;
using namespace collsim::test;

namespace {

RunOptions options() {
  RunOptions o;
  o.iterations = 2;
  o.warmup = 1;
  o.timeout_s = 30;
  o.executable = COLLSIM_EXE;
  return o;
}

std::string run(const std::string& cmd, int* status) {
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int s = pclose(pipe);
  *status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  return out;
}

// The parent of a process, from /proc/PID/stat ("pid (comm) state ppid ..."); 0 if gone.
pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');  // the command may hold spaces and parentheses
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  char state = 0;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

bool descends_from_us(pid_t pid) {
  for (int hops = 0; pid > 1 && hops < 64; ++hops) {
    pid = parent_of(pid);
    if (pid == ::getpid()) return true;
  }
  return false;
}

// A rank orphaned by a killed runner would be reparented to init and escape
// rank_processes(), so this process adopts every orphan of what it starts.
void adopt_orphans() {
  static const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  REQUIRE(subreaper);
}

// Our own processes whose command line names the rank entry point: none may outlive a
// run. Only ours: another validate running on the machine is not this test's leak.
int rank_processes() {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream cmd(e.path() / "cmdline");
    std::string s;
    std::getline(cmd, s, '\0');
    std::string arg1;
    std::getline(cmd, arg1, '\0');
    if (arg1 != "__rank") continue;
    const std::string name = e.path().filename().string();
    n += descends_from_us(static_cast<pid_t>(std::stoi(name)));
  }
  return n;
}

}  // namespace

// Segments that appeared during a test and are still there (others' may exist before).
std::vector<std::string> new_segments(const std::vector<std::string>& before) {
  std::vector<std::string> out;
  for (const auto& s : leftover_segments())
    if (std::find(before.begin(), before.end(), s) == before.end()) out.push_back(s);
  return out;
}

// Everything that starts rank processes is one test case (sections), so that a parallel
// ctest never runs two of them at once: the checks count rank processes system-wide.
TEST_CASE("shm transport: real runs, faults, the validate and compare commands") {
  adopt_orphans();
  SECTION("every algorithm runs for real and matches the replayer bitwise") {
    const auto before = leftover_segments();
    struct Case {
      CollectiveOp op;
      const char* algorithm;
      int K;
      DType dtype;
    };
    const Case cases[] = {{CollectiveOp::AllReduce, "ring", 4, DType::F32},
                          {CollectiveOp::AllReduce, "ring", 3, DType::BF16},
                          {CollectiveOp::AllReduce, "double_binary_tree", 5, DType::F64},
                          {CollectiveOp::AllReduce, "halving_doubling", 6, DType::I32},
                          {CollectiveOp::AllReduce, "naive", 4, DType::I64},
                          {CollectiveOp::ReduceScatter, "ring", 4, DType::F32},
                          {CollectiveOp::AllGather, "ring", 2, DType::F32},
                          {CollectiveOp::Broadcast, "binomial_tree", 5, DType::F32},
                          {CollectiveOp::AllToAll, "pairwise", 4, DType::F32}};
    for (const auto& c : cases) {
      const Schedule s = generate(c.op, c.algorithm, shape_of(c.op, c.K, 10'003, c.dtype));
      INFO(c.algorithm << " " << name_of(c.op) << " K=" << c.K << " " << name_of(c.dtype));
      const Measurement m = run_for_real(s, options());
      CHECK(m.wrong == 0);
      CHECK(m.checked > 0);
      CHECK(m.iteration_s.size() == 2);
      CHECK(m.time_s > 0);
      CHECK(m.ops.size() == s.size());
    }
    // A barrier: nothing to check, but it must run, and time its messages.
    const Schedule barrier =
        generate(CollectiveOp::Barrier, "dissemination", shape_of(CollectiveOp::Barrier, 5, 0));
    const Measurement b = run_for_real(barrier, options());
    CHECK(b.wrong == 0);
    CHECK(b.checked == 0);
    CHECK(b.ops.size() == barrier.size());
    CHECK(b.time_s > 0);
    CollectiveShape avg = shape_of(CollectiveOp::AllReduce, 3, 1001, DType::F32);
    avg.reduce_op = ReduceOp::Avg;
    CHECK(run_for_real(generate(CollectiveOp::AllReduce, "ring", avg), options()).wrong == 0);
    CHECK(new_segments(before).empty());
  }

  SECTION("rounds: iterations split over rounds and pooled, each timed from the release") {
    const Schedule ring =
        generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, 3, 4099));
    const Schedule bcast = generate(CollectiveOp::Broadcast, "binomial_tree",
                                    shape_of(CollectiveOp::Broadcast, 3, 777));
    RunOptions o = options();
    o.iterations = 7;
    o.rounds = 3;
    const std::int64_t checked_once = run_for_real(ring, options()).checked;
    const std::vector<Measurement> ms = run_in_rounds({&ring, &bcast}, o);
    REQUIRE(ms.size() == 2);
    for (const Measurement& m : ms) {
      CHECK(m.wrong == 0);
      REQUIRE(m.iteration_s.size() == 7);  // 3 + 2 + 2
      REQUIRE(m.iteration_ops.size() == 7);
      std::vector<double> sorted = m.iteration_s;
      std::sort(sorted.begin(), sorted.end());
      CHECK(m.time_s == sorted[3]);
      // The ops reported are those of an iteration that took the median time (two iterations
      // may tie at the clock's resolution, so any of them).
      const auto same_ops = [&](const std::vector<OpTiming>& ops) {
        if (ops.size() != m.ops.size()) return false;
        for (std::size_t i = 0; i < ops.size(); ++i)
          if (ops[i].start != m.ops[i].start || ops[i].end != m.ops[i].end) return false;
        return true;
      };
      bool median_ops_reported = false;
      for (std::size_t i = 0; i < m.iteration_s.size(); ++i)
        median_ops_reported |= m.iteration_s[i] == m.time_s && same_ops(m.iteration_ops[i]);
      CHECK(median_ops_reported);
      // From the release: no op starts before it, the iteration ends with its last op,
      // and the first op of an iteration is not its origin every time (as it would be
      // if iterations were timed from their first op).
      bool some_start_after_release = false;
      for (std::size_t i = 0; i < m.iteration_ops.size(); ++i) {
        Time first = INT64_MAX, last = 0;
        for (const OpTiming& t : m.iteration_ops[i]) {
          CHECK(t.start >= 0);
          first = std::min(first, t.start);
          last = std::max(last, t.end);
        }
        some_start_after_release |= first > 0;
        CHECK(std::abs(to_seconds(last) - m.iteration_s[i]) < 1e-9);
      }
      CHECK(some_start_after_release);
    }
    CHECK(ms[0].checked == 3 * checked_once);  // every round checks its result
    // The quantile picks the iteration that stands for the run: 0 the fastest, 1 the slowest.
    o.rounds = 2;
    o.quantile = 0;
    const Measurement fastest = run_in_rounds({&ring}, o).front();
    CHECK(fastest.time_s ==
          *std::min_element(fastest.iteration_s.begin(), fastest.iteration_s.end()));
    o.quantile = 1;
    const Measurement slowest = run_in_rounds({&ring}, o).front();
    CHECK(slowest.time_s ==
          *std::max_element(slowest.iteration_s.begin(), slowest.iteration_s.end()));
    CHECK(quantile_name(0.5) == "median");
    CHECK(quantile_name(0.25) == "p25");
    CHECK(effective_rounds(o) == 2);
    o.rounds = 50;
    CHECK(effective_rounds(o) == 7);  // never a round without an iteration
  }

  SECTION("nvls: the issuing rank does the switch's reduce and multicast, bitwise") {
    for (const DType dtype : {DType::F32, DType::BF16, DType::I64}) {
      AlgorithmOptions o;
      o.segments = 2;
      const Schedule s = generate(CollectiveOp::AllReduce, "nvls",
                                  shape_of(CollectiveOp::AllReduce, 5, 10'003, dtype), o);
      INFO(name_of(dtype));
      const Measurement m = run_for_real(s, options());
      CHECK(m.wrong == 0);
      CHECK(m.checked > 0);
      CHECK(m.ops.size() == s.size());
    }
  }

  SECTION("nvls_tree: switch ops inside each host, a tree across hosts") {
    AlgorithmOptions o;
    o.segments = 2;
    o.hosts = {0, 0, 0, 1, 1, 1, 2, 2, 2};
    const Schedule s = generate(CollectiveOp::AllReduce, "nvls_tree",
                                shape_of(CollectiveOp::AllReduce, 9, 4'099), o);
    REQUIRE(s.switch_group == 3);
    const Measurement m = run_for_real(s, options());
    CHECK(m.wrong == 0);
    CHECK(m.checked > 0);
  }

  SECTION("collnet: the issuing head does the network switch's all-reduce of its rail") {
    for (const char* name : {"collnet_direct", "collnet_chain"}) {
      AlgorithmOptions o;
      o.segments = 2;
      o.channels = 3;
      o.hosts = {0, 0, 0, 1, 1, 1, 2, 2, 2};
      const Schedule s =
          generate(CollectiveOp::AllReduce, name, shape_of(CollectiveOp::AllReduce, 9, 4'099), o);
      INFO(name);
      REQUIRE(s.network_stride == 3);
      const Measurement m = run_for_real(s, options());
      CHECK(m.wrong == 0);
      CHECK(m.checked > 0);
    }
  }

  SECTION("a rank killed mid-collective stops the run, names it, and leaves nothing behind") {
    const auto before = leftover_segments();
    const Schedule s =
        generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, 4, 4000));
    // A rank killed by a signal, and one that fails with a message the runner passes on.
    struct Fault {
      int kill_rank, fail_rank;
      const char* message;
    };
    for (const Fault& f :
         {Fault{2, -1, "rank 2 was killed by signal 9 (during iteration 1, at op"},
          Fault{-1, 3, "rank 3 failed: injected failure (during iteration 1, at op"}}) {
      RunOptions o = options();
      o.kill_rank = f.kill_rank;
      o.fail_rank = f.fail_rank;
      try {
        run_for_real(s, o);
        FAIL("the run did not fail");
      } catch (const ValidationError& e) {
        CHECK_THAT(e.what(), Catch::StartsWith(f.message));
      }
      CHECK(new_segments(before).empty());
      CHECK(rank_processes() == 0);
    }
  }

  SECTION("validate command: table with #wrong, measured files, fault exit status") {
    const fs::path out =
        fs::temp_directory_path() / ("collsim-validate-" + std::to_string(::getpid()));
    fs::remove_all(out);
    const std::string scenario = std::string(COLLSIM_SOURCE_DIR) + "/scenarios/validate-shm.json";
    const auto before = leftover_segments();
    int status = -1;
    const std::string table =
        run(std::string(COLLSIM_EXE) + " validate " + scenario + " --iters 2 --out " + out.string(),
            &status);
    CHECK(status == 0);
    CHECK_THAT(table, Catch::Contains("#wrong"));
    // 4 ranks: said to share the cores when there are fewer, in the table and the file.
    const bool shared = allowed_cpus().size() < 4;
    CHECK((table.find("ranks share cores") != std::string::npos) == shared);
    const auto measured = nlohmann::json::parse(std::ifstream(out / "measured.json"));
    CHECK(measured["pinning"]["ranks_share_units"] == shared);
    CHECK(measured["pinning"]["pinned"] == true);
    for (const auto& c : measured["collectives"]) CHECK(c["wrong"] == 0);
    // compare against the simulator
    const std::string cmp =
        run(std::string(COLLSIM_EXE) + " compare " + scenario + " --measured " +
                (out / "measured.json").string() + " --out " + (out / "cmp").string(),
            &status);
    CHECK(status == 0);
    CHECK_THAT(cmp, Catch::Contains("mean absolute percentage error"));
    CHECK(fs::exists(out / "cmp" / "compare_timeline.json"));
    const std::string fault =
        run("COLLSIM_VALIDATE_KILL_RANK=1 " + std::string(COLLSIM_EXE) + " validate " + scenario,
            &status);
    CHECK(status == 1);
    CHECK_THAT(fault, Catch::Contains("validation failed: rank 1 was killed"));
    // With --out: the folder made for it before the run is gone again, nothing written.
    run("COLLSIM_VALIDATE_KILL_RANK=1 " + std::string(COLLSIM_EXE) + " validate " + scenario +
            " --out " + (out / "killed" / "sub").string(),
        &status);
    CHECK(status == 1);
    CHECK_FALSE(fs::exists(out / "killed"));
    // Which of the scenario's collectives it was.
    CHECK_THAT(fault, Catch::Contains("[collective \""));
    // A --out that cannot be written is said before anything is measured.
    std::ofstream(out / "a-file") << "x";
    const std::string bad_out = run(std::string(COLLSIM_EXE) + " validate " + scenario +
                                        " --iters 2 --out " + (out / "a-file" / "sub").string(),
                                    &status);
    CHECK(status == 2);
    CHECK_THAT(bad_out,
               Catch::Contains("--out: cannot create folder") && !Catch::Contains("#wrong"));
    // Ranks placed for each collective's own count: a note per placement, naming its own.
    std::ofstream(out / "two-four.json")
        << R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "10GB/s"},
              "collectives": [{"name": "two", "op": "all_reduce", "bytes": "1KiB",
                               "ranks": [0, 1]},
                              {"name": "four", "op": "all_reduce", "bytes": "1KiB"}]})";
    const std::string placed = run(
        std::string(COLLSIM_EXE) + " validate " + (out / "two-four.json").string() + " --iters 2",
        &status);
    CHECK(status == 0);
    CHECK_THAT(placed, Catch::Contains("# 2 ranks ") && Catch::Contains(" (two)\n") &&
                           Catch::Contains("# 4 ranks ") && Catch::Contains(" (four)\n"));
    // So is a collective no real run can store, at its JSON path, before the others run.
    std::ofstream(out / "f16.json")
        << R"({"topology": {"preset": "switch", "gpus": 2, "bandwidth": "10GB/s"},
              "collectives": [{"name": "ok", "op": "all_reduce", "bytes": "1KiB"},
                              {"name": "half", "op": "all_reduce", "bytes": "1KiB",
                               "dtype": "float16"}]})";
    const std::string f16 =
        run(std::string(COLLSIM_EXE) + " validate " + (out / "f16.json").string() + " --out " +
                (out / "new" / "sub").string(),
            &status);
    CHECK(status == 2);
    CHECK_THAT(f16, Catch::Contains("collectives[1].dtype: real runs support float32, float64, "
                                    "int32, int64 and bfloat16, not float16") &&
                        !Catch::Contains("#wrong"));
    CHECK_FALSE(fs::exists(out / "new"));  // refused before any folder was made
    CHECK(new_segments(before).empty());
    CHECK(rank_processes() == 0);
    const std::string fail =
        run("COLLSIM_VALIDATE_FAIL_RANK=0 " + std::string(COLLSIM_EXE) + " validate " + scenario,
            &status);
    CHECK(status == 1);
    CHECK_THAT(fail, Catch::Contains("validation failed: rank 0 failed: injected failure"));
    // Without a GPU (or a toolkit) cuda-ipc refuses in one line; with one it must run right.
    const std::string cuda =
        run(std::string(COLLSIM_EXE) + " validate " + scenario + " --backend cuda-ipc", &status);
    if (cuda.find("no CUDA device") != std::string::npos ||
        cuda.find("without a CUDA toolkit") != std::string::npos) {
      CHECK(status == 1);
      CHECK_THAT(cuda, Catch::StartsWith("collsim: validation failed: --backend cuda-ipc: "));
      CHECK(std::count(cuda.begin(), cuda.end(), '\n') == 1);
    } else {
      INFO(cuda);
      CHECK(status == 0);
      CHECK_THAT(cuda, Catch::Contains("#wrong"));
    }
    CHECK(new_segments(before).empty());
    CHECK(rank_processes() == 0);
  }

  SECTION("one plan: plan, run, trace, validate and compare use the same schedules") {
    const fs::path out = fs::temp_directory_path() / ("collsim-plan-" + std::to_string(::getpid()));
    fs::remove_all(out);
    const std::string exe = COLLSIM_EXE;
    const std::string scenario = std::string(COLLSIM_SOURCE_DIR) + "/scenarios/plan-choices.json";
    int status = -1;
    const auto plan =
        nlohmann::json::parse(run(exe + " plan " + scenario + " --format json", &status));
    REQUIRE(status == 0);
    const auto result =
        nlohmann::json::parse(run(exe + " run " + scenario + " --format json", &status));
    REQUIRE(status == 0);
    run(exe + " validate " + scenario + " --iters 1 --warmup 0 --out " + out.string(), &status);
    CHECK(status == 0);
    const auto measured = nlohmann::json::parse(std::ifstream(out / "measured.json"));
    const auto& planned = plan["collectives"];
    REQUIRE(planned.size() == 4);
    REQUIRE(result["collectives"].size() == planned.size());
    REQUIRE(measured["collectives"].size() == planned.size());
    for (std::size_t i = 0; i < planned.size(); ++i) {
      const std::string name = planned[i]["name"], digest = planned[i]["schedule_digest"];
      // Each command plans all four again (5 s under the sanitizers): there, trace only
      // the last (auto over segments auto); run, validate and compare still check all.
      const bool trace_it = !kSanitized || i + 1 == planned.size();
      INFO(name);
      CHECK(planned[i]["algorithm"] != "auto");
      CHECK(result["collectives"][i]["schedule_digest"] == digest);
      CHECK(result["collectives"][i]["plan"] == planned[i]["plan"]);
      CHECK(measured["collectives"][i]["schedule_digest"] == digest);
      CHECK(measured["collectives"][i]["ops"].size() == planned[i]["transfers"]);
      if (!trace_it) continue;
      const std::string trace = run(exe + " trace " + scenario + " --collective " + name, &status);
      CHECK(status == 0);
      CHECK_THAT(trace, Catch::Contains("schedule " + digest));
      CHECK_THAT(trace, Catch::Contains("exact (random int64 inputs"));
    }
    run(exe + " compare " + scenario + " --measured " + (out / "measured.json").string(), &status);
    CHECK(status == 0);
    // A measurement of another schedule is refused, not compared.
    auto other = measured;
    other["collectives"][2]["schedule_digest"] = "0123456789abcdef";
    std::ofstream(out / "other.json") << other.dump();
    const std::string refused =
        run(exe + " compare " + scenario + " --measured " + (out / "other.json").string(), &status);
    CHECK(status == 2);
    CHECK_THAT(refused,
               Catch::Contains("tree-on-top: measured with schedule \"0123456789abcdef\""));
    CHECK(rank_processes() == 0);
    fs::remove_all(out);
  }

  SECTION("validate and compare --out with odd node names write timelines that parse") {
    const fs::path out =
        fs::temp_directory_path() / ("collsim-odd-names-" + std::to_string(::getpid()));
    fs::remove_all(out);
    fs::create_directories(out);
    // GPU names that each once broke the JSON or the HTML (helpers.h).
    const std::vector<std::string>& gpus = collsim::test::kOddGpuNames;
    const nlohmann::json doc = {{"topology", collsim::test::odd_names_topology("odd")},
                                {"network", {{"model", "ideal"}, {"alpha", "5us"}}},
                                {"collectives",
                                 {{{"name", "ar \"x\"\\"},
                                   {"op", "all_reduce"},
                                   {"algorithm", "ring"},
                                   {"bytes", "64KiB"}}}}};
    const std::string scenario = (out / "odd.json").string();
    std::ofstream(scenario) << doc.dump(2);
    int status = -1;
    INFO(run(std::string(COLLSIM_EXE) + " validate " + scenario + " --iters 2 --out " +
                 (out / "v").string(),
             &status));
    REQUIRE(status == 0);
    INFO(run(std::string(COLLSIM_EXE) + " compare " + scenario + " --measured " +
                 (out / "v" / "measured.json").string() + " --out " + (out / "c").string(),
             &status));
    REQUIRE(status == 0);
    for (const fs::path& trace :
         {out / "v" / "timeline.json", out / "c" / "compare_timeline.json"}) {
      CAPTURE(trace);
      const auto events = nlohmann::json::parse(std::ifstream(trace)).at("traceEvents");
      std::vector<std::string> threads;
      bool named_slices = false;
      for (const auto& e : events) {
        if (e["name"] == "thread_name") threads.push_back(e["args"]["name"]);
        if (e["ph"] == "X") named_slices |= e["cat"] == "ar \"x\"\\";
      }
      CHECK(named_slices);
      for (std::size_t r = 0; r < gpus.size(); ++r) {
        const std::string rank = "rank " + std::to_string(r) + " (" + gpus[r] + ")";
        CHECK(std::any_of(threads.begin(), threads.end(),
                          [&](const std::string& t) { return t.starts_with(rank); }));
      }
    }
    CHECK(rank_processes() == 0);
    fs::remove_all(out);
  }

  SECTION("calibrate command: sweeps, fitted curves, a calibration file a scenario can use") {
    const fs::path out =
        fs::temp_directory_path() / ("collsim-calibrate-" + std::to_string(::getpid()));
    fs::remove_all(out);
    int status = -1;
    const std::string table = run(
        std::string(COLLSIM_EXE) + " calibrate --sizes 1KiB..4MiB --step x4 --iters 3 --rounds 1 " +
            "--warmup 1 --reduce float32.sum --out " + (out / "cal.json").string(),
        &status);
    CHECK(status == 0);
    CHECK_THAT(table, Catch::Contains("# one_way") && Catch::Contains("# host_memory") &&
                          Catch::Contains("# float32.sum") && Catch::Contains("op overhead"));
    const auto cal = nlohmann::json::parse(std::ifstream(out / "cal.json"));
    CHECK(cal["provenance"]["backend"] == "shm");
    CHECK(cal["provenance"]["ranks"] == 2);
    CHECK(cal["provenance"]["pinned"] == true);
    CHECK(cal["sweeps"]["one_way"]["samples"].size() == 7);  // 1 KiB to 4 MiB, x4
    CHECK(cal["bandwidth_curve"].size() == 7);
    CHECK(cal["reduce"].contains("float32.sum"));
    CHECK(cal["op_overhead_s"].get<double>() > 0);
    CHECK(cal["launch_s"].get<double>() > 0);  // release to first op, never free
    CHECK(cal["provenance"]["rounds"] == 1);
    CHECK(cal["provenance"]["quantile"] == 0.5);
    CHECK(cal["bandwidth_Bps"].get<double>() > 1e8);
    // A scenario simulates with it.
    const std::string cmp = run(
        std::string(COLLSIM_EXE) + " run " + COLLSIM_SOURCE_DIR +
            "/scenarios/validate-shm.json --format json >/dev/null && " + COLLSIM_EXE +
            " validate " + COLLSIM_SOURCE_DIR + "/scenarios/validate-shm.json --iters 1 --out " +
            (out / "m").string() + " && " + COLLSIM_EXE + " compare " + COLLSIM_SOURCE_DIR +
            "/scenarios/validate-shm.json --measured " + (out / "m/measured.json").string() +
            " --calibration " + (out / "cal.json").string(),
        &status);
    CHECK(status == 0);
    CHECK_THAT(cmp, Catch::Contains("mean absolute percentage error"));
    const std::string odd =
        run(std::string(COLLSIM_EXE) + " calibrate --ranks 3 --out " + (out / "cal3.json").string(),
            &status);
    CHECK(status != 0);
    CHECK_THAT(odd, Catch::Contains("--ranks must be even"));
    CHECK_FALSE(fs::exists(out / "cal3.json"));
    CHECK(rank_processes() == 0);
    fs::remove_all(out);
  }

  SECTION("pinning: each rank reads back its own CPU; sharing is reported; --no-pin") {
    const std::vector<int> allowed = allowed_cpus();
    CollectiveShape shape;
    shape.op = CollectiveOp::SendRecv;
    shape.ranks = 2;
    shape.count = 256;
    auto b = ScheduleBuilder::uniform(shape, "pin", {256, 256});
    b.copy({0, 0, 0}, {1, 1, 0}, 256);
    const Schedule s = b.finish();
    const Measurement pinned = run_for_real(s, options());
    REQUIRE(pinned.affinity.size() == 2);
    for (int r = 0; r < 2; ++r) {
      INFO("rank " << r);
      CHECK(pinned.affinity[r][0] == 1);                            // bound to exactly one CPU ...
      CHECK(pinned.affinity[r][1] == allowed[r % allowed.size()]);  // ... the r-th allowed
    }
    CHECK(pinned.pinning.pinned);
    RunOptions loose = options();
    loose.pin = false;
    const Measurement free = run_for_real(s, loose);
    for (int r = 0; r < 2; ++r) CHECK(free.affinity[r][0] == static_cast<int>(allowed.size()));
    CHECK_THAT(free.pinning.note, Catch::Contains("not pinned"));
    // Confined to one CPU, two ranks share it: both bound there, and the run says so.
    cpu_set_t all, one;
    REQUIRE(sched_getaffinity(0, sizeof all, &all) == 0);
    CPU_ZERO(&one);
    CPU_SET(allowed[0], &one);
    REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
    const Measurement shared = run_for_real(s, options());
    sched_setaffinity(0, sizeof all, &all);
    CHECK(shared.pinning.shared);
    CHECK_THAT(shared.pinning.note, Catch::Contains("2 ranks on 1 CPU"));
    for (int r = 0; r < 2; ++r) CHECK(shared.affinity[r] == std::array<int, 2>{1, allowed[0]});
    CHECK(rank_processes() == 0);
  }

  SECTION("when the runner itself is killed, its ranks die with it and no segment stays") {
    const auto before = leftover_segments();
    const fs::path pidfile =
        fs::temp_directory_path() / ("collsim-runner-" + std::to_string(::getpid()));
    const std::string cmd =
        std::string(COLLSIM_EXE) + " validate " + COLLSIM_SOURCE_DIR +
        "/scenarios/validate-ring.json --iters 100 >/dev/null 2>&1 & echo $! > " + pidfile.string();
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    std::ifstream in(pidfile);
    pid_t runner = 0;
    in >> runner;
    REQUIRE(runner > 0);
    CHECK(kill(runner, SIGKILL) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(rank_processes() == 0);
    CHECK(new_segments(before).empty());
    fs::remove(pidfile);
  }
  SECTION("Ctrl-C (SIGINT to the runner) stops the ranks, reports it, and leaves nothing") {
    const auto before = leftover_segments();
    const std::string tag = std::to_string(::getpid());
    const fs::path pidfile = fs::temp_directory_path() / ("collsim-int-pid-" + tag),
                   outfile = fs::temp_directory_path() / ("collsim-int-out-" + tag),
                   statusfile = fs::temp_directory_path() / ("collsim-int-status-" + tag);
    fs::remove(statusfile);
    // A shell in the background runs collsim, names its pid and keeps its exit status.
    const std::string cmd = "sh -c '" + std::string(COLLSIM_EXE) + " validate " +
                            COLLSIM_SOURCE_DIR + "/scenarios/validate-ring.json --iters 100 >" +
                            outfile.string() + " 2>&1 & echo $! > " + pidfile.string() +
                            "; wait $!; echo $? > " + statusfile.string() + "' &";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    pid_t runner = 0;
    std::ifstream(pidfile) >> runner;
    REQUIRE(runner > 0);
    CHECK(kill(runner, SIGINT) == 0);
    // Gone, or a zombie nobody reaps: either way it has finished its cleanup.
    auto running = [&] {
      std::ifstream stat("/proc/" + std::to_string(runner) + "/stat");
      std::string pid, comm, state;
      return stat >> pid >> comm >> state && state != "Z";
    };
    for (int i = 0; i < 100 && running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK_FALSE(running());
    std::ifstream in(outfile);
    const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // As every command stops on Ctrl-C: 128 + SIGINT, not 1 (which says the results were
    // wrong). The run had a handler of its own, and a stop near its end exited 0.
    CHECK_THAT(out, Catch::Contains("collsim: interrupted; nothing written"));
    int status = -1;
    for (int i = 0; i < 100 && !(std::ifstream(statusfile) >> status); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(status == 128 + SIGINT);
    CHECK(rank_processes() == 0);
    CHECK(new_segments(before).empty());
    fs::remove(pidfile);
    fs::remove(outfile);
    fs::remove(statusfile);
  }
}

TEST_CASE("a collective that cannot run for real is said before any runs: type, memory") {
  const auto schedule = [](DType t, std::int64_t count) {
    return generate(CollectiveOp::AllReduce, "ring",
                    shape_of(CollectiveOp::AllReduce, 2, count, t));
  };
  CHECK(real_run_problem(schedule(DType::F32, 1024), options()) == "");
  CHECK(real_run_problem(schedule(DType::F16, 1024), options()) ==
        "real runs support float32, float64, int32, int64 and bfloat16, not float16");
  // 2^47 floats on each of 2 ranks: no machine here holds that three times over (the
  // runner's inputs and expected results, and the segment). It once ran out of memory as
  // an internal error (bad_alloc) after the collectives before it had run.
  CHECK_THAT(real_run_problem(schedule(DType::F32, std::int64_t{1} << 47), options()),
             Catch::StartsWith("running it for real needs about ") &&
                 Catch::Contains("more than the ") &&
                 Catch::EndsWith("validate it at a smaller \"bytes\""));
}

TEST_CASE(
    "alpha-beta fit recovers known parameters from exact samples, weighting by relative error") {
  std::vector<CalibrationSample> samples;
  for (std::int64_t n = 8; n <= (64 << 20); n *= 4) {
    const double t = 2e-6 + n / 8e9;
    samples.push_back({n, t, t, t});
  }
  AlphaBeta c = fit_alpha_beta(samples);
  CHECK(c.alpha_s == Approx(2e-6).epsilon(1e-6));
  CHECK(c.bandwidth_Bps == Approx(8e9).epsilon(1e-6));
  CHECK(c.r2 == Approx(1.0));
  // A large-message outlier does not drag alpha away: relative error weighting.
  samples.back().time_s *= 1.5;
  c = fit_alpha_beta(samples);
  CHECK(c.alpha_s == Approx(2e-6).epsilon(0.05));
  // Noise that would make alpha negative: alpha is held at 0, beta fitted through the origin.
  std::vector<CalibrationSample> noisy_samples = {
      {1000, 0.5e-6, 0, 0}, {2000, 1.5e-6, 0, 0}, {4000, 3.4e-6, 0, 0}};
  const AlphaBeta noisy = fit_alpha_beta(noisy_samples);
  CHECK(noisy.alpha_s == 0);
  CHECK(noisy.bandwidth_Bps > 1e9);
  CHECK(noisy.bandwidth_Bps < 2e9);
}

TEST_CASE("compare: errors per collective, step and op against a known measurement") {
  // "Measured" = every simulated time doubled: every error must be exactly -50%.
  const Scenario s = parse_scenario(nlohmann::json::parse(R"({
      "topology": {"preset": "switch", "gpus": 4, "bandwidth": "10GB/s"},
      "network": {"model": "ideal", "alpha": "5us"},
      "collectives": [{"name": "ar", "op": "all_reduce", "algorithm": "ring", "bytes": "1MiB"},
                      {"name": "bc", "op": "broadcast", "algorithm": "binomial_tree",
                       "bytes": "64KiB", "after": ["ar"]}]})"),
                                    ".", "test");
  const ScenarioResult sim = run_scenario(s);
  nlohmann::json cols = nlohmann::json::array();
  for (std::size_t i = 0; i < sim.resolved.size(); ++i) {
    nlohmann::json ops = nlohmann::json::array();
    const Time t0 = sim.sim.tasks[i].start;
    for (const auto& o : sim.sim.tasks[i].ops)
      ops.push_back({2 * to_seconds(o.start - t0), 2 * to_seconds(o.end - t0)});
    cols.push_back(
        {{"name", sim.resolved[i].name}, {"time_s", 2 * sim.outcomes[i].time_s}, {"ops", ops}});
  }
  const Comparison c = compare_runs(s, sim, {{"collectives", cols}});
  REQUIRE(c.collectives.size() == 2);
  CHECK(c.steps.size() == 6 + 2);  // ring on 4: 2(K-1) steps; binomial tree on 4: 2
  CHECK(c.ops.size() == sim.schedules[0]->size() + sim.schedules[1]->size());
  for (const auto* rows : {&c.collectives, &c.steps, &c.ops})
    for (const auto& r : *rows) CHECK(r.error_pct == Approx(-50).margin(1e-6));
  CHECK(c.mape_pct == Approx(50));
  CHECK(c.op_mape_pct == Approx(50));
  CHECK(c.ops[0].bytes == sim.schedules[0]->ops[0].count * 4);
  std::ostringstream csv;
  write_comparison_csv(csv, c);
  CHECK_THAT(csv.str(), Catch::StartsWith("collective,step,op,src,dst,bytes,measured_s"));
  // A measurement of another schedule is refused, naming the collective.
  cols[0]["ops"].erase(0);
  CHECK_THROWS_WITH(compare_runs(s, sim, {{"collectives", cols}}),
                    Catch::Contains("ar: ") && Catch::Contains("measured ops"));
}

TEST_CASE("compare: a measured.json with an impossible time or an unknown field is refused") {
  const Scenario s = parse_scenario(nlohmann::json::parse(R"({
      "topology": {"preset": "switch", "gpus": 2, "bandwidth": "10GB/s"},
      "collectives": [{"name": "ar", "op": "all_reduce", "algorithm": "ring", "bytes": "4KiB"}]})"),
                                    ".", "test");
  const ScenarioResult sim = run_scenario(s);
  nlohmann::json ops = nlohmann::json::array();
  for (std::size_t i = 0; i < sim.schedules[0]->size(); ++i) ops.push_back({0.0, 1e-6});
  const nlohmann::json good = {{"name", "ar"}, {"time_s", 1e-5}, {"ops", ops}};
  const auto error = [&](const nlohmann::json& collective) {
    try {
      compare_runs(s, sim, {{"collectives", {collective}}});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error(good) == "no error");
  // time_s -1 was once compared, as 0.0% error.
  for (double t : {-1.0, 0.0, 1e9}) {
    nlohmann::json bad = good;
    bad["time_s"] = t;
    CHECK_THAT(error(bad), Catch::StartsWith("--measured:collectives[0].time_s: expected a "
                                             "measured time above 0 s and at most 1 hour"));
  }
  for (const nlohmann::json& t : {nlohmann::json("1us"), nlohmann::json(nullptr)}) {
    nlohmann::json bad = good;
    bad["time_s"] = t;
    CHECK_THAT(error(bad), Catch::StartsWith("--measured:collectives[0].time_s: expected a number"));
  }
  nlohmann::json backwards = good;
  backwards["ops"][0] = {2e-6, 1e-6};
  CHECK_THAT(error(backwards),
             Catch::StartsWith("--measured:collectives[0].ops[0][1]: expected an end no earlier"));
  nlohmann::json misspelled = good;
  misspelled["tme_s"] = 1;
  CHECK(error(misspelled) ==
        "--measured:collectives[0].tme_s: unknown field; did you mean \"time_s\"?");
  CHECK_THROWS_WITH(compare_runs(s, sim, {{"colectives", nlohmann::json::array({good})}}),
                    "--measured:colectives: unknown field; did you mean \"collectives\"?");
  CHECK_THROWS_WITH(compare_runs(s, sim, nlohmann::json::object()),
                    "--measured: missing required field \"collectives\"");
  // A collective measured twice: which one is compared would be a guess.
  CHECK_THROWS_WITH(compare_runs(s, sim, {{"collectives", {good, good}}}),
                    "--measured:collectives[1].name: \"ar\" is measured twice (collectives[0] "
                    "too); each collective once");
}

TEST_CASE("a rank paused between ops is named when the run times out") {
  // SIGSTOP on a rank waiting for its next op: the timeout said "no rank inside an op".
  const std::string tag = std::to_string(::getpid());
  const fs::path out = fs::temp_directory_path() / ("collsim-stop-out-" + tag);
  const std::string cmd =
      "sh -c '" + std::string(COLLSIM_EXE) + " validate " + COLLSIM_SOURCE_DIR +
      "/scenarios/validate-shm.json --iters 100000 --timeout 2 > " + out.string() +
      " 2>&1 & p=$!; sleep 1; kill -STOP $(cut -d\" \" -f1 /proc/$p/task/$p/children); wait $p'";
  const int status = std::system(cmd.c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  const std::string text = test::slurp(out);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("did not finish within 2 s: rank 0 "));
  CHECK(rank_processes() == 0);
  fs::remove(out);
}
