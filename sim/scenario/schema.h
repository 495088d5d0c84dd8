#pragma once
// The JSON Schemas of scenario and topology files (`collsim schema`), for editors and
// validators. They are written from what the loaders read: every field from its
// FieldDoc table beside its loader (core/field_doc.h), every name list from its registry
// (algorithms, collectives, dtypes, protocols, network models, presets, link and node
// kinds, models, GPUs). Only the shape around them (which object sits where, the value
// types every file shares) is written here. scenarios/schema/ holds their output, and
// tests/test_schema.cpp checks it is up to date.
#include <string>

namespace collsim {

// Each as the text of a JSON document, indented by two, ending in a newline.
std::string scenario_schema();
std::string topology_schema();
// The scenario schema with the topology schema inside it (its references to
// "topology.schema.json" made local): one document a validator needs nothing else for, as
// Python's jsonschema.validate(doc, collsim.schema()) takes it. The two files keep them
// apart, beside each other, as editors resolve them.
std::string scenario_schema_whole();
// Both as a Markdown reference, a table per object (docs/schema.md).
std::string schema_reference();

}  // namespace collsim
