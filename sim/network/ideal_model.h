#pragma once
// The textbook α-β model: a transfer of n bytes takes α + Σ link latencies +
// n / (slowest link's bandwidth), whatever else is on the network. The model times the
// start-up α and the bytes; the host adds the latencies once they have left.
#include "network/network_model.h"

namespace collsim {

class IdealModel final : public NetworkModel {
 public:
  IdealModel(const NetworkParams& params, Router& router) : alpha_(params.alpha), router_(router) {}
  std::string_view name() const override { return "ideal"; }
  void start_transfer(NetworkHost& host, TransferId id, PathId path, std::int64_t bytes,
                      const TransferCost& cost) override;
  void wakeup(NetworkHost& host, std::uint64_t cookie) override { host.transfer_finished(cookie); }
  std::optional<Time> delivery_delay(PathId path, const TransferCost& cost) const override {
    return add_time(cost.latency, router_.info(path).latency);
  }

 private:
  Time alpha_;
  Router& router_;
};

}  // namespace collsim
