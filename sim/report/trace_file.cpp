#include "report/trace_file.h"

#include <zlib.h>

#include <fstream>
#include <stdexcept>
#include <vector>

#include "core/error.h"

namespace collsim {

struct TraceFile::Zlib {
  z_stream z{};
  std::vector<char> out = std::vector<char>(1 << 16);
};

TraceFile::TraceFile(OutputDir& dir, std::string name, bool gzip, std::size_t above)
    : dir_(dir), name_(std::move(name)), above_(above) {
  if (gzip) start_gzip();
}

TraceFile::~TraceFile() {
  if (zlib_) deflateEnd(&zlib_->z);
}

void TraceFile::start_gzip() {
  zlib_ = std::make_unique<Zlib>();
  // windowBits 15 + 16: a gzip wrapper, whose header zlib leaves without time or name.
  if (deflateInit2(&zlib_->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: deflateInit2 failed");
  file_ = &dir_.open(name_ + ".gz");
  dir_.drop(name_);
  std::string held;
  held.swap(held_);
  deflate_some(held.data(), held.size(), false);
}

void TraceFile::deflate_some(const char* data, std::size_t n, bool last) {
  z_stream& z = zlib_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
  z.avail_in = static_cast<uInt>(n);
  int rc = Z_OK;
  do {
    z.next_out = reinterpret_cast<Bytef*>(zlib_->out.data());
    z.avail_out = static_cast<uInt>(zlib_->out.size());
    rc = deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_ERROR) throw std::runtime_error("zlib: deflate failed");
    file_->write(zlib_->out.data(), static_cast<std::streamsize>(zlib_->out.size() - z.avail_out));
  } while (z.avail_out == 0 || (last && rc != Z_STREAM_END));
}

std::streamsize TraceFile::xsputn(const char* data, std::streamsize n) {
  const auto size = static_cast<std::size_t>(n);
  if (!zlib_) {
    held_.append(data, size);
    if (held_.size() > above_) start_gzip();
    return n;
  }
  // zlib takes at most 4 GiB at a time (uInt).
  for (std::size_t at = 0; at < size; at += 1u << 30)
    deflate_some(data + at, std::min<std::size_t>(size - at, 1u << 30), false);
  return n;
}

TraceFile::int_type TraceFile::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  xsputn(&ch, 1);
  return c;
}

std::string TraceFile::finish() {
  if (finished_) throw std::logic_error("TraceFile::finish twice");
  finished_ = true;
  if (zlib_) {
    deflate_some(nullptr, 0, true);
    return name_ + ".gz";
  }
  dir_.open(name_) << held_;
  dir_.drop(name_ + ".gz");
  held_.clear();
  return name_;
}

}  // namespace collsim
