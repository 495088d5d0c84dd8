#pragma once
// What a collective costs beyond the links' nominal α + n/β: the terms real runs
// show (launch, a per-op overhead on the rank that completes each op, bandwidth that
// depends on message size, framing efficiency, per-kind latency, reduction cost).
// A calibration file fills it in (`collsim calibrate`), a protocol adjusts it
// (plan/protocol.h), and every network model honours it through TransferCost.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/time.h"
#include "topology/topology.h"

namespace collsim {

inline constexpr std::size_t kLinkKindCount = 6;  // LinkKind's members

// A quantity that varies with size: points (bytes, value), bytes increasing,
// interpolated linearly in log(bytes) and held flat beyond either end.
class SizeCurve {
 public:
  SizeCurve() = default;
  // Throws std::invalid_argument unless bytes increase strictly and values are > 0.
  explicit SizeCurve(std::vector<std::pair<std::int64_t, double>> points);

  bool empty() const { return bytes_.empty(); }
  std::size_t size() const { return bytes_.size(); }
  double at(std::int64_t bytes) const;
  std::span<const std::int64_t> sizes() const { return bytes_; }
  std::span<const double> values() const { return values_; }

 private:
  std::vector<std::int64_t> bytes_;
  std::vector<double> log_bytes_;
  std::vector<double> values_;
};

struct LinkKindCost {
  // The share of the bandwidth that carries data (protocol framing, NVLink packet
  // headers): a transfer moves at efficiency x the link's rate.
  double efficiency = 1.0;
  // B/s by transfer size; when set it replaces the nominal bandwidth of links of this
  // kind (small messages do not reach a link's peak; caches make some faster).
  SizeCurve bandwidth;
  // The algorithms (schedule generators: "ring", "nvls") whose transfers `bandwidth` was
  // measured on; empty: every one. A transfer's size means another thing to another
  // algorithm (a ring's 4 MiB step against NVLS's 128 KiB segments of the same collective),
  // so the others' transfers take the curve's last rate, the link's sustained one, at every
  // size (CostModel::for_algorithm).
  std::vector<std::string> curve_algorithms;
  // Added once to a transfer whose route crosses a link of this kind (the largest of
  // the kinds on the route): per-hop software latency such as NCCL's hwLat.
  Time latency = 0;

  bool trivial() const { return efficiency == 1.0 && bandwidth.empty() && latency == 0; }
};

// A reduction rate per element type and operation ("float32.sum"); "any" matches the rest.
struct ReduceRate {
  std::string key;
  SizeCurve rate;  // B/s of the fused read-reduce-write loop by size
};

// Which of a cost model's machine terms someone stated (a calibration file, a scenario's
// "cost"), as opposed to left at their defaults. NCCL's protocol model (nccl/protocol.h)
// uses a stated term in place of its own default for the same quantity, never on top.
struct StatedTerms {
  bool launch = false;
  std::array<bool, kLinkKindCount> latency{}, efficiency{};

  bool any() const;
  // Launch or a latency: they describe this machine's latencies, which NCCL's estimate of
  // its pick (CostModel::nccl_floor) takes from a generic table; an efficiency or rate
  // describes a link, not the per-channel ceilings of NCCL's protocols in that estimate.
  bool any_latency() const;
};

// Transfers striped over channels, one GPU thread block each (NCCL's point-to-point sends:
// nccl/nccl_model.h, nccl_p2p_stripe). A transfer of n bytes takes channels(n) of them: parts
// of at least min_part bytes on up to min_channels channels, then twice the channels while a
// part is over max_part, up to max_channels. A channel moves at most channel_Bps[kind] over a
// link of each kind, the least of them on its route, so the transfer moves at most
// channels(n) times that. Unset (every rate 0): no ceiling.
//
// A channel moves its part in chunks through a buffer at the receiver, which the
// receiver's thread block copies out (NCCL's point-to-point FIFO): the last chunk is copied
// out after it lands, one chunk (or the whole part, if smaller) at the channel's rate more
// than the bytes take on the wire (fill). chunk_bytes 0: no such stage. Over a kind with
// smaller_chunks set (the network), a part under one chunk goes in quarter chunks, under
// eight in half chunks (NCCL's addP2pToPlan).
struct ChannelStripe {
  std::array<double, kLinkKindCount> channel_Bps{};
  std::array<bool, kLinkKindCount> smaller_chunks{};
  std::int64_t chunk_bytes = 0;
  int min_channels = 1, max_channels = 1;
  std::int64_t min_part = 1, max_part = 1;

  bool empty() const;
  int channels(std::int64_t bytes) const;
  double channel_rate(LinkKind k) const { return channel_Bps[static_cast<std::size_t>(k)]; }
  // The copy-out of a send's last chunk, where `slowest` is the kind that sets its rate.
  Time fill(std::int64_t bytes, LinkKind slowest) const;
};

struct CostModel {
  Time launch = 0;  // once per collective, before its first op (kernel launch, base latency)
  // The host's time to issue one collective (LaunchMode::issue_time): a collective lasts
  // at least this long, as back-to-back launches measure it (nccl-tests' iterations):
  // the GPUs run no faster than one host thread hands them work.
  Time host_issue = 0;
  // NCCL's own estimate for the algorithm and protocol it picked, at this size (its tuning
  // model's latency + bytes / algbw): a collective run as NCCL picks it lasts at least
  // this long. Its table holds what kernels reach on the GPUs (per-channel protocol
  // ceilings, the tree's correction by size, the NIC speed its search counts), which the
  // links alone do not; the links hold contention and topology, which its table does not.
  // Set by the planner for NCCL's picks unless a calibration states the machine's launch
  // or latency (StatedTerms::any_latency).
  Time nccl_floor = 0;
  // Per op that waits on another (the wake-up), on the rank that completes it, one op
  // at a time per rank; ops with no dependency start with the collective.
  Time op_overhead = 0;
  std::array<LinkKindCost, kLinkKindCount> links;
  std::vector<ReduceRate> reduce;  // pace of a Reduce: the slower of the link and this
  SizeCurve local_copy;            // B/s of a copy inside one rank; free when empty
  // A host's memory as a capacity its transfers share (flow model only): B/s of all the
  // transfers in flight at once, by transfer size. Memory bandwidth is shared once the
  // working set leaves the caches, so concurrent copies slow each other there; inside the
  // caches the curve lies above the sum of their rates and costs nothing.
  SizeCurve host_memory;
  // The same capacity as reductions see it, per "dtype.op" or "any": concurrent reduce
  // loops read twice what a copy reads, so they share the memory more slowly.
  std::vector<ReduceRate> reduce_memory;
  ChannelStripe stripe;  // a ceiling on each transfer's rate (unset: none)
  // The per-kind latencies stand in for the network's alpha instead of adding to it
  // (a protocol's per-hop latency is NCCL's measure of the same start-up cost).
  bool latency_replaces_alpha = false;
  StatedTerms stated;

  LinkKindCost& link(LinkKind k) { return links[static_cast<std::size_t>(k)]; }
  const LinkKindCost& link(LinkKind k) const { return links[static_cast<std::size_t>(k)]; }
  // The rate for "dtype.op", else "any", else nullptr (reductions cost nothing extra).
  const SizeCurve* reduce_rate(std::string_view dtype, std::string_view op) const;
  // The host memory for those reductions: reduce_memory's entry, else host_memory.
  const SizeCurve* memory_for_reduce(std::string_view dtype, std::string_view op) const;
  bool trivial() const;  // nothing beyond α-β: the simulator's fast path
  // `model` as a collective run by `algorithm` sees it: a kind's bandwidth curve measured on
  // other algorithms' transfers (LinkKindCost::curve_algorithms) flat at its last rate;
  // `model` itself where nothing changes.
  static std::shared_ptr<const CostModel> for_algorithm(
      const std::shared_ptr<const CostModel>& model, std::string_view algorithm);
};

// How one transfer departs from its route's nominal bottleneck: the model times
// bytes x stretch (counters still count bytes) and pays start_up(α) before its first byte.
// How the host issues collectives. One process per GPU (the default) issues its own
// GPU's kernel, in parallel with the others, and NCCL's latencies already hold that
// cost. One process driving several GPUs (nccl-tests -g N, one thread per process)
// issues their kernels one after another: back-to-back collectives then take at least
// gpus_per_process x issue_per_gpu (docs/nccl.md, "Launch mode").
struct LaunchMode {
  // 4.4 us: the published single-node H100 logs (data/README.md) show a ~35 us floor
  // for -g 8 against ~13 us with one process per GPU; 35 us / 8 GPUs.
  static constexpr double kIssuePerGpuS = 4.4e-6;
  int gpus_per_process = 1;
  Time issue_per_gpu = from_seconds(kIssuePerGpuS);
  std::string source = "default";  // where it came from, for reports

  Time issue_time() const {
    return gpus_per_process > 1 ? issue_per_gpu * gpus_per_process : Time{0};
  }
  // "one process per GPU", "one process drives 8 GPUs (35.2 us to issue a collective)"
  std::string describe() const;
};

struct TransferCost {
  double stretch = 1.0;
  Time latency = 0;
  // > 0: the transfer also draws on its hosts' memory, a capacity of this many B/s
  // (host_memory at its size) shared with the other transfers there (flow model).
  double memory_Bps = 0;
  bool replaces_alpha = false;  // `latency` instead of the model's alpha, not on top of it
  // > 0: the most B/s the transfer moves, whatever its links could give it (its channels'
  // rate, ChannelStripe); every network model holds it to this.
  double ceiling_Bps = 0;

  Time start_up(Time alpha) const { return replaces_alpha ? latency : add_time(alpha, latency); }
  // The two halves of start_up. α is the sender's start-up (the textbook per-message
  // cost: the sender is busy with it, before the first byte); `latency` (a protocol's
  // per-hop latency, a calibrated per-kind latency) is propagation, paid by the data on
  // its way while the sender goes on (NetworkModel::delivery_delay).
  Time sender_start_up(Time alpha) const { return replaces_alpha ? 0 : alpha; }
};

// The cost of `bytes` over `route` (links of `topology`); `reduce` is the rate of the
// receiver's reduction when the op reduces, else nullptr; `memory` the host memory the
// op draws on (host_memory when null).
TransferCost transfer_cost(const CostModel& model, const Topology& topology,
                           std::span<const LinkId> route, std::int64_t bytes,
                           const SizeCurve* reduce, const SizeCurve* memory = nullptr);

// Time a rank spends on an op that never leaves it (a copy or reduce in place).
Time local_op_time(const CostModel& model, std::int64_t bytes, const SizeCurve* reduce);

}  // namespace collsim
