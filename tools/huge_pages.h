#pragma once
// Large runs spend a third of their time in page faults and TLB misses on 4 KiB pages
// (docs/results/benchmarks.md, "The heap on huge pages"). glibc backs its heap with
// transparent huge pages when asked (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, glibc >= 2.35),
// but reads that only as a process starts, so the command line restarts itself once with
// it set: at once for every command but `run`, which restarts before reading a large scenario
// file, or once it has read its scenario and found the run large (a small run is over before
// the restart's 7 ms would pay). It runs on
// as started, never restarting, where the restart would not do what it should: glibc.malloc.hugetlb
// already set (=0 turns this off), a sanitizer build (its allocator is not glibc's), a
// secure-execution process (glibc drops the tunable), a program started through ld.so by hand, and
// valgrind (the restart would leave it).
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace collsim {

inline bool restart_would_mislead() {
#if defined(COLLSIM_SANITIZED) || defined(__SANITIZE_ADDRESS__)
  return true;
#else
  const char* preload = std::getenv("LD_PRELOAD");
  return getauxval(AT_SECURE) != 0 || getauxval(AT_BASE) == 0 ||
         std::getenv("COLLSIM_RESTARTED") != nullptr ||
         (preload && std::strstr(preload, "vgpreload"));
#endif
}

inline void restart_with_huge_pages(char** argv) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if ((tunables && std::strstr(tunables, "glibc.malloc.hugetlb")) || restart_would_mislead())
    return;
  // The restarted process's environment: this one's, with the tunable added and a mark
  // that it has restarted (once, whatever glibc does with the tunable).
  std::string glibc = "GLIBC_TUNABLES=glibc.malloc.hugetlb=1";
  if (tunables && *tunables) glibc += std::string(":") + tunables;
  std::vector<char*> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "GLIBC_TUNABLES=", 15) != 0) env.push_back(*e);
  env.push_back(glibc.data());
  std::string mark = "COLLSIM_RESTARTED=1";
  env.push_back(mark.data());
  env.push_back(nullptr);
  execve("/proc/self/exe", argv, env.data());
  // No restart (no /proc, say): this process runs on as it is, with ordinary pages.
}

// The environment as it was before the restart (this one's, if it did not restart), for
// a child program that should run as it would from a shell (collsim-bench's floor).
// Built in the parent: a forked child then only calls execve.
inline std::vector<std::string> environment_before_restart() {
  const bool restarted = std::getenv("COLLSIM_RESTARTED") != nullptr;
  const std::string ours = "GLIBC_TUNABLES=glibc.malloc.hugetlb=1";
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (restarted && entry == "COLLSIM_RESTARTED=1") continue;
    if (restarted && entry.rfind(ours, 0) == 0) {  // ours, before any the user had set
      if (entry.size() > ours.size() + 1 && entry[ours.size()] == ':')
        env.push_back("GLIBC_TUNABLES=" + entry.substr(ours.size() + 1));
      continue;
    }
    env.push_back(entry);
  }
  return env;
}

}  // namespace collsim
