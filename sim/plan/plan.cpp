#include "plan/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "core/error.h"
#include "nccl/nccl_model.h"
#include "network/network_model.h"
#include "schedule/generators/channels.h"
#include "topology/routing.h"

namespace collsim {
namespace {

std::vector<NodeId> placement(const Topology& topology, const std::vector<int>& ranks) {
  std::vector<NodeId> out;
  out.reserve(ranks.size());
  for (int r : ranks) out.push_back(topology.gpu_of_rank(r));
  return out;
}

void check_reachable(const Topology& t, const PlannedCollective& c, Router& router) {
  if (auto bad = router.find_unreachable(c.gpus)) {
    const Node& a = t.node(bad->first);
    const Node& b = t.node(bad->second);
    throw InputError("topology",
                     fmt::format("rank {} ({}) cannot reach rank {} ({}), which {} needs; "
                                 "every pair of ranks needs a directed path",
                                 a.rank, a.name, b.rank, b.name, c.spec.json_path));
  }
}

// Settles one collective: an algorithm ("auto": each applicable one), its
// defaults from the topology, and "segments": "auto" wherever it appears (the
// collective, or a hierarchical level), by trying candidates at the cost given.
class Tuner {
 public:
  Tuner(const Scenario& s, Router& router, const CostFunction& cost,
        ScheduleHolding holding = ScheduleHolding::Stored)
      : scenario_(s), router_(router), cost_(cost), holding_(holding) {}

  PlannedCollective plan(const CollectiveSpec& spec) {
    // Before any routing or tuning: a million ranks are refused at once, not after a search
    // (channels left to the topology count as one here; their number is checked once known).
    const bool streamed = holding_ == ScheduleHolding::Streamed;
    const CollectiveSpec* checked = &spec;
    CollectiveSpec least;
    if (spec.options.auto_channels) {
      least = spec;
      least.options.auto_channels = false;
      least.options.channels = 1;
      checked = &least;
    }
    if (std::string too_big = schedule_size_problem(*checked, streamed); !too_big.empty())
      throw InputError(spec.json_path, too_big);
    if (spec.algorithm == "nccl") return plan_nccl(spec);
    PlannedCollective base{
        spec, nullptr, {}, placement(scenario_.topology, spec.ranks), 0, scenario_.network.cost,
        {}};
    check_reachable(scenario_.topology, base, router_);
    const bool auto_algorithm = spec.algorithm == "auto";
    std::vector<std::string> algorithms{spec.algorithm};
    if (auto_algorithm) algorithms = algorithms_for(spec.shape.op);

    std::optional<PlannedCollective> best;
    double best_time = 0;
    std::vector<Candidate> tried;
    std::string refusal;  // why the first inapplicable candidate did not apply
    for (const auto& a : algorithms) {
      const AlgorithmEntry& entry = *find_algorithm(spec.shape.op, a);
      // One algorithm: the base itself (no copy of a collective per collective).
      PlannedCollective trial = algorithms.size() == 1 ? std::move(base) : base;
      trial.spec.algorithm = a;
      trial.spec.options = entry.own(spec.options);
      const auto protocols = protocols_to_try(spec.protocol, spec.shape.op, a);
      try {
        fill_defaults(entry, trial);
        if (std::string too_big = schedule_size_problem(trial.spec, streamed); !too_big.empty())
          throw InputError(spec.json_path, too_big);
        if (!auto_algorithm && !has_auto(trial.spec.options) && protocols.size() == 1) {
          with_protocol(trial, protocols.front());
          if (holding_ == ScheduleHolding::Streamed && streams(trial.spec)) {
            trial.streamed = true;  // generated (and checked) as it is simulated
            return trial;
          }
          trial.schedule = SharedSchedule(generate_schedule(trial.spec));
          return finish(std::move(trial));  // nothing to choose
        }
        const std::vector<AlgorithmOptions> candidates = expand_auto(entry, trial);
        for (const AlgorithmOptions& o : candidates) {
          PlannedCollective t = trial;  // no schedule yet: cheap to copy
          t.spec.options = o;
          if (&o != &candidates.front() && schedule_ops_bound(t.spec) > kMostOpsTried) continue;
          t.schedule = SharedSchedule(generate_schedule(t.spec));
          for (const std::string& p : protocols) {
            with_protocol(t, p);
            tried.push_back({a, o, t.label(), cost_(t), p});
            if (!best || tried.back().time_s < best_time) {
              best = t;
              best_time = tried.back().time_s;
            }
          }
        }
      } catch (const InputError& e) {
        if (!auto_algorithm) throw;
        if (refusal.empty()) refusal = fmt::format("{}: {}", a, e.what());
      }
    }
    if (!best)
      throw InputError(spec.settings_at(".algorithm"),
                       "no algorithm applies here" + (refusal.empty() ? "" : " (" + refusal + ")"));
    best->choice = std::make_shared<const AutoChoice>(choice_among(tried, auto_algorithm));
    return finish(std::move(*best));
  }

 private:
  // Whether `test` holds of the algorithm's entry with its options, at the top or for
  // any level (a level's algorithm looked up under the collective's op, as planned).
  template <class Test>
  static bool any_level(const CollectiveSpec& spec, Test test) {
    auto holds = [&](const std::string& a, const AlgorithmOptions& o) {
      const AlgorithmEntry* e = find_algorithm(spec.shape.op, a);
      return e && test(*e, o);
    };
    return holds(spec.algorithm, spec.options) ||
           std::any_of(spec.options.levels.begin(), spec.options.levels.end(),
                       [&](const LevelSpec& l) { return holds(l.algorithm, l.options); });
  }
  // Switch ops (NVLS): only a network model that shares links times them.
  static bool uses_switch_ops(const CollectiveSpec& spec) {
    return any_level(spec, [](const AlgorithmEntry& e, const AlgorithmOptions&) {
      return e.switch_ops;
    });
  }
  // A stream can carry its schedule (AlgorithmEntry::streams) at the top and every level.
  static bool streams(const CollectiveSpec& spec) {
    return !any_level(spec, [](const AlgorithmEntry& e, const AlgorithmOptions& o) {
      return !e.streams(o);
    });
  }

  // NVLS, PAT and CollNet run on Simple only, as in NCCL.
  static bool simple_only(CollectiveOp op, const std::string& algorithm) {
    const NcclAlgo family = nccl_family(op, algorithm);
    return family == NcclAlgo::Nvls || family == NcclAlgo::NvlsTree || family == NcclAlgo::Pat ||
           family == NcclAlgo::CollNetDirect || family == NcclAlgo::CollNetChain;
  }

  static std::vector<std::string> protocols_to_try(const std::string& protocol, CollectiveOp op,
                                                   const std::string& algorithm) {
    if (protocol != "auto") return {protocol};
    if (simple_only(op, algorithm)) return {"Simple"};
    std::vector<std::string> all;
    for (Protocol p : kProtocols) all.emplace_back(name_of(p));
    return all;
  }

  // Whether the collective's ranks sit on more than one host, not all on one NVSwitch (where
  // NVLS joins them through the network).
  bool spans_hosts(const CollectiveSpec& spec) const {
    const Topology& t = scenario_.topology;
    const bool hosts = std::any_of(spec.ranks.begin(), spec.ranks.end(), [&](int r) {
      return t.node(t.gpu_of_rank(r)).host != t.node(t.gpu_of_rank(spec.ranks.front())).host;
    });
    if (!hosts) return false;
    std::vector<NodeId> gpus;
    for (int r : spec.ranks) gpus.push_back(t.gpu_of_rank(r));
    return !sharp_switch_of(t, gpus, SharpReach::NvLink);
  }

  // The protocol's latencies and efficiencies over the network's own cost model.
  void with_protocol(PlannedCollective& c, const std::string& protocol) const {
    if (!protocol.empty() && protocol != "Simple" && simple_only(c.spec.shape.op, c.spec.algorithm))
      throw InputError(c.spec.settings_at(".protocol"),
                       fmt::format("{} runs on the Simple protocol only", c.spec.algorithm));
    c.spec.protocol = protocol;
    c.cost = CostModel::for_algorithm(scenario_.network.cost, c.spec.algorithm);
    if (auto p = protocol_from_name(protocol)) {
      // Only NVLS's and a chain's latencies depend on it (and the check reads every link).
      const NcclAlgo family = nccl_family(c.spec.shape.op, c.spec.algorithm);
      const bool chain = family == NcclAlgo::Ring && (c.spec.shape.op == CollectiveOp::Broadcast ||
                                                      c.spec.shape.op == CollectiveOp::Reduce);
      auto m = protocol_cost(c.cost, *p, family, scenario_.topology,
                             (family == NcclAlgo::Nvls || chain) && spans_hosts(c.spec), chain);
      m->nccl_floor = nccl_floor_;
      m->stripe = p2p_stripe_;
      c.cost = std::move(m);
    }
  }

  // NCCL's pick by its own cost model, then planned as if the user had asked for it.
  PlannedCollective plan_nccl(const CollectiveSpec& spec) {
    CollectiveSpec s = spec;
    s.options = {};
    s.nccl_filter = {};
    std::string pick;
    std::vector<NcclOption> weighed;
    double run_us = 0;
    std::int64_t least_at = 0, peer_bytes = 0;
    if (!nccl_has_algorithms(spec.shape.op)) {
      // NCCL runs these as grouped point-to-point sends on the Simple protocol, straight from
      // each rank to each peer (a scatter's root to every rank at once, not down a tree), each
      // send striped over the channels its size gets: a peer's share of the buffer, but for
      // send/recv, whose peer gets all of it.
      s.algorithm = find_algorithm(spec.shape.op, "direct") ? "direct"
                                                            : algorithms_for(spec.shape.op).front();
      s.protocol = "Simple";
      p2p_stripe_ = nccl_p2p_stripe(nccl_topo(scenario_.topology, spec.ranks));
      peer_bytes = spec.shape.op == CollectiveOp::SendRecv
                       ? spec.bytes
                       : spec.bytes / std::max<std::int64_t>(1, std::ssize(spec.ranks));
      pick = fmt::format("p2p/{}/{}ch", s.protocol, p2p_stripe_.channels(peer_bytes));
    } else {
      NcclTopo topo = nccl_topo(scenario_.topology, spec.ranks);
      topo.nvls = switch_reduces(spec, topo.nodes) &&
                  nccl_nvls_supports(spec.shape.op, spec.shape.reduce_op, spec.shape.dtype);
      // CollNet: every rail under a SHARP switch (collnet_chain takes any GPUs a host;
      // NCCL's model leaves CollNetDirect out past 8).
      topo.collnet = topo.nodes > 1 && accepts(spec, "collnet_chain");
      NcclPick p;
      try {
        p = nccl_pick(topo, spec.shape.op, spec.bytes, spec.nccl_filter);
      } catch (const std::invalid_argument& e) {
        // Where a filter left nothing, the filter is what to change.
        const char* field = !spec.nccl_filter.algorithms.empty()  ? ".nccl_algo"
                            : !spec.nccl_filter.protocols.empty() ? ".nccl_proto"
                                                                  : ".algorithm";
        throw InputError(spec.settings_at(field), e.what());
      }
      s.algorithm = catalogue_name(p.chosen.algorithm);
      if (!find_algorithm(spec.shape.op, s.algorithm))
        throw InputError(spec.settings_at(".algorithm"),
                         fmt::format("NCCL's model picks {} here, which collsim does not have "
                                     "for {}; exclude it with \"nccl_algo\"",
                                     name_of(p.chosen.algorithm), name_of(spec.shape.op)));
      s.protocol = std::string(name_of(p.chosen.protocol));
      // NCCL pipelines in chunks of about 128 KiB: NVLS and NVLSTree one per channel and
      // head at a time (nvls_segments), trees and chains (broadcast, reduce) one per
      // channel; a tree on LL or LL128 in NCCL's own chunk.
      const bool nvls =
          p.chosen.algorithm == NcclAlgo::Nvls || p.chosen.algorithm == NcclAlgo::NvlsTree;
      const bool chain =
          spec.shape.op == CollectiveOp::Broadcast || spec.shape.op == CollectiveOp::Reduce;
      const bool collnet = p.chosen.algorithm == NcclAlgo::CollNetDirect ||
                           p.chosen.algorithm == NcclAlgo::CollNetChain;
      if (nvls)
        nvls_segments(s.options, spec, p, topo);
      else if (collnet)
        collnet_segments(s.options, spec, p, topo);
      else if (chain)
        chain_segments(s.options, spec, p);
      else if (p.chosen.algorithm == NcclAlgo::Tree)
        s.options.segments = chunk_segments(spec.bytes, p.channels, p.chunk_bytes);
      // LL128 forwards each 128-byte line as it arrives, far finer than its chunk (up to
      // 600 KB): a tree on it is cut into at least as many segments as it is deep, so that
      // filling the pipeline costs no more than the data (a chunk stored and forwarded per
      // hop made 256 KiB slower than 512 KiB on 4 hosts). LL's chunk (32 KiB) is small.
      if (p.chosen.algorithm == NcclAlgo::Tree && p.chosen.protocol == Protocol::LL128)
        s.options.segments = std::max(s.options.segments, tree_depth(topo));
      // One channel per rail across hosts; inside a host channels share every link. NCCL's
      // tree: a pair of trees (its channels c and n + c) per channel of the graph, heads on
      // rail c, at every size. NCCL launches fewer channels for small sizes (the label's
      // count), but its LL and LL128 forward each line as it arrives, so a channel's time
      // hardly grows with its share; nccl_tree stores and forwards whole chunks at every
      // hop, and on fewer trees a size would take longer than twice it on more.
      s.options.auto_channels = p.chosen.algorithm != NcclAlgo::Tree;
      if (p.chosen.algorithm == NcclAlgo::Tree)
        s.options.channels = std::clamp(topo.channels, 1, kMaxChannels / 2);
      pick = describe(p);
      // NCCL's estimate of its pick bounds the simulated time below (with_protocol puts
      // it in the pick's costs), until a calibration states this machine's launch or
      // latency (they describe it better than NCCL's generic table; a stated efficiency
      // is a link's rate, not what a channel of NCCL's reaches). One rank or no bytes:
      // NCCL runs no kernel its model describes.
      const bool states_latency =
          scenario_.network.cost && scenario_.network.cost->stated.any_latency();
      if (!states_latency && spec.bytes > 0 && spec.ranks.size() > 1)
        nccl_floor_ = from_seconds(p.least_us * 1e-6);
      run_us = p.run_time_us;
      least_at = p.least_at;
      weighed = std::move(p.options);
    }
    PlannedCollective out;
    try {
      out = plan(s);
    } catch (const InputError& e) {
      // The pick is what the user did not name: say it was NCCL's ("nvls is timed by..."
      // read as if the collective had asked for nvls).
      if (pick.empty()) throw;
      throw InputError(e.where(), fmt::format("NCCL's model picks {} here: {}", pick, e.message()));
    }
    out.spec.json_path = spec.json_path;
    out.nccl_pick = std::move(pick);
    out.nccl_options = std::move(weighed);
    out.nccl_run_us = run_us;
    out.nccl_least_at = least_at;
    out.nccl_peer_bytes = peer_bytes;
    return out;
  }

  // The most segments a planned pipeline is cut into.
  static constexpr std::int64_t kMostSegments = 1024;

  // NVLS and NVLSTree: a pipeline per head (a GPU of one node's switch; NVLSTree's slices
  // are cut per node, and each head's slice goes half over each of NCCL's two trees) moves
  // its channels' chunks a segment at a time, the last segment holding the rest, as NCCL
  // cuts fixed chunks: equal parts shrink as a size passes a whole segment, and the time
  // with them (16.3 MB took longer than 17.4 MB).
  // NVLS on one node: 128 KiB chunks. NCCL's finer mid-size NVLS chunks are not used: each
  // loop of its NVLS kernel synchronises the node's GPUs, which collsim does not simulate,
  // and in them the published one-node logs' mid sizes came out faster than measured
  // (docs/nccl.md §10).
  // NVLSTree: NCCL's own chunk (nvls_tree_chunk). Its tree crosses the network once per
  // level and chunk, so a deeper tree (more nodes) needs the pipelining: in 128 KiB chunks
  // 8 nodes' 16 MiB took 517 us where 378 were measured; in NCCL's 64 KiB, 393.
  static void nvls_segments(AlgorithmOptions& o, const CollectiveSpec& spec, const NcclPick& p,
                            const NcclTopo& topo) {
    const bool tree = p.chosen.algorithm == NcclAlgo::NvlsTree && topo.nodes > 1;
    const int trees = tree ? 2 : 1;
    const std::int64_t pipelines = std::int64_t{topo.per_node} * trees;
    const std::int64_t per_pipeline = (spec.bytes + pipelines - 1) / pipelines;
    const std::int64_t chunk = tree             ? nvls_tree_chunk(spec.bytes, p.channels, topo)
                               : topo.nodes > 1 ? nvls_net_chunk(p.chosen.algbw_GBps)
                                                : kNcclChunkBytes;
    fixed_segments(o, per_pipeline, chunk * p.channels / trees, element_size(spec.shape.dtype));
  }

  // CollNet: a pipeline per head (collnet_direct: a slice per GPU of a host; collnet_chain:
  // a chain per GPU of a host, its channel's) moves a chunk at a time, the last segment
  // holding the rest: NCCL's CollNetChain chunk, NCCL's usual one for CollNetDirect.
  static void collnet_segments(AlgorithmOptions& o, const CollectiveSpec& spec, const NcclPick& p,
                               const NcclTopo& topo) {
    const std::int64_t pipelines = std::max(1, topo.per_node);
    const std::int64_t chunk = p.chosen.algorithm == NcclAlgo::CollNetChain
                                   ? collnet_chain_chunk(spec.bytes, p.channels, topo)
                                   : kNcclChunkBytes;
    fixed_segments(o, (spec.bytes + pipelines - 1) / pipelines, chunk,
                   element_size(spec.shape.dtype));
  }

  // The ring's chain (broadcast, reduce): each of NCCL's channels moves a chunk down it at a
  // time, so a segment is a chunk per channel and the last holds the rest. In equal parts a
  // size just past a whole segment was cut in two and pipelined, and took less time than a
  // smaller one (8 x H100: 2.95 MB 87.9 us, 3.39 MB 68.8 us).
  // LL and LL128 forward each line as it arrives, far finer than a chunk: there the chain is
  // cut into at least as many segments as it has hops, as a tree on LL128 is into its depth,
  // so that filling the chain costs no more than the data; on a chain so long that its
  // schedule would pass kMostOpsTried (a few hundred ranks), into as many as that allows.
  static void chain_segments(AlgorithmOptions& o, const CollectiveSpec& spec, const NcclPick& p) {
    std::int64_t least = kNcclChunkBytes * std::max(1, p.channels);
    if (p.chosen.protocol != Protocol::Simple) {
      const auto ranks = static_cast<std::int64_t>(spec.ranks.size());
      const auto affordable =
          static_cast<std::int64_t>(kMostOpsTried / (4.0 * ranks * kMaxChannels));
      const std::int64_t parts =
          std::clamp<std::int64_t>(ranks - 1, 1, std::max<std::int64_t>(1, affordable));
      least = std::min(least, (spec.bytes + parts - 1) / parts);
    }
    fixed_segments(o, spec.bytes, least, element_size(spec.shape.dtype));
  }

  // `bytes` of one pipeline in segments of at least `least` bytes (whole elements, at least
  // one), more where kMostSegments would not hold them; the last segment holds the rest.
  static void fixed_segments(AlgorithmOptions& o, std::int64_t bytes, std::int64_t least,
                             std::int64_t element) {
    std::int64_t segment = std::max({least, (bytes + kMostSegments - 1) / kMostSegments, element});
    segment = (segment + element - 1) / element * element;
    o.segment_bytes = segment;
    o.segments = static_cast<int>(
        std::clamp<std::int64_t>((bytes + segment - 1) / segment, 1, kMostSegments));
  }

  // Segments for `bytes` moved as chunks (NCCL's usual chunk, kNcclChunkBytes, unless its pick
  // says), `at_once` of them in flight.
  static int chunk_segments(std::int64_t bytes, int at_once, std::int64_t chunk = 0) {
    const double step =
        static_cast<double>(chunk > 0 ? chunk : kNcclChunkBytes) * std::max(1, at_once);
    return static_cast<int>(std::clamp(std::ceil(static_cast<double>(bytes) / step), 1.0,
                                       static_cast<double>(kMostSegments)));
  }

  // The hops from a tree's deepest rank to its root: a chain through each host, a
  // binary tree across hosts.
  static int tree_depth(const NcclTopo& topo) {
    return std::min(1024, topo.per_node - 1 + static_cast<int>(std::ceil(std::log2(topo.nodes))));
  }

  static std::string catalogue_name(NcclAlgo a) {
    return a == NcclAlgo::Tree ? "nccl_tree" : std::string(name_of(a));
  }

  // NVLS applies where the topology has it: NVLS on one host's sharp switch, NVLSTree
  // with one per host. NCCL decides from the hardware alone, so this asks the generator
  // about the topology only; whether our network model can time the pick is asked when
  // the pick is planned (a model that cannot says so; it never picks something else).
  bool switch_reduces(const CollectiveSpec& spec, int hosts) const {
    CollectiveSpec hardware = spec;
    hardware.shape.op = CollectiveOp::AllReduce;
    return accepts(hardware, hosts > 1 ? "nvls_tree" : "nvls");
  }

  // Whether algorithm `name` takes this collective on this topology (its defaults and its
  // schedule made without an error).
  bool accepts(const CollectiveSpec& spec, const char* name) const {
    const AlgorithmEntry* entry = find_algorithm(spec.shape.op, name);
    if (!entry) return false;
    CollectiveSpec s = spec;
    s.algorithm = name;
    s.options = {};
    try {
      entry->fill_defaults(s.options, option_context(s));
      generate_schedule(s);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  OptionContext option_context(const CollectiveSpec& spec) const {
    return {spec.shape.op, spec.shape.ranks, spec.json_path, &scenario_.topology, spec.ranks};
  }

  void fill_defaults(const AlgorithmEntry& entry, PlannedCollective& c) const {
    entry.fill_defaults(c.spec.options, option_context(c.spec));
    at_most_one_segment_an_element(c.spec.options, c.spec.shape.count);
    if (uses_switch_ops(c.spec) && !info_of(scenario_.network.model).shares_links)
      throw InputError(c.spec.json_path,
                       fmt::format("{} is timed by how its transfers share each GPU's link, and "
                                   "the {} network model does not share links: set \"network\": "
                                   "{{\"model\": \"flow\"}} (or \"packet\")",
                                   c.spec.algorithm, name_of(scenario_.network.model)));
  }

  // Segments beyond the elements would be empty: the pipeline that runs has one segment an
  // element, and the plan's label and digest say so (17 or 100 segments of 16 elements
  // were labelled as asked, and 100 made steps of nothing).
  static void at_most_one_segment_an_element(AlgorithmOptions& o, std::int64_t elements) {
    o.segments =
        static_cast<int>(std::min<std::int64_t>(o.segments, std::max<std::int64_t>(1, elements)));
    for (LevelSpec& l : o.levels) at_most_one_segment_an_element(l.options, elements);
  }

  // Anything left for the tuner: "segments": "auto" at the top or in a level.
  static bool has_auto(const AlgorithmOptions& o) {
    if (o.auto_segments) return true;
    return std::any_of(o.levels.begin(), o.levels.end(),
                       [](const LevelSpec& l) { return has_auto(l.options); });
  }

  // Where "auto" segments sit: -1 for the collective itself, else a level index,
  // with the group that level's algorithm works on.
  struct AutoSlot {
    int level;
    int members;
    std::int64_t bytes;
    int stride;  // members of one group are this many ranks apart
  };

  std::vector<AlgorithmOptions> expand_auto(const AlgorithmEntry& entry,
                                            const PlannedCollective& c) const {
    const AlgorithmOptions& o = c.spec.options;
    std::vector<AutoSlot> slots;
    if (o.auto_segments && entry.takes("segments"))
      slots.push_back({-1, c.spec.shape.ranks, c.spec.bytes, 1});
    std::int64_t count = c.spec.shape.count;
    int stride = 1;
    for (std::size_t l = 0; l < o.levels.size(); ++l) {
      const LevelSpec& level = o.levels[l];
      if (level.options.auto_segments)
        slots.push_back(
            {static_cast<int>(l), level.size, count * element_size(c.spec.shape.dtype), stride});
      count = (count + level.size - 1) / level.size;  // what each member owns after this level
      stride *= level.size;
    }
    std::vector<AlgorithmOptions> out{o};
    for (const AutoSlot& slot : slots) {
      std::vector<AlgorithmOptions> next;
      for (int S : segment_candidates(c, slot)) {
        for (AlgorithmOptions x : out) {
          AlgorithmOptions& at = slot.level < 0 ? x : x.levels[slot.level].options;
          at.segments = S;
          at.auto_segments = false;
          next.push_back(std::move(x));
        }
      }
      out = std::move(next);
    }
    return out;
  }

  // Powers of two up to the element count, and the uncontended optimum
  // sqrt((K-2) N / (alpha beta)) of a pipelined chain with its neighbours.
  std::vector<int> segment_candidates(const PlannedCollective& c, const AutoSlot& slot) const {
    std::vector<int> out;
    const std::int64_t elements = slot.bytes / element_size(c.spec.shape.dtype);
    const std::int64_t most = std::min<std::int64_t>(std::max<std::int64_t>(elements, 1), 1 << 16);
    for (std::int64_t s = 1; s <= most; s *= 2) out.push_back(static_cast<int>(s));
    if (slot.members > 2 && scenario_.network.alpha > 0) {
      const double beta = router_.info(router_.route(c.gpus[0], c.gpus[slot.stride])).bottleneck;
      const double best = std::sqrt((slot.members - 2.0) * static_cast<double>(slot.bytes) /
                                    (to_seconds(scenario_.network.alpha) * beta));
      for (double f : {0.8, 1.0, 1.25}) {
        const auto s = static_cast<std::int64_t>(std::llround(best * f));
        if (s >= 1 && s <= most) out.push_back(static_cast<int>(s));
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  // Fastest first; ties go to the earlier candidate, so the choice is reproducible.
  static AutoChoice choice_among(std::vector<Candidate> tried, bool auto_algorithm) {
    std::stable_sort(tried.begin(), tried.end(),
                     [](const Candidate& a, const Candidate& b) { return a.time_s < b.time_s; });
    AutoChoice choice{tried.front(), std::nullopt, static_cast<int>(tried.size())};
    for (const auto& t : tried) {
      const bool other =
          auto_algorithm ? t.algorithm != choice.chosen.algorithm : t.label != choice.chosen.label;
      if (other) {
        choice.runner_up = t;
        break;
      }
    }
    return choice;
  }

  static PlannedCollective finish(PlannedCollective c) {
    c.digest = schedule_digest(*c.schedule);
    return c;
  }

  const Scenario& scenario_;
  Router& router_;
  const CostFunction& cost_;
  ScheduleHolding holding_;
  Time nccl_floor_ = 0;  // CostModel::nccl_floor of the collective planned, set for NCCL's pick
  ChannelStripe p2p_stripe_;  // CostModel::stripe: NCCL's point-to-point sends
};

// `same`'s plan for `spec`, which asks for the same: under spec's name, place and predecessors.
PlannedCollective planned_as(const PlannedCollective& same, const CollectiveSpec& spec) {
  PlannedCollective out = same;
  out.spec.name = spec.name;
  out.spec.json_path = spec.json_path;
  out.spec.settings_path = spec.settings_path;
  out.spec.after = spec.after;
  return out;
}

}  // namespace

std::optional<std::size_t> PlanMemo::find(const CollectiveSpec& spec) const {
  const std::vector<int> hosts = layout(spec.ranks);
  const auto it = by_key_.find(key(spec, hosts));
  if (it == by_key_.end()) return std::nullopt;
  for (const Entry& e : it->second)
    if (e.hosts == hosts && same(*e.asked, spec)) return e.index;
  return std::nullopt;
}

void PlanMemo::add(const CollectiveSpec& asked, std::size_t index) {
  std::vector<int> hosts = layout(asked.ranks);
  by_key_[key(asked, hosts)].push_back({&asked, index, std::move(hosts)});
}

std::uint64_t PlanMemo::key(const CollectiveSpec& s, const std::vector<int>& hosts) const {
  SpecHash h(s);
  h.mix(static_cast<std::int64_t>(s.ranks.size()));
  if (ranks_ == Ranks::Same) h.mix(s.ranks.empty() ? -1 : s.ranks.front());
  for (int host : hosts) h.mix(host);
  return h.value;
}

bool PlanMemo::same(const CollectiveSpec& a, const CollectiveSpec& b) const {
  return ranks_ == Ranks::Same ? a.asks_the_same_as(b) : a.asks_the_same_elsewhere(b);
}

std::vector<int> PlanMemo::layout(const std::vector<int>& ranks) const {
  if (ranks_ == Ranks::Same) return {};  // the ranks themselves are compared
  std::unordered_map<int, int> number;   // host -> order of first appearance
  std::vector<int> out;
  out.reserve(ranks.size());
  for (int r : ranks) {
    const int host = topology_.node(topology_.gpu_of_rank(r)).host;
    out.push_back(number.try_emplace(host, static_cast<int>(number.size())).first->second);
  }
  return out;
}

std::string PlannedCollective::label() const {
  if (!nccl_pick.empty()) return "nccl: " + nccl_pick;
  std::string out = describe_algorithm(spec.algorithm, spec.options);
  if (!spec.protocol.empty()) out += " " + spec.protocol;
  return out;
}

const PlannedCollective* Plan::find(std::string_view name) const {
  for (const auto& c : collectives)
    if (c.spec.name == name) return &c;
  return nullptr;
}

Schedule run_generator(const CollectiveSpec& c) {
  const AlgorithmEntry* entry = find_algorithm(c.shape.op, c.algorithm);
  if (!entry)
    throw InputError(c.settings_at(".algorithm"), "no such algorithm for this collective");
  try {
    return entry->generate(c.shape, c.options);
  } catch (const std::invalid_argument& e) {
    throw InputError(c.json_path, e.what());
  }
}

std::optional<QuotientSchedule> run_quotient(const CollectiveSpec& c, std::string& why) {
  const AlgorithmEntry* entry = find_algorithm(c.shape.op, c.algorithm);
  if (!entry || !entry->quotient) {
    why = fmt::format("{} has no fold by its ranks' symmetry", c.algorithm);
    return std::nullopt;
  }
  std::optional<QuotientSchedule> q = entry->quotient(c.shape, c.options);
  if (!q && c.shape.matrix)  // a routed all-to-all: its sizes, not its chunks, break the turn
    why = fmt::format(
        "{}'s sizes come from its routing, and it is folded only where {}", c.algorithm,
        c.algorithm == "direct"
            ? "every pair of ranks sends the same (its blocks share the links at once)"
            : "each rank sends as much to the rank i places ahead as every other rank does (a "
              "circulant matrix)");
  else if (std::optional<StreamedQuotient> big =
               q || !entry->quotient_stream ? std::nullopt
                                            : entry->quotient_stream(c.shape, c.options, 0))
    why = fmt::format(
        "{}'s fold by a turn of {} ranks holds {} representative ops, more than the {} a fold "
        "stored may hold (a collective alone is played folded as the fold is made)",
        c.algorithm, big->period, big->size, kMostRepresentatives);
  else if (!q)
    why = fmt::format("{} is folded only {} ({} elements on {} ranks, {} channel(s){})",
                      c.algorithm, entry->fold_condition, c.shape.count, c.shape.ranks,
                      std::max(1, c.options.channels),
                      c.options.orders.empty() ? "" : " in rail orders");
  return q;
}

Schedule generate_schedule(const CollectiveSpec& c) {
  if (std::string too_big = schedule_size_problem(c); !too_big.empty())
    throw InputError(c.json_path, too_big);
  Schedule s = run_generator(c);
  // A generator bug must never be timed as if it were a result.
  if (auto problem = check_schedule(s); !problem.empty())
    throw std::logic_error(fmt::format("{} {} generated an invalid schedule: {}", c.algorithm,
                                       name_of(c.shape.op), problem));
  return s;
}

Plan make_plan(const Scenario& scenario, Router& router, const CostFunction& cost,
               ScheduleHolding holding) {
  Plan plan;
  plan.collectives.reserve(scenario.collectives.size());
  // Ops of the stored schedules so far: all are held at once, streamed or not (a streamed
  // run still stores "auto" and NVLS collectives, and plans every collective first).
  std::size_t held = 0;
  PlanMemo memo(scenario.topology, PlanMemo::Ranks::Same);
  for (const auto& spec : scenario.collectives) {
    if (const auto same = memo.find(spec)) {
      plan.collectives.push_back(planned_as(plan.collectives[*same], spec));
    } else {
      plan.collectives.push_back(Tuner(scenario, router, cost, holding).plan(spec));
      memo.add(spec, plan.collectives.size() - 1);
    }
    // A shared schedule is counted again: the simulator keeps state per op of each task.
    held += plan.collectives.back().schedule->size();
    if (static_cast<double>(held) > kMaxStoredOps)
      throw InputError(spec.json_path,
                       fmt::format("the scenario's schedules hold {} ops up to this collective, "
                                   "more than the 2^26 collsim holds in memory; split the "
                                   "scenario, or {}",
                                   held, kStreamAdvice));
  }
  return plan;
}

PlannedCollective plan_collective(const Scenario& scenario, Router& router,
                                  const CostFunction& cost, const CollectiveSpec& spec) {
  return Tuner(scenario, router, cost).plan(spec);
}

std::string digest_text(std::uint64_t digest) {
  return fmt::format("{:016x}", digest);
}

}  // namespace collsim
