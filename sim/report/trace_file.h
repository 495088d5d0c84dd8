#pragma once
// A trace file that may be large: written into an OutputDir as `name`, or gzipped as
// `name`.gz (Perfetto and chrome://tracing open both) when asked or once it passes a
// size. Up to that size it is held in memory, so the choice is made on its real
// length; past it, everything is compressed as it streams. Deterministic: the gzip
// header carries no time stamp or file name.
#include <cstddef>
#include <memory>
#include <streambuf>
#include <string>

#include "report/output_dir.h"

namespace collsim {

inline constexpr std::size_t kGzipTraceAbove = std::size_t{32} << 20;  // 32 MiB

class TraceFile : public std::streambuf {
 public:
  // gzip: always compress; else compress once the trace passes `above` bytes.
  TraceFile(OutputDir& dir, std::string name, bool gzip, std::size_t above = kGzipTraceAbove);
  ~TraceFile() override;
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;
  // Writes what is held and closes the stream; returns the file's name (with .gz or
  // not). The other name is dropped from the folder, so no stale trace stays beside it.
  std::string finish();

 protected:
  std::streamsize xsputn(const char* data, std::streamsize n) override;
  int_type overflow(int_type c) override;

 private:
  void start_gzip();
  void deflate_some(const char* data, std::size_t n, bool last);

  OutputDir& dir_;
  std::string name_;
  std::size_t above_;
  std::string held_;              // the start of the trace, while it may stay plain
  std::ostream* file_ = nullptr;  // once compressing
  struct Zlib;
  std::unique_ptr<Zlib> zlib_;
  bool finished_ = false;
};

}  // namespace collsim
