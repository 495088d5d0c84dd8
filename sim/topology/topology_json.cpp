#include "topology/topology_json.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_view.h"
#include "core/units.h"
#include "topology/presets.h"

#ifndef COLLSIM_SOURCE_TOPOLOGIES
#define COLLSIM_SOURCE_TOPOLOGIES ""
#endif

namespace collsim {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxGpus = 1 << 20;

LinkKind link_kind_of(const JsonView& v) {
  return *link_kind_from_name(v.as_choice(all_link_kind_names()));
}

double bandwidth_or(const JsonView& spec, const char* key, double fallback) {
  return spec.has(key) ? spec[key].as_bandwidth() : fallback;
}
Time latency_or(const JsonView& spec, const char* key, Time fallback = 0) {
  return spec.has(key) ? from_seconds(spec[key].as_duration()) : fallback;
}

const GpuModel* gpu_model_of(const JsonView& v) {
  return find_gpu_model(v.as_choice(gpu_model_names()));
}

HostCpu host_cpu_of(const JsonView& v) {
  return v.as_choice(host_cpu_names()) == "amd" ? HostCpu::Amd : HostCpu::Intel;
}

// A named GPU model sets the server's links and its switch; the fields stated beside it
// override its links.
ServerParams server_from_json(const JsonView& spec) {
  ServerParams s;
  if (spec.has("gpu")) {
    s.gpu = gpu_model_of(spec["gpu"]);
    s.nvlink = s.gpu->nvlink;
    s.pcie = s.gpu->pcie;
    s.nic = s.gpu->nic;
  }
  if (spec.has("cpu")) s.cpu = host_cpu_of(spec["cpu"]);
  if (spec.has("gpus_per_node")) s.gpus = static_cast<int>(spec["gpus_per_node"].as_int(1, 1024));
  s.nvlink = bandwidth_or(spec, "nvlink", s.nvlink);
  s.nvlink_latency = latency_or(spec, "nvlink_latency");
  s.pcie = bandwidth_or(spec, "pcie", s.pcie);
  s.nic = bandwidth_or(spec, "nic", s.nic);
  s.nic_latency = latency_or(spec, "nic_latency");
  return s;
}

Dimension dimension_from_json(const JsonView& v) {
  v.allow_only(kDimensionFields);
  Dimension d;
  const std::string shape = v["shape"].as_choice({"ring", "switch", "fully_connected"});
  d.shape = shape == "ring"     ? Dimension::Shape::Ring
            : shape == "switch" ? Dimension::Shape::Switch
                                : Dimension::Shape::FullyConnected;
  d.size = static_cast<int>(v["size"].as_int(1, 1 << 16));
  d.bandwidth = v["bandwidth"].as_bandwidth();
  d.latency = latency_or(v, "latency");
  if (v.has("kind")) d.kind = link_kind_of(v["kind"]);
  return d;
}

void check_gpu_count(const JsonView& spec, long long gpus) {
  if (gpus > kMaxGpus)
    spec.fail_message(fmt::format("{} GPUs is more than the {} supported", gpus, kMaxGpus));
}

// Cables (duplex links) a preset may build: refused before building, so that a fully
// connected dimension of 65536 or 65536 spines cannot exhaust memory (2^24 cables
// take about 3 GiB).
constexpr double kMaxCables = 1 << 24;

void check_cable_count(const JsonView& spec, double cables) {
  if (cables > kMaxCables)
    spec.fail_message(
        fmt::format("this preset would build {} links, more than the {} collsim "
                    "holds in memory (2^24)",
                    format_significant(cables, 3), static_cast<long long>(kMaxCables)));
}

double cables_of(const std::vector<Dimension>& dims) {
  double total = 1, cables = 0;
  for (const auto& d : dims) total *= d.size;
  for (const auto& d : dims) {
    const double lines = total / d.size, n = d.size;
    cables += lines * (d.shape == Dimension::Shape::FullyConnected ? n * (n - 1) / 2 : n);
  }
  return cables;
}

// Each preset's builder reads its own fields; preset_from_json has checked that the spec
// holds no others (Preset::fields).
Topology switch_preset(const JsonView& spec) {
  const int gpus = static_cast<int>(spec["gpus"].as_int(1, kMaxGpus));
  const LinkKind kind = spec.has("kind") ? link_kind_of(spec["kind"]) : LinkKind::NvLink;
  return make_switch_topology(gpus, spec["bandwidth"].as_bandwidth(), latency_or(spec, "latency"),
                              kind);
}

Topology nvl72_preset(const JsonView& spec) {
  const int gpus = spec.has("gpus") ? static_cast<int>(spec["gpus"].as_int(1, kMaxGpus)) : 72;
  return make_nvl72_topology(gpus, bandwidth_or(spec, "bandwidth", 900e9),
                             latency_or(spec, "latency"));
}

Topology ring_preset(const JsonView& spec) {
  const int gpus = static_cast<int>(spec["gpus"].as_int(1, kMaxGpus));
  const bool bidir = spec.has("bidirectional") ? spec["bidirectional"].as_bool() : true;
  const LinkKind kind = spec.has("kind") ? link_kind_of(spec["kind"]) : LinkKind::NvLink;
  return make_ring_topology(gpus, spec["bandwidth"].as_bandwidth(), latency_or(spec, "latency"),
                            bidir, kind);
}

Topology dgx_preset(const JsonView& spec) {
  return make_dgx_topology(server_from_json(spec));
}

// A ratio like "oversubscription": at least 1 (2 means 2:1), at most kMaxRatio (beyond
// it an uplink's rate would leave the range bandwidths are held to).
constexpr double kMaxRatio = 1000;
double ratio_field(const JsonView& v) {
  const double ratio = v.as_number();
  if (!(ratio >= 1 && ratio <= kMaxRatio))
    v.fail(fmt::format("a ratio from 1 to {} (2 means 2:1)", kMaxRatio));
  return ratio;
}

Topology cluster_preset(const JsonView& spec) {
  ClusterParams p;
  p.nodes = static_cast<int>(spec["nodes"].as_int(1, kMaxGpus));
  p.server = server_from_json(spec);
  check_gpu_count(spec, static_cast<long long>(p.nodes) * p.server.gpus);
  if (spec.has("radix")) p.radix = static_cast<int>(spec["radix"].as_int(2, 1 << 16));
  if (spec.has("oversubscription")) p.oversubscription = ratio_field(spec["oversubscription"]);
  if (spec.has("spines")) p.spines = static_cast<int>(spec["spines"].as_int(1, 1 << 16));
  if (spec.has("fabric")) p.fabric = link_kind_of(spec["fabric"]);
  if (spec.has("sharp")) p.sharp = spec["sharp"].as_bool();
  if (spec.has("pod_nodes")) p.pod_nodes = static_cast<int>(spec["pod_nodes"].as_int(1, kMaxGpus));
  if (spec.has("cores")) p.cores = static_cast<int>(spec["cores"].as_int(1, 1 << 16));
  if (spec.has("core_oversubscription"))
    p.core_oversubscription = ratio_field(spec["core_oversubscription"]);
  for (const char* three_tier : {"cores", "core_oversubscription"})
    if (spec.has(three_tier) && !spec.has("pod_nodes"))
      spec[three_tier].fail_message("only a three-tier cluster has cores: set \"pod_nodes\" too");
  // Every leaf reaches every spine of its pod, every pod spine every core.
  const double pods = p.pod_nodes > 0 ? std::ceil(double(p.nodes) / p.pod_nodes) : 1;
  const double leaves = double(p.nodes) * p.server.gpus;  // at most one per NIC
  check_cable_count(spec,
                    2.0 * p.nodes * p.server.gpus + leaves * p.spines + pods * p.spines * p.cores);
  return make_cluster_topology(p);
}

Topology torus_preset(const JsonView& spec) {
  const std::vector<int> sizes = spec["dims"].as_int_list(1, 1 << 16);
  if (sizes.empty() || sizes.size() > 3)
    spec["dims"].fail("1 to 3 sizes, like [8] (a ring), [4, 4] or [4, 4, 4]");
  std::vector<Dimension> dims;
  long long total = 1;
  for (int n : sizes) {
    dims.push_back({Dimension::Shape::Ring, n, spec["bandwidth"].as_bandwidth(),
                    latency_or(spec, "latency"),
                    spec.has("kind") ? link_kind_of(spec["kind"]) : LinkKind::NvLink});
    total *= n;
  }
  check_gpu_count(spec, total);
  check_cable_count(spec, cables_of(dims));
  return make_multidim_topology(dims, "torus");
}

Topology multidim_preset(const JsonView& spec) {
  std::vector<Dimension> dims;
  long long total = 1;
  const JsonView list = spec["dims"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    dims.push_back(dimension_from_json(list[i]));
    total *= dims.back().size;
  }
  if (dims.empty()) list.fail("at least one dimension");
  check_gpu_count(spec, total);
  check_cable_count(spec, cables_of(dims));
  return make_multidim_topology(dims);
}

// The registry: a preset is its builder and one line here (its fields: topology_json.h).
struct PresetBuilder {
  std::string_view preset;
  Topology (*build)(const JsonView& spec);
};
constexpr PresetBuilder kPresetBuilders[] = {
    {"switch", switch_preset}, {"ring", ring_preset},        {"dgx-h100", dgx_preset},
    {"dgx", dgx_preset},       {"cluster", cluster_preset},  {"nvl72", nvl72_preset},
    {"torus", torus_preset},   {"multidim", multidim_preset}};
constexpr bool every_builder_has_fields() {
  for (const PresetBuilder& b : kPresetBuilders) {
    bool found = false;
    for (const PresetFields& f : kPresetFields) found = found || f.preset == b.preset;
    if (!found) return false;
  }
  return std::size(kPresetBuilders) == std::size(kPresetFields);
}
static_assert(every_builder_has_fields(), "every preset has a builder and a list of fields");

Topology preset_from_json(const JsonView& spec) {
  std::vector<std::string> names;
  for (const PresetBuilder& b : kPresetBuilders) names.emplace_back(b.preset);
  const std::string preset = spec["preset"].as_choice(names);
  const auto fields = std::find_if(std::begin(kPresetFields), std::end(kPresetFields),
                                   [&](const PresetFields& f) { return f.preset == preset; });
  const auto builder = std::find_if(std::begin(kPresetBuilders), std::end(kPresetBuilders),
                                    [&](const PresetBuilder& b) { return b.preset == preset; });
  if (fields == std::end(kPresetFields))
    throw std::logic_error("preset \"" + preset + "\" has no list of fields");
  spec.allow_only(preset_fields(*fields));
  return builder->build(spec);
}

NodeId node_ref(const Topology& t, const JsonView& v) {
  const std::string name = v.as_string();
  if (auto id = t.find(name)) return *id;
  std::vector<std::string> names;
  for (const auto& n : t.nodes()) names.push_back(n.name);
  if (auto near = nearest_word(name, names))
    v.fail_message(fmt::format("no node named \"{}\"; did you mean \"{}\"?", name, *near));
  v.fail_message(fmt::format("no node named \"{}\"", name));
}

namespace {

// A server's GPUs and NICs each name their host, or none does (infer_hosts then finds the
// servers): one left out sat in no server (host -1), which the planners took for a server
// of its own, or named in their messages.
void check_hosts_named(const Topology& t, const JsonView& nodes) {
  std::optional<std::size_t> named, unnamed;
  for (std::size_t i = 0; i < t.nodes().size(); ++i) {
    const Node& n = t.node(static_cast<NodeId>(i));
    if (n.kind != NodeKind::Gpu && n.kind != NodeKind::Nic) continue;
    std::optional<std::size_t>& first = n.host >= 0 ? named : unnamed;
    if (!first) first = i;
  }
  if (named && unnamed)
    nodes[*unnamed].fail_message(fmt::format(
        "names no \"host\", while nodes[{}] (\"{}\") does: give every GPU and NIC its host, or "
        "none (collsim then finds the servers from the links inside them)",
        *named, t.node(static_cast<NodeId>(*named)).name));
}

// Where no node names its host: the servers are the islands the links inside a server (NVLink,
// NVSwitch, PCIe) join, each with its NICs, when there are several. Left unknown, two NVLink
// islands joined only through the network were one server to the planners, and a hierarchical
// all-reduce ran as a flat ring (4x slower).
void infer_hosts(Topology& t) {
  for (const Node& n : t.nodes())
    if (n.host >= 0) return;
  std::vector<NodeId> parent(t.nodes().size());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<NodeId>(i);
  const auto root = [&](NodeId x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const Link& l : t.links())
    if (l.kind == LinkKind::NvLink || l.kind == LinkKind::NvSwitch || l.kind == LinkKind::Pcie)
      parent[root(l.src)] = root(l.dst);
  std::map<NodeId, int> host_of_root;  // islands with a GPU, numbered by their first GPU
  for (std::size_t i = 0; i < parent.size(); ++i)
    if (t.node(static_cast<NodeId>(i)).kind == NodeKind::Gpu)
      host_of_root.emplace(root(static_cast<NodeId>(i)), static_cast<int>(host_of_root.size()));
  if (host_of_root.size() < 2) return;  // one server: as unknown
  for (std::size_t i = 0; i < parent.size(); ++i)
    if (auto it = host_of_root.find(root(static_cast<NodeId>(i))); it != host_of_root.end())
      t.set_host(static_cast<NodeId>(i), it->second);
}

}  // namespace

Topology graph_from_json(const JsonView& spec) {
  spec.allow_only(kGraphFields);
  Topology t;
  t.name = spec.has("name") ? spec["name"].as_name() : "custom";
  if (spec.has("gpu")) t.gpu = gpu_model_of(spec["gpu"]);
  if (spec.has("cpu")) t.host_cpu = host_cpu_of(spec["cpu"]);
  // NCCL rates NVLS by the generation's nvlsEfficiency; a named model's is the default.
  const double sharp_default = t.gpu ? sharp_efficiency_for(t.gpu->arch) : kDefaultSharpEfficiency;
  const JsonView nodes = spec["nodes"];
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const JsonView n = nodes[i];
    n.allow_only(kNodeFields);
    Node node;
    node.name = n["name"].as_name();
    node.kind = *node_kind_from_name(n["kind"].as_choice(all_node_kind_names()));
    if (n.has("rank")) {
      if (node.kind != NodeKind::Gpu) n["rank"].fail_message("only GPU nodes have a rank");
      node.rank = static_cast<int>(n["rank"].as_int(0, kMaxGpus));
    }
    if (n.has("host")) node.host = static_cast<int>(n["host"].as_int(0, kMaxGpus));
    if (n.has("sharp")) {
      if (!can_reduce(node.kind))
        n["sharp"].fail_message("only switches reduce (nvswitch, switch, leaf, spine, core)");
      node.sharp = n["sharp"].as_bool();
    }
    node.sharp_efficiency =
        node.kind == NodeKind::NvSwitch ? sharp_default : kNetworkSharpEfficiency;
    if (n.has("sharp_efficiency")) {
      if (!node.sharp) n["sharp_efficiency"].fail_message("only a node with \"sharp\": true reduces");
      node.sharp_efficiency = n["sharp_efficiency"].as_number();
      if (!(node.sharp_efficiency > 0 && node.sharp_efficiency <= 1))
        n["sharp_efficiency"].fail("a fraction of the link rate in (0, 1]");
    }
    if (t.find(node.name))
      n["name"].fail_message(fmt::format("duplicate node name \"{}\"", node.name));
    t.add_node(std::move(node));
  }
  check_hosts_named(t, nodes);
  const JsonView links = spec["links"];
  // Which entry of "links" made each directed link: a second one between the same two
  // nodes in the same direction is a mistake (routing would use only one of them).
  std::map<std::pair<NodeId, NodeId>, std::size_t> made_by;
  std::vector<bool> linked(t.nodes().size(), false);
  for (std::size_t i = 0; i < links.size(); ++i) {
    const JsonView l = links[i];
    l.allow_only(kLinkFields);
    const NodeId src = node_ref(t, l["src"]);
    const NodeId dst = node_ref(t, l["dst"]);
    if (src == dst) l["dst"].fail_message("a link must join two different nodes");
    const double bw = l["bandwidth"].as_bandwidth();
    const Time lat = from_seconds(l.has("latency") ? l["latency"].as_duration() : 0.0);
    const LinkKind kind = link_kind_of(l["kind"]);
    const bool duplex = l.has("duplex") ? l["duplex"].as_bool() : true;
    for (const auto& [a, b] : {std::pair{src, dst}, std::pair{dst, src}}) {
      if (a == dst && !duplex) break;
      auto [it, fresh] = made_by.emplace(std::pair{a, b}, i);
      if (!fresh)
        l.fail_message(fmt::format("duplicate of links[{}] ({} -> {})", it->second, t.node(a).name,
                                   t.node(b).name));
    }
    linked[src] = linked[dst] = true;
    if (duplex)
      t.add_duplex(src, dst, bw, lat, kind);
    else
      t.add_link({src, dst, bw, lat, kind});
  }
  for (std::size_t i = 0; i < linked.size(); ++i)
    if (!linked[i] && t.node(static_cast<NodeId>(i)).kind != NodeKind::Gpu)
      nodes[i].fail_message(fmt::format("{} \"{}\" has no links",
                                        name_of(t.node(static_cast<NodeId>(i)).kind),
                                        t.node(static_cast<NodeId>(i)).name));
  try {
    t.assign_ranks();
  } catch (const std::invalid_argument& e) {
    nodes.fail_message(e.what());
  }
  if (t.num_ranks() == 0) nodes.fail_message("a topology needs at least one node of kind \"gpu\"");
  infer_hosts(t);
  return t;
}

Topology topology_from_object(const JsonView& spec) {
  if (spec.has("preset")) return preset_from_json(spec);
  if (spec.has("nodes")) return graph_from_json(spec);
  if (spec.has("collectives") || spec.has("workload"))
    spec.fail_message(
        "expected a topology, got a scenario: name its topology (or the scenario's \"topology\" "
        "value) instead");
  spec.fail_message(
      "expected {\"preset\": ...}, {\"nodes\": [...], \"links\": [...]}, or a file name");
}

fs::path resolve_topology_file(const JsonView& v, const fs::path& base_dir) {
  const std::string name = v.as_string();
  const fs::path as_path = base_dir / name;
  if (is_regular_file_quietly(as_path.string())) return as_path;
  for (const auto& dir : topology_search_path()) {
    for (const fs::path& candidate : {dir / name, dir / (name + ".json")})
      if (is_regular_file_quietly(candidate.string())) return candidate;
  }
  std::error_code ec;
  if (fs::exists(as_path, ec))  // a folder, a device, a pipe: there, but no file to read
    v.fail_message(
        fmt::format("\"{}\" is not a regular file: expected a topology file (JSON) "
                    "or a bundled topology's name",
                    as_path.string()));
  const auto names = bundled_topology_names();
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  v.fail_message(fmt::format(
      "no topology file \"{}\" (relative to {}) and no bundled topology of that name; "
      "bundled: {}",
      name, base_dir.empty() ? "." : base_dir.string(), known.empty() ? "none found" : known));
}

}  // namespace

std::vector<fs::path> topology_search_path() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("COLLSIM_TOPOLOGY_PATH")) {
    std::string s = env;
    for (std::size_t start = 0; start <= s.size();) {
      std::size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) dirs.emplace_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  if (*COLLSIM_SOURCE_TOPOLOGIES) dirs.emplace_back(COLLSIM_SOURCE_TOPOLOGIES);
  return dirs;
}

std::vector<std::string> bundled_topology_names() {
  std::vector<std::string> names;
  for (const auto& dir : topology_search_path()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Topology load_topology(const JsonView& spec, const fs::path& base_dir) {
  if (spec.is_object()) return topology_from_object(spec);
  if (!spec.is_string()) spec.fail("a topology object, a file name or a bundled topology name");
  const fs::path file = resolve_topology_file(spec, base_dir);
  const nlohmann::json doc = read_json_file(file.string(), spec.path());
  // Errors inside the file name the file, so the user knows where to look.
  return topology_from_object(JsonView(doc, file.filename().string() + ":"));
}

nlohmann::json topology_to_json(const Topology& t) {
  nlohmann::json nodes = nlohmann::json::array(), links = nlohmann::json::array();
  for (const auto& n : t.nodes()) {
    nlohmann::json j = {{"name", n.name}, {"kind", name_of(n.kind)}};
    if (n.kind == NodeKind::Gpu) j["rank"] = n.rank;
    if (n.host >= 0) j["host"] = n.host;
    if (n.sharp) j["sharp"] = true;
    if (n.sharp && n.sharp_efficiency != (n.kind == NodeKind::NvSwitch ? kDefaultSharpEfficiency
                                                                       : kNetworkSharpEfficiency))
      j["sharp_efficiency"] = n.sharp_efficiency;
    nodes.push_back(std::move(j));
  }
  for (const auto& l : t.links()) {
    links.push_back({{"src", t.node(l.src).name},
                     {"dst", t.node(l.dst).name},
                     {"bandwidth", fmt::format("{}B/s", l.bandwidth)},
                     {"latency", fmt::format("{}ps", l.latency)},
                     {"kind", name_of(l.kind)},
                     {"duplex", false}});
  }
  nlohmann::json out = {{"name", t.name}, {"nodes", nodes}, {"links", links}};
  if (t.gpu) out["gpu"] = std::string(t.gpu->name);
  if (t.host_cpu) out["cpu"] = std::string(name_of(*t.host_cpu));
  return out;
}

}  // namespace collsim
