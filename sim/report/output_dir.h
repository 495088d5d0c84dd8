#pragma once
// Writes a set of files into a folder all-or-nothing. Each file is written into a
// fresh staging folder inside the destination; commit() first checks that every
// destination can be replaced (absent or a plain file), then moves the old files
// aside and the new ones in, putting everything back if a rename still fails. If
// commit() is never reached (an error, an exception) the staging folder is removed
// and the destination is as it was (folders it made are removed again).
//
// Several runs into one folder take turns: each holds an exclusive lock on the folder
// (flock) from its first file to its commit, so the folder always holds one run's
// complete set. A staging folder left by a run that was killed (its process is gone)
// is removed by the next run into that folder. commit() refuses (Interrupted) once a
// stop was requested (Ctrl-C), so an interrupted run replaces nothing.
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
  // Removes `name` from the destination at commit (a stale file of an earlier run that
  // this one replaces under another name); rolled back like the rest.
  void drop(const std::string& name);
  // Throws InputError naming the destination that cannot be replaced, before
  // replacing any.
  void commit();
  // Throws InputError where one of `names` could not be replaced at commit (a folder there):
  // a command that measures for minutes says so before it starts.
  void check_replaceable(const std::vector<std::string>& names) const;

 private:
  void close_current();
  std::filesystem::path dir_;
  // The folders this one made (dir_ and missing parents, innermost first): removed again,
  // where still empty, by a run that never commits.
  std::vector<std::filesystem::path> made_;
  bool committed_ = false;
  int lock_fd_ = -1;  // the folder, held with flock(LOCK_EX) while this object lives
  std::filesystem::path staging_;
  std::ofstream current_;
  std::vector<std::string> names_;  // in the order opened
  std::vector<std::string> dropped_;
};

}  // namespace collsim
