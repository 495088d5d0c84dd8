#include "request/nccl_lists.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/json_view.h"
#include "schedule/nccl_family.h"

namespace collsim {
namespace {

// The collectives NCCL_ALGO / NCCL_PROTO may name before a colon: NCCL's function names,
// compared as NCCL does, ignoring case.
constexpr std::string_view kNcclFunctions[] = {"broadcast", "reduce", "allgather", "reducescatter",
                                               "allreduce"};
static_assert(std::size(kNcclFunctions) == NcclLists::kFunctions);

// A name compared in any case and without "_": NCCL's own spelling ("NVLSTree", which NCCL
// compares ignoring case) and collsim's catalogue names ("nvls_tree", which NCCL would not
// take) both match.
std::string nccl_key(std::string_view name) {
  std::string key;
  for (char ch : name)
    if (ch != '_') key += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return key;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// The slot of NCCL's function `name` (its place in kNcclFunctions); kNcclFunctions' size
// for a name that is none of them.
std::size_t slot_of(std::string_view name) {
  return static_cast<std::size_t>(
      std::find(std::begin(kNcclFunctions), std::end(kNcclFunctions), name) -
      std::begin(kNcclFunctions));
}

// One list of NCCL_ALGO / NCCL_PROTO: "ring,tree", or "^ll128" for all but those; empty
// names between commas are skipped, as NCCL's strtok does ("^" alone: all of them).
template <typename T>
std::vector<T> list_of(const JsonView& v, std::string_view list, std::vector<T> all,
                       std::string_view names) {
  const bool except = !list.empty() && list.front() == '^';
  if (except) list.remove_prefix(1);
  std::vector<T> listed;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string_view name = list.substr(at, comma - at);
    at = comma + 1;
    if (name.empty()) continue;
    const std::string key = nccl_key(name);
    const auto x = std::find_if(all.begin(), all.end(),
                                [&](T candidate) { return nccl_key(name_of(candidate)) == key; });
    if (x == all.end())
      v.fail_message(fmt::format(
          "\"{}\" is not one of {} (a comma-separated list, \"^\" first: all but those; "
          "per collective as \"allreduce:ring;allgather:^nvls\")",
          name, names));
    listed.push_back(*x);
  }
  if (!except) return listed;
  std::erase_if(all,
                [&](T x) { return std::find(listed.begin(), listed.end(), x) != listed.end(); });
  return all;
}

}  // namespace

// Lists separated by ";" (empty ones skipped), the first for every collective when it names
// none, each other one after a collective's name and a colon ("ring;allreduce:tree,nvls"); a
// later list for a collective replaces an earlier one.
template <typename T>
NcclLists::Field<T> NcclLists::parse_field(const JsonView& v, std::vector<T> all,
                                           std::string_view names) {
  Field<T> field;
  field.path = v.path();
  const std::string text = v.as_string();
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t semicolon = std::min(text.find(';', at), text.size());
    std::string_view entry = std::string_view(text).substr(at, semicolon - at);
    const bool first = at == 0;
    at = semicolon + 1;
    if (entry.empty()) continue;
    std::optional<std::size_t> slot;  // nullopt: every collective
    if (const std::size_t colon = entry.find(':'); colon != std::string_view::npos) {
      slot = slot_of(lowercase(entry.substr(0, colon)));
      if (*slot == std::size(kNcclFunctions))
        v.fail_message(fmt::format("\"{}\" before a colon is not one of NCCL's functions ({})",
                                   entry.substr(0, colon), fmt::join(kNcclFunctions, ", ")));
      entry.remove_prefix(colon + 1);
    } else if (!first) {
      v.fail_message(
          fmt::format("\"{}\": every list after the first names its collective, "
                      "as \"allreduce:ring\"",
                      entry));
    }
    std::vector<T> list = list_of(v, entry, all, names);
    if (slot)
      field.allowed[*slot] = std::move(list);
    else
      field.allowed.fill(list);
  }
  return field;
}

template <typename T>
std::vector<T> NcclLists::Field<T>::for_function(std::size_t slot, CollectiveOp op) const {
  const std::optional<std::vector<T>>& mine = allowed[slot];
  if (!mine) return {};
  if (mine->empty()) throw InputError(path, fmt::format("excludes everything for {}", name_of(op)));
  return *mine;
}

NcclLists NcclLists::parse(const JsonView& v, std::string_view algorithm) {
  const bool nccl = algorithm == "nccl";
  for (const char* key : {"nccl_algo", "nccl_proto"})
    if (!nccl && v.has(key))
      v[key].fail_message("only \"algorithm\": \"nccl\" takes it (what NCCL may pick)");
  if (nccl && v.has("protocol"))
    v["protocol"].fail_message("NCCL picks the protocol; restrict it with \"nccl_proto\"");
  NcclLists lists;
  if (auto a = v.find("nccl_algo"))
    lists.algorithms_ =
        parse_field<NcclAlgo>(*a, {std::begin(kNcclAlgos), std::end(kNcclAlgos)},
                              "ring, tree, nvls, nvlstree, pat, collnetdirect, collnetchain");
  if (auto p = v.find("nccl_proto"))
    lists.protocols_ = parse_field<Protocol>(*p, {std::begin(kProtocols), std::end(kProtocols)},
                                             "ll, ll128, simple");
  return lists;
}

NcclFilter NcclLists::filter_for(CollectiveOp op) const {
  const std::size_t slot = slot_of(nccl_key(name_of(op)));
  if (slot == kFunctions) return {};  // point-to-point sends
  return {algorithms_.for_function(slot, op), protocols_.for_function(slot, op)};
}

}  // namespace collsim
