#include "report/output_dir.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "core/error.h"

namespace collsim {
namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) {
  return "\"" + p.string() + "\"";
}

}  // namespace

OutputDir::OutputDir(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_)) throw InputError("--out", "cannot create folder " + quoted(dir_));
  // Inside the destination, so that commit() renames within one file system.
  static std::atomic<int> counter{0};
  staging_ = dir_ / fmt::format(".collsim-tmp.{}.{}", ::getpid(), counter++);
  fs::remove_all(staging_, ec);
  if (!fs::create_directory(staging_, ec))
    throw InputError("--out", "cannot write into folder " + quoted(dir_));
}

OutputDir::~OutputDir() {
  current_.close();
  std::error_code ec;
  fs::remove_all(staging_, ec);
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

void OutputDir::commit() {
  close_current();
  std::erase_if(dropped_, [&](const std::string& d) {
    return std::find(names_.begin(), names_.end(), d) != names_.end();
  });
  // Every destination checked before the first rename.
  std::vector<std::string> replaced = names_;
  replaced.insert(replaced.end(), dropped_.begin(), dropped_.end());
  for (const auto& name : replaced) {
    const fs::path dest = dir_ / name;
    std::error_code ec;
    const auto st = fs::symlink_status(dest, ec);
    if (fs::exists(st) && !fs::is_regular_file(st))
      throw InputError("--out", fmt::format("cannot replace {}: it is {}, not a file", quoted(dest),
                                            fs::is_directory(st) ? "a folder" : "something else"));
  }
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
}

}  // namespace collsim
