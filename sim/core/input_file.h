#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace collsim {

// A user's input file, whole, read so that no file can hang collsim or exhaust its
// memory before a parser sees it: InputError(path) unless it is a regular file (not a
// FIFO, whose read blocks, nor /dev/zero, whose read never ends) of at most
// `max_bytes`. `what` names the kind of file in the message ("an nccl-tests log").
// Every reader of a user's file goes through it (read_json_file too).
std::string read_input_file(const std::string& path, std::uintmax_t max_bytes,
                            std::string_view what);
// Whether `path` names a regular file; false, never a throw, where the name cannot be
// looked up (too long, a loop of links, no permission).
bool is_regular_file_quietly(const std::string& path);
// Its first check alone, for a caller that peeks at the file before reading it.
void check_regular_file(const std::string& path, std::string_view what);

}  // namespace collsim
