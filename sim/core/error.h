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
      : std::runtime_error(joined(where, what)), where_(where), message_(what) {}

  // The two halves of what(), apart (Python's collsim.InputError carries both).
  const std::string& where() const { return where_; }
  const std::string& message() const { return message_; }

 private:
  // "where: what"; a file's own root ("topology.json:") is followed by a space only.
  static std::string joined(const std::string& where, const std::string& what) {
    if (where.empty()) return what;
    return where + (where.back() == ':' ? " " : ": ") + what;
  }
  std::string where_, message_;
};

}  // namespace collsim
