#pragma once
// A field of a JSON input, declared once beside the loader that reads it: its name (what
// the loader accepts), its JSON Schema (type, bounds, default, description) and whether it
// is required. The loader refuses names not in its table; `collsim schema`
// (scenario/schema.h) writes the JSON Schema of every input from the same tables.
#include <span>
#include <string_view>
#include <vector>

namespace collsim {

struct FieldDoc {
  std::string_view name;
  // The field's JSON Schema as JSON text. A string "@NAME" in it stands for a list or a
  // value kept in a registry (the algorithms, the ops, the dtypes...) and "properties":
  // "@fields:TABLE" for another table's fields: scenario/schema.cpp fills both in.
  std::string_view schema;
  bool required = false;
};

inline constexpr bool kRequired = true;

inline std::vector<std::string_view> field_names(std::span<const FieldDoc> fields) {
  std::vector<std::string_view> out;
  out.reserve(fields.size());
  for (const FieldDoc& f : fields) out.push_back(f.name);
  return out;
}

}  // namespace collsim
