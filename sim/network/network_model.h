#pragma once
// How long transfers take on the network. A model sees transfers (bytes over a
// path of links) and never the collective or schedule they belong to.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"
#include "engine/engine.h"
#include "network/cost_model.h"
#include "network/link_counters.h"
#include "topology/routing.h"

namespace collsim {

using TransferId = std::uint64_t;

// What a model may ask of whoever drives it (the simulator). The clock, the wake-ups and
// the counters are the host's engine and counters, reached without a virtual call: the
// packet model asks for them at every hop of every packet.
class NetworkHost {
 public:
  Time now() const { return engine_.now(); }
  // Calls the model's wakeup(cookie) at time `at`: an event of the host's engine, tagged
  // as the host said.
  // Inline: a packet model calls it on every packet-hop.
  [[gnu::always_inline]] void schedule_wakeup(Time at, std::uint64_t cookie) {
    engine_.schedule(at, wakeup_tag_, cookie);
  }
  // The model is done with the transfer, now: its last byte has arrived, or, for a model
  // with a delivery_delay, has left the sender (the host then adds the delay).
  virtual void transfer_finished(TransferId id) = 0;
  LinkCounters& link_counters() { return links_; }

 protected:
  // The engine and counters must outlive the host; they may be constructed after it.
  NetworkHost(Engine& engine, EventTag wakeup_tag, LinkCounters& links)
      : engine_(engine), links_(links), wakeup_tag_(wakeup_tag) {}
  ~NetworkHost() = default;

 private:
  Engine& engine_;
  LinkCounters& links_;
  EventTag wakeup_tag_;
};

// The network models, and what each is: the loader, the planner, the reports and the
// fit ask the registry (network_models()) instead of comparing names.
enum class NetworkModelKind : std::uint8_t { Ideal, Flow, Packet };

struct NetworkModelInfo {
  NetworkModelKind kind;
  std::string_view name;  // as a scenario's "network": {"model": ...} names it
  // Whether concurrent transfers on one link share its bandwidth (flow and packet do;
  // ideal gives every transfer its links to itself). Algorithms whose time is that
  // sharing (switch ops: NVLS) are timed only by models that share.
  bool shares_links;
  // Whether it queues every packet of a transfer (the loader bounds their count).
  bool holds_packets;
  // Whether a transfer's timing depends only on the links it crosses and what else
  // crosses them (and, where shares_host_memory, its hosts' memory), so a turn of the
  // network mapping links onto alike links turns the timings with it
  // (simulate/symmetric.h; tests/test_symmetry.cpp checks each such model).
  bool times_by_links;
  // Whether transfers from and to one host's GPUs share its memory, where the cost model
  // gives it a rate (CostModel::host_memory, reduce_memory).
  bool shares_host_memory;
};

// Every model, in the order the loader lists them.
std::span<const NetworkModelInfo> network_models();
// Their names, in that order: what a scenario's (or a calibration's) "model" may say.
std::vector<std::string> network_model_names();
const NetworkModelInfo& info_of(NetworkModelKind kind);
inline std::string_view name_of(NetworkModelKind kind) { return info_of(kind).name; }
std::optional<NetworkModelKind> network_model_named(std::string_view name);

// The model a scenario gets when it names none (the loader, the JSON Schema and the
// docs/scenarios.md say the same): flow, because it is the one that times every algorithm
// (NVLS's concurrent transfers share each GPU's link only where links are shared).
inline constexpr NetworkModelKind kDefaultNetworkModel = NetworkModelKind::Flow;

struct NetworkParams {
  NetworkModelKind model = kDefaultNetworkModel;
  Time alpha = 0;  // per-message software/start-up cost, paid once per transfer
  RoutingPolicy routing = RoutingPolicy::ByFabric;
  std::int64_t packet_bytes = 64 * 1024;  // packet model
  bool cut_through = false;               // packet model: forward once the head arrives
  // Every collective's costs beyond α-β (a calibration file's; null: none).
  std::shared_ptr<const CostModel> cost;
};

// Wakeup cookies: the low two bits say what a wakeup is for, the rest which thing.
inline constexpr std::uint64_t make_cookie(std::uint64_t what, std::uint64_t index = 0) {
  return (index << 2) | what;
}
inline constexpr std::uint64_t cookie_kind(std::uint64_t cookie) {
  return cookie & 3;
}
inline constexpr std::uint64_t cookie_index(std::uint64_t cookie) {
  return cookie >> 2;
}

// A link's rate from `at` on (all its transfers together), until its next point, in
// thousandths of a byte per second: integers, so that sums of rates do not depend on the
// order they are taken in (a 10^13 B/s link is 10^16 of them).
struct RatePoint {
  Time at;
  std::int64_t milli_Bps;
};

// Where a network model hands each link's rate point by point, instead of keeping them:
// per link in time order, each point once no change at its instant can follow.
class RateListener {
 public:
  virtual void links(std::size_t count) = 0;  // first: how many links it notes
  virtual void rate(LinkId link, RatePoint point) = 0;

 protected:
  ~RateListener() = default;
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  virtual std::string_view name() const = 0;
  // `cost` says how this transfer departs from the route's nominal α-β (cost_model.h).
  virtual void start_transfer(NetworkHost& host, TransferId id, PathId path, std::int64_t bytes,
                              const TransferCost& cost) = 0;
  virtual void wakeup(NetworkHost& host, std::uint64_t cookie) = 0;
  // How long a transfer's data takes to arrive after its last byte has left: its path's
  // link latencies and its cost's latency (a protocol's per-hop latency; α, the sender's
  // start-up, is paid before the bytes: TransferCost::sender_start_up). A model that
  // times only the start-up and the bytes (ideal, flow) returns it, and the host adds it after
  // transfer_finished: the delay is propagation, not occupancy, so the sender goes on to
  // its next send on the same connection while the data is in flight. A model that times
  // the delay itself (packet: per-hop store and forward) returns nullopt.
  virtual std::optional<Time> delivery_delay(PathId, const TransferCost&) const {
    return std::nullopt;
  }
  // A model whose transfers change rate as others come and go (flow) keeps, once asked,
  // each link's rate at every change, so utilisation over time is what the links carried,
  // not each transfer's bytes spread evenly over its life; per link, in time order. Models
  // whose transfers keep one rate return none. With `to`, each point is handed to it
  // instead (network/link_rates.h), and take_link_rates hands the last and returns none.
  virtual void keep_link_rates(RateListener* to = nullptr) { (void)to; }
  virtual std::vector<std::vector<RatePoint>> take_link_rates() { return {}; }
};

std::unique_ptr<NetworkModel> make_network_model(const NetworkParams& params,
                                                 const Topology& topology, Router& router);

}  // namespace collsim
