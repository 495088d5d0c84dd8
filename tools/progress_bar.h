#pragma once
// A progress bar for people watching a terminal, once a run has taken a second: points
// done of all, and the time left at the pace so far. Nothing when stderr is not a
// terminal, so scripted runs print exactly what they printed before.
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <iostream>
#include <string>

namespace collsim {

class ProgressBar {
 public:
  explicit ProgressBar(bool wanted) : wanted_(wanted && ::isatty(STDERR_FILENO)) {}
  ~ProgressBar() { clear(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void operator()(std::size_t done, std::size_t total) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (!wanted_ || elapsed < 1 || total == 0) return;
    const int width = 30, filled = static_cast<int>(width * done / total);
    const double left = done ? elapsed * static_cast<double>(total - done) / done : 0;
    std::cerr << fmt::format("\r[{}{}] {}/{} points, about {:.0f} s left ",
                             std::string(filled, '#'), std::string(width - filled, ' '), done,
                             total, left)
              << std::flush;
    drew_ = true;
    if (done == total) clear();  // before the results are printed under it
  }

 private:
  void clear() {
    if (drew_) std::cerr << "\r" << std::string(72, ' ') << "\r" << std::flush;
    drew_ = false;
  }

  bool wanted_;
  bool drew_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace collsim
