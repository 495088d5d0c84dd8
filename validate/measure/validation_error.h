#pragma once
#include <stdexcept>
#include <string>

namespace collsim {

// A real run that failed (a rank died or hung, the transport refused): the CLI
// prints it on one line and exits with status 1.
class ValidationError : public std::runtime_error {
 public:
  explicit ValidationError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace collsim
