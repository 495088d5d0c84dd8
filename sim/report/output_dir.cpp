#include "report/output_dir.h"

#include <unistd.h>

#include "core/error.h"

namespace collsim {
namespace fs = std::filesystem;

OutputDir::OutputDir(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_))
    throw InputError("--out", "cannot create folder \"" + dir_.string() + "\"");
}

OutputDir::~OutputDir() {
  if (committed_) return;
  current_.close();
  std::error_code ec;
  for (const auto& [temp, final_path] : pending_) fs::remove(temp, ec);
}

void OutputDir::close_current() {
  if (!current_.is_open()) return;
  current_.close();
  if (current_.fail())
    throw InputError("--out", "could not write " + pending_.back().second.string());
}

std::ofstream& OutputDir::open(const std::string& name) {
  close_current();
  const fs::path final_path = dir_ / name;
  const fs::path temp = dir_ / ("." + name + ".tmp." + std::to_string(::getpid()));
  pending_.emplace_back(temp, final_path);
  current_.clear();
  current_.open(temp, std::ios::binary | std::ios::trunc);
  if (!current_) throw InputError("--out", "cannot write " + temp.string());
  return current_;
}

void OutputDir::commit() {
  close_current();
  for (const auto& [temp, final_path] : pending_) fs::rename(temp, final_path);
  committed_ = true;
}

}  // namespace collsim
