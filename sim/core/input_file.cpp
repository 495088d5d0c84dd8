#include "core/input_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/units.h"

namespace collsim {

bool is_regular_file_quietly(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && !ec;
}

void check_regular_file(const std::string& path, std::string_view what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows a symlink to what it names
  if (ec || !fs::exists(st))
    throw InputError(path, fmt::format("no such file: expected {}", what));
  if (fs::is_regular_file(st)) return;
  const char* kind = fs::is_directory(st)   ? "a directory"
                     : fs::is_fifo(st)      ? "a FIFO"
                     : fs::is_socket(st)    ? "a socket"
                     : fs::is_character_file(st) || fs::is_block_file(st) ? "a device"
                                                                         : "not a plain file";
  throw InputError(path, fmt::format("expected {} in a regular file, got {}", what, kind));
}

std::string read_input_file(const std::string& path, std::uintmax_t max_bytes,
                            std::string_view what) {
  check_regular_file(path, what);
  const auto too_big = [&](std::string_view size) {
    throw InputError(path, fmt::format("expected {} of at most {}, got {}", what,
                                       format_bytes(static_cast<std::int64_t>(max_bytes)), size));
  };
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_bytes) too_big(fmt::format("{} bytes", size));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, fmt::format("cannot open it (permissions?): expected {}", what));
  // In chunks, up to one byte past the bound: the file may have grown since, or be one
  // whose size the file system does not know (/proc).
  std::string text;
  text.reserve(ec ? 0 : static_cast<std::size_t>(size));
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) too_big("more");
  }
  return text;
}

}  // namespace collsim
