// Parsing and writing Chakra trace files with protobuf: one GlobalMetadata message,
// then Node messages, each preceded by its size as a varint. Reading the file itself
// (regular files only, bounded) is chakra.cpp's, so that a fuzz target parses memory.
#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <fstream>
#include <limits>

#include "core/error.h"
#include "workload/chakra.h"
#include "workload/chakra.pb.h"

namespace collsim {
namespace fs = std::filesystem;
namespace pb = collsim::chakra;

namespace {

// An integer attribute, whichever of the schema's integer types holds it.
std::int64_t integer_value(const pb::Attribute& a, const std::string& where) {
  using V = pb::Attribute::ValueCase;
  auto unsigned_value = [&](std::uint64_t x) {
    if (x > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw InputError(where, fmt::format("attribute \"{}\" is {}, too large", a.name(), x));
    return static_cast<std::int64_t>(x);
  };
  switch (a.value_case()) {
    case V::kInt32Val:
      return a.int32_val();
    case V::kInt64Val:
      return a.int64_val();
    case V::kUint32Val:
      return a.uint32_val();
    case V::kUint64Val:
      return unsigned_value(a.uint64_val());
    case V::kSint32Val:
      return a.sint32_val();
    case V::kSint64Val:
      return a.sint64_val();
    case V::kFixed32Val:
      return a.fixed32_val();
    case V::kFixed64Val:
      return unsigned_value(a.fixed64_val());
    case V::kSfixed32Val:
      return a.sfixed32_val();
    case V::kSfixed64Val:
      return a.sfixed64_val();
    default:
      break;
  }
  throw InputError(where, fmt::format("attribute \"{}\": expected an integer value", a.name()));
}

// The attributes collsim reads; the others are left alone.
void read_attribute(const pb::Attribute& a, ChakraNode& n, const std::string& where) {
  const std::string& key = a.name();
  std::optional<std::int64_t>* integer = key == "comm_type"     ? &n.comm_type
                                         : key == "comm_size"   ? &n.comm_size
                                         : key == "comm_src"    ? &n.comm_src
                                         : key == "comm_dst"    ? &n.comm_dst
                                         : key == "comm_tag"    ? &n.comm_tag
                                         : key == "num_ops"     ? &n.num_ops
                                         : key == "tensor_size" ? &n.tensor_size
                                                                : nullptr;
  // One that collsim reads, named twice, says two things: the last one silently won (a
  // comm_size of 1 MiB read as 1 KiB).
  if ((integer && *integer) || (key == "pg_name" && n.pg_name))
    throw InputError(where, fmt::format("attribute \"{}\" given twice", key));
  if (integer) {
    *integer = integer_value(a, where);
  } else if (key == "pg_name") {
    if (a.value_case() != pb::Attribute::kStringVal)
      throw InputError(where, "attribute \"pg_name\": expected a string value");
    n.pg_name = a.string_val();
  } else if (key == "is_cpu_op") {
    if (a.value_case() != pb::Attribute::kBoolVal)
      throw InputError(where, "attribute \"is_cpu_op\": expected a bool value");
    n.is_cpu_op = a.bool_val();
  } else if (key == "involved_dim") {
    if (a.value_case() != pb::Attribute::kBoolList)
      throw InputError(where, "attribute \"involved_dim\": expected a list of bools");
    n.involved_dim.assign(a.bool_list().values().begin(), a.bool_list().values().end());
  }
}

ChakraNode from_proto(const pb::Node& p, const std::string& where) {
  ChakraNode n;
  n.id = p.id();
  n.name = p.name();
  n.type = static_cast<int>(p.type());
  n.data_deps.assign(p.data_deps().begin(), p.data_deps().end());
  n.ctrl_deps.assign(p.ctrl_deps().begin(), p.ctrl_deps().end());
  n.duration_micros = p.duration_micros();
  const std::string at = fmt::format("{}: node {}", where, n.id);
  for (const auto& a : p.attr()) read_attribute(a, n, at);
  return n;
}

void add_integer(pb::Node& p, const char* key, const std::optional<std::int64_t>& v) {
  if (!v) return;
  auto* a = p.add_attr();
  a->set_name(key);
  a->set_int64_val(*v);
}

pb::Node to_proto(const ChakraNode& n) {
  pb::Node p;
  p.set_id(n.id);
  p.set_name(n.name);
  p.set_type(static_cast<pb::NodeType>(n.type));
  for (auto d : n.data_deps) p.add_data_deps(d);
  for (auto d : n.ctrl_deps) p.add_ctrl_deps(d);
  p.set_duration_micros(n.duration_micros);
  if (n.is_cpu_op) {
    auto* a = p.add_attr();
    a->set_name("is_cpu_op");
    a->set_bool_val(*n.is_cpu_op);
  }
  add_integer(p, "comm_type", n.comm_type);
  add_integer(p, "comm_size", n.comm_size);
  add_integer(p, "comm_src", n.comm_src);
  add_integer(p, "comm_dst", n.comm_dst);
  add_integer(p, "comm_tag", n.comm_tag);
  add_integer(p, "num_ops", n.num_ops);
  add_integer(p, "tensor_size", n.tensor_size);
  if (n.pg_name) {
    auto* a = p.add_attr();
    a->set_name("pg_name");
    a->set_string_val(*n.pg_name);
  }
  if (!n.involved_dim.empty()) {
    auto* a = p.add_attr();
    a->set_name("involved_dim");
    for (bool b : n.involved_dim) a->mutable_bool_list()->add_values(b);
  }
  return p;
}

// protobuf reports some problems (a string field that is not UTF-8) in a log line on
// stderr, besides failing the parse: its handler keeps the line instead, so that the
// one error line says it. Installed once, for the process (collsim is its only user).
thread_local std::string protobuf_problem;

void keep_protobuf_problem(google::protobuf::LogLevel, const char*, int, const std::string& line) {
  protobuf_problem = line.substr(0, line.find(". "));  // not its advice on the 'bytes' type
}

void quiet_protobuf() {
  [[maybe_unused]] static const auto previous = google::protobuf::SetLogHandler(keep_protobuf_problem);
  protobuf_problem.clear();
}

// Length-prefixed messages (a varint size, then the message) from bytes in memory.
// Each size is checked against what is left and against kMaxChakraMessageBytes before
// protobuf parses (and allocates) anything.
struct Framing {
  google::protobuf::io::CodedInputStream& in;
  std::size_t size;
  const std::string& where;

  // The next message into `m`; false at the end of the data, between two messages.
  bool next(google::protobuf::Message& m, const std::string& label) const {
    const auto at = static_cast<std::size_t>(in.CurrentPosition());
    if (at == size) return false;
    std::uint64_t length = 0;  // 64 bits: a 32-bit read would drop a long prefix's high bits
    if (!in.ReadVarint64(&length))
      throw InputError(where, fmt::format("{} is damaged or cut short: its length (a varint) is "
                                          "malformed",
                                          label));
    const std::size_t left = size - static_cast<std::size_t>(in.CurrentPosition());
    if (length > kMaxChakraMessageBytes)
      throw InputError(where, fmt::format("{} is {} bytes long, more than the {} bytes (1 MiB) "
                                          "collsim reads as one message",
                                          label, length, kMaxChakraMessageBytes));
    if (length > left)
      throw InputError(where, fmt::format("{} is damaged or cut short: {} bytes long, {} left in "
                                          "the file",
                                          label, length, left));
    const auto limit = in.PushLimit(static_cast<int>(length));
    quiet_protobuf();
    if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
      throw InputError(where, protobuf_problem.empty()
                                  ? fmt::format("{} is damaged or cut short", label)
                                  : fmt::format("{} is damaged: {}", label, protobuf_problem));
    in.PopLimit(limit);
    return true;
  }
};

// A node's type and its share of the budget, refused as it is read: nothing of a trace
// beyond the budget is kept.
void take(const pb::Node& p, ChakraBudget& budget, const std::string& where,
          const std::string& label) {
  const std::string node =
      p.name().empty() ? fmt::format("node {}", p.id())
                       : fmt::format("node {} (\"{}\")", p.id(), p.name());
  if (!chakra_node_type_known(p.type()))
    throw InputError(where, fmt::format("{}, {}: {}", label, node, chakra_node_type_problem(p.type())));
  if (--budget.nodes < 0)
    throw InputError(where, fmt::format("{}: a trace may have at most {} nodes, all ranks "
                                        "together",
                                        label, kMaxChakraNodes));
  budget.dependencies -= p.data_deps_size() + p.ctrl_deps_size();
  if (budget.dependencies < 0)
    throw InputError(where, fmt::format("{}, {}: a trace may have at most {} dependencies, all "
                                        "ranks together",
                                        label, node, kMaxChakraDependencies));
}

}  // namespace

bool chakra_files_supported() {
  return true;
}

ChakraTrace parse_chakra_trace(std::string_view bytes, const std::string& where,
                               ChakraBudget& budget) {
  if (static_cast<std::int64_t>(bytes.size()) > kMaxChakraBytes)  // read_chakra_file's bound
    throw InputError(where, fmt::format("{} bytes, more than the {} of a whole trace", bytes.size(),
                                        kMaxChakraBytes));
  google::protobuf::io::ArrayInputStream array(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&array);
  const Framing framing{in, bytes.size(), where};
  ChakraTrace trace;
  pb::GlobalMetadata meta;
  if (!framing.next(meta, "the global metadata message"))
    throw InputError(where, "empty file: expected a Chakra trace (global metadata, then nodes)");
  trace.version = meta.version();
  for (pb::Node node;; node.Clear()) {
    const std::size_t taken = trace.nodes.size();
    const std::string label = fmt::format("node message #{} (after {} whole node{})", taken + 1,
                                          taken, taken == 1 ? "" : "s");
    if (!framing.next(node, label)) break;
    take(node, budget, where, label);
    trace.nodes.push_back(from_proto(node, where));
  }
  return trace;
}

void write_chakra_file(const fs::path& file, const ChakraTrace& trace) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(file.string(), "cannot write the trace file");
  using google::protobuf::util::SerializeDelimitedToOstream;
  pb::GlobalMetadata meta;
  meta.set_version(trace.version);
  bool ok = SerializeDelimitedToOstream(meta, &out);
  for (const auto& n : trace.nodes) ok = ok && SerializeDelimitedToOstream(to_proto(n), &out);
  out.close();
  if (!ok || !out) throw InputError(file.string(), "writing the trace file failed");
}

}  // namespace collsim
