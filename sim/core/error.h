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
      : std::runtime_error(where.empty() ? what : where + ": " + what) {}
};

}  // namespace collsim
