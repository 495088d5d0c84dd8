#include "network/network_model.h"

#include <stdexcept>

#include "network/flow_model.h"
#include "network/ideal_model.h"
#include "network/packet_model.h"

namespace collsim {

std::unique_ptr<NetworkModel> make_network_model(const NetworkParams& params,
                                                 const Topology& topology, Router& router) {
  if (params.model == "ideal") return std::make_unique<IdealModel>(params, router);
  if (params.model == "flow") return std::make_unique<FlowModel>(params, topology, router);
  if (params.model == "packet") return std::make_unique<PacketModel>(params, topology, router);
  throw std::invalid_argument("unknown network model \"" + params.model + "\"");
}

bool network_model_shares_links(std::string_view model) {
  return model != "ideal";
}

}  // namespace collsim
