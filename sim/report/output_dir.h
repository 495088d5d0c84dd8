#pragma once
// Writes a set of files into a folder all-or-nothing: each is written under a
// temporary name and renamed into place only by commit(); if commit() is never
// reached (an error, an exception) the temporaries are removed.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace collsim {

class OutputDir {
 public:
  explicit OutputDir(std::filesystem::path dir);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  // Starts writing `name`; the stream stays valid until the next open() or commit().
  std::ofstream& open(const std::string& name);
  void commit();

 private:
  void close_current();
  std::filesystem::path dir_;
  std::ofstream current_;
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> pending_;  // temp -> final
  bool committed_ = false;
};

}  // namespace collsim
