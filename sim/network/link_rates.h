#pragma once
// Each link's rate at every change, as a network model notes them (keep_link_rates): kept,
// or handed point by point to a RateListener as each becomes final, so that a run at scale
// holds a point per link instead of one per change (a 4,096-GPU ring under flow makes
// hundreds of millions). A change at the instant of the link's latest point replaces it, so
// a point is final once a change at a later instant comes, or the run ends.
#include <cstddef>
#include <vector>

#include "network/network_model.h"

namespace collsim {

class LinkRates {
 public:
  // Starts noting `links` links' rates: kept, or handed to `to` (may be null: kept).
  void start(std::size_t links, RateListener* to) {
    to_ = to;
    if (to_) {
      to_->links(links);
      latest_.assign(links, {});
      noted_.assign(links, false);
    } else {
      kept_.assign(links, {});
    }
  }

  // Link l's rate from `at` on. `skip_unchanged`: a point that changes nothing is not noted
  // (a link that starts at 0, or a rate set to what it was).
  void note(LinkId l, Time at, std::int64_t milli_Bps, bool skip_unchanged) {
    RatePoint* last = latest(l);
    if (last && last->at == at) {
      last->milli_Bps = milli_Bps;
      return;
    }
    if (skip_unchanged && (last ? last->milli_Bps == milli_Bps : milli_Bps == 0)) return;
    if (!to_) return kept_[l].push_back({at, milli_Bps});
    if (last) to_->rate(l, *last);
    latest_[l] = {at, milli_Bps};
    noted_[l] = true;
  }

  // The points kept, per link in time order; handed over, the last of each link is handed
  // too and none are returned.
  std::vector<std::vector<RatePoint>> take() {
    if (!to_) return std::move(kept_);
    for (std::size_t l = 0; l < latest_.size(); ++l)
      if (noted_[l]) to_->rate(static_cast<LinkId>(l), latest_[l]);
    latest_.clear();
    noted_.clear();
    return {};
  }

 private:
  RatePoint* latest(LinkId l) {
    if (to_) return noted_[l] ? &latest_[l] : nullptr;
    return kept_[l].empty() ? nullptr : &kept_[l].back();
  }

  RateListener* to_ = nullptr;
  std::vector<std::vector<RatePoint>> kept_;  // kept: per link, every point
  std::vector<RatePoint> latest_;             // handed over: per link, its latest point
  std::vector<bool> noted_;                   // handed over: whether the link has one
};

}  // namespace collsim
