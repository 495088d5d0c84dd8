// Chakra trace files when collsim was built without protobuf: every entry point
// says so instead of failing later or half-way.
#include "core/error.h"
#include "workload/chakra.h"

namespace collsim {
namespace {

[[noreturn]] void no_protobuf(const std::filesystem::path& file) {
  throw InputError(file.string(),
                   "collsim was built without protobuf, so it cannot read or write Chakra traces: "
                   "install libprotobuf-dev and protobuf-compiler (tools/setup.sh does) and "
                   "configure again");
}

}  // namespace

bool chakra_files_supported() {
  return false;
}

ChakraTrace parse_chakra_trace(std::string_view, const std::string& where, ChakraBudget&) {
  no_protobuf(where);
}

void write_chakra_file(const std::filesystem::path& file, const ChakraTrace&) {
  no_protobuf(file);
}

}  // namespace collsim
