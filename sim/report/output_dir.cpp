#include "report/output_dir.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <iostream>

#include <algorithm>
#include <atomic>

#include "core/error.h"
#include "core/interrupt.h"

namespace collsim {
namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) {
  return fmt::format("\"{}\"", p.string());
}

constexpr std::string_view kStagingPrefix = ".collsim-tmp.";

// Waits for any other run writing into `dir`; the lock goes with the descriptor.
int lock_folder(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw InputError("--out", "cannot open folder " + quoted(dir));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::cerr << "collsim: waiting for another run writing into " << quoted(dir) << "\n";
    while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) poll_interrupt();
  }
  return fd;
}

// Staging folders of runs whose process is gone (killed before they could clean up).
// Called with the folder locked, so no live run of ours is between staging and commit.
void remove_stale_staging(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kStagingPrefix)) continue;
    const long pid = std::strtol(name.c_str() + kStagingPrefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      fs::remove_all(entry.path(), ec);
  }
}

}  // namespace

OutputDir::OutputDir(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  for (fs::path p = fs::absolute(dir_, ec); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    made_.push_back(p);
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_)) throw InputError("--out", "cannot create folder " + quoted(dir_));
  lock_fd_ = lock_folder(dir_);
  remove_stale_staging(dir_);
  // Inside the destination, so that commit() renames within one file system.
  static std::atomic<int> counter{0};
  staging_ = dir_ / fmt::format("{}{}.{}", kStagingPrefix, ::getpid(), counter++);
  fs::remove_all(staging_, ec);
  if (!fs::create_directory(staging_, ec)) {
    ::close(lock_fd_);  // the destructor does not run for a constructor that throws
    for (const fs::path& p : made_) fs::remove(p, ec);
    throw InputError("--out", "cannot write into folder " + quoted(dir_));
  }
}

OutputDir::~OutputDir() {
  current_.close();
  std::error_code ec;
  fs::remove_all(staging_, ec);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
  if (!committed_)
    for (const fs::path& p : made_) fs::remove(p, ec);  // only an empty folder goes
}

void OutputDir::close_current() {
  if (!current_.is_open()) return;
  current_.close();
  if (current_.fail()) throw InputError("--out", "could not write " + quoted(dir_ / names_.back()));
}

std::ofstream& OutputDir::open(const std::string& name) {
  close_current();
  names_.push_back(name);
  current_.clear();
  current_.open(staging_ / name, std::ios::binary | std::ios::trunc);
  if (!current_) throw InputError("--out", "cannot write " + quoted(dir_ / name));
  return current_;
}

void OutputDir::drop(const std::string& name) {
  dropped_.push_back(name);
}

void OutputDir::check_replaceable(const std::vector<std::string>& names) const {
  for (const auto& name : names) {
    const fs::path dest = dir_ / name;
    std::error_code ec;
    const auto st = fs::symlink_status(dest, ec);
    if (fs::exists(st) && !fs::is_regular_file(st))
      throw InputError("--out", fmt::format("cannot replace {}: it is {}, not a file", quoted(dest),
                                            fs::is_directory(st) ? "a folder" : "something else"));
  }
}

void OutputDir::commit() {
  close_current();
  poll_interrupt();  // a stopped run replaces nothing
  std::erase_if(dropped_, [&](const std::string& d) {
    return std::find(names_.begin(), names_.end(), d) != names_.end();
  });
  // Every destination checked before the first rename.
  std::vector<std::string> replaced = names_;
  replaced.insert(replaced.end(), dropped_.begin(), dropped_.end());
  check_replaceable(replaced);
  // Old files aside (into the staging folder), new ones in; undone on any failure.
  const fs::path old_dir = staging_ / ".old";
  std::vector<std::string> moved_aside, placed;
  std::error_code ec;
  fs::create_directory(old_dir, ec);
  auto undo = [&] {
    std::error_code ignore;
    for (const auto& name : placed) fs::rename(dir_ / name, staging_ / name, ignore);
    for (const auto& name : moved_aside) fs::rename(old_dir / name, dir_ / name, ignore);
  };
  for (const auto& name : replaced) {
    if (!fs::exists(fs::symlink_status(dir_ / name, ec))) continue;
    fs::rename(dir_ / name, old_dir / name, ec);
    if (ec) {
      undo();
      throw InputError("--out",
                       fmt::format("cannot replace {}: {}", quoted(dir_ / name), ec.message()));
    }
    moved_aside.push_back(name);
  }
  for (const auto& name : names_) {
    fs::rename(staging_ / name, dir_ / name, ec);
    if (ec) {
      undo();
      throw InputError("--out",
                       fmt::format("cannot write {}: {}", quoted(dir_ / name), ec.message()));
    }
    placed.push_back(name);
  }
  fs::remove_all(staging_, ec);
  committed_ = true;
}

}  // namespace collsim
