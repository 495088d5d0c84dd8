#include "network/network_model.h"

#include <stdexcept>

#include "network/flow_model.h"
#include "network/ideal_model.h"
#include "network/packet_model.h"

namespace collsim {

namespace {

constexpr NetworkModelInfo kModels[] = {
    {NetworkModelKind::Ideal, "ideal", false, false, true, false},
    {NetworkModelKind::Flow, "flow", true, false, true, true},
    {NetworkModelKind::Packet, "packet", true, true, true, false},
};

// info_of indexes the table by the enum's value.
static_assert(kModels[0].kind == NetworkModelKind::Ideal && kModels[1].kind == NetworkModelKind::Flow &&
              kModels[2].kind == NetworkModelKind::Packet);

}  // namespace

std::span<const NetworkModelInfo> network_models() {
  return kModels;
}

std::vector<std::string> network_model_names() {
  std::vector<std::string> out;
  for (const NetworkModelInfo& m : network_models()) out.emplace_back(m.name);
  return out;
}

const NetworkModelInfo& info_of(NetworkModelKind kind) {
  return kModels[static_cast<std::size_t>(kind)];
}

std::optional<NetworkModelKind> network_model_named(std::string_view name) {
  for (const NetworkModelInfo& m : kModels)
    if (m.name == name) return m.kind;
  return std::nullopt;
}

std::unique_ptr<NetworkModel> make_network_model(const NetworkParams& params,
                                                 const Topology& topology, Router& router) {
  switch (params.model) {
    case NetworkModelKind::Ideal: return std::make_unique<IdealModel>(params, router);
    case NetworkModelKind::Flow: return std::make_unique<FlowModel>(params, topology, router);
    case NetworkModelKind::Packet: return std::make_unique<PacketModel>(params, topology, router);
  }
  throw std::invalid_argument("unknown network model");
}

}  // namespace collsim
