#pragma once
#include <stdexcept>
#include <string>

namespace collsim {

// A problem with what the user asked for (scenario, topology, flags). The message
// names where the problem is (a JSON path like `collectives[2].bytes`) and what
// was expected; the CLI prints it on one line and exits with status 2.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& where, const std::string& what)
      : std::runtime_error(joined(bounded(where), bounded(what))),
        where_(bounded(where)),
        message_(bounded(what)) {}

  // The two halves of what(), apart (Python's collsim.InputError carries both).
  const std::string& where() const { return where_; }
  const std::string& message() const { return message_; }

 private:
  // "where: what"; a file's own root ("topology.json:") is followed by a space only.
  static std::string joined(const std::string& where, const std::string& what) {
    if (where.empty()) return what;
    return where + (where.back() == ':' ? " " : ": ") + what;
  }
  // A message quotes what it refuses, and that may be 100,000 characters of one string:
  // past kMaxLength its middle is left out, cut between UTF-8 characters.
  static constexpr std::size_t kMaxLength = 1024, kHead = 700, kTail = 300;
  static std::string bounded(const std::string& text) {
    if (text.size() <= kMaxLength) return text;
    const auto continuation = [&](std::size_t i) { return (text[i] & 0xC0) == 0x80; };
    std::size_t head = kHead, tail = text.size() - kTail;
    while (head > 0 && continuation(head)) --head;
    while (tail < text.size() && continuation(tail)) ++tail;
    return text.substr(0, head) + " [... " + std::to_string(tail - head) + " bytes left out ...] " +
           text.substr(tail);
  }
  std::string where_, message_;
};

}  // namespace collsim
