#pragma once
// The packet model: transfers are cut into packets that queue, first come first
// served, at every link of their path. A link sends one packet at a time at its
// bandwidth; the packet then crosses the link's latency to the next queue
// (store-and-forward), or may start on the next link once its head arrives
// (cut-through). Queueing delay and head-of-line blocking show up here, where the
// fluid model smooths them away. A link holds one pending event — its current
// packet's end — not one per queued packet, and a transfer's packets that have not yet
// left its first link wait there as one queue entry, not one each, which goes to the back of
// the queue as each of its packets leaves (senders on one link take turns). A transfer held below
// its links' rate (a ceiling) is paced instead: its sender makes its packets at the ceiling, each
// joins the first queue once made, and other transfers use the link in between.
#include <cstdint>
#include <vector>

#include "core/fifo.h"
#include "network/link_rates.h"
#include "network/network_model.h"

namespace collsim {

class PacketModel final : public NetworkModel {
 public:
  PacketModel(const NetworkParams& params, const Topology& topology, Router& router);
  std::string_view name() const override { return "packet"; }
  void start_transfer(NetworkHost& host, TransferId id, PathId path, std::int64_t bytes,
                      const TransferCost& cost) override;
  void wakeup(NetworkHost& host, std::uint64_t cookie) override;
  // A link sends one packet at a time: its rate is the packet's bytes over its time on the
  // wire while it sends, 0 in between.
  void keep_link_rates(RateListener* to) override;
  std::vector<std::vector<RatePoint>> take_link_rates() override;

  std::uint64_t packet_hops() const { return packet_hops_; }

 private:
  using Slot = std::int32_t;
  struct Packet {
    Slot transfer;
    std::uint16_t hop;  // index into the transfer's path; 0: its train (Transfer::unsent)
    bool plain;         // a whole packet, unstretched: its time per link is full_packet_time_
    std::int64_t bytes;
    Time ready;              // may start on this link from then on
    Time not_before_finish;  // cut-through: cannot end before it ended upstream + latency
  };
  struct LinkState {
    Fifo<Packet> queue;
    bool sending = false;  // the head is on the wire
    bool waiting = false;  // a wakeup is set for when the head becomes ready
  };
  struct Transfer {
    TransferId id = 0;
    PathId path = -1;
    std::uint32_t hops = 0;         // its path's length, and
    std::uint64_t first = 0;        // where its links start in the router's flat array: read at
                                    // every hop, without going through the path's record
    std::int64_t packets_left = 0;  // not yet delivered
    // Its packets still waiting at the first link: they wait there as one queue entry (a
    // train) that stands for the next of them, not one entry each, so the queues hold
    // only the packets on their way.
    std::int64_t unsent = 0;
    std::int64_t unsent_bytes = 0;
    double stretch = 1;  // TransferCost: each packet is serialized this much slower
    // > 0 (TransferCost::ceiling_Bps): the sender makes its packets at this rate, one after
    // another and each after the one before left its queue, and each joins the first link's
    // queue once made: paced, not a train.
    double ceiling_Bps = 0;
    Time made = 0;  // paced: when the packet that last joined the queue was made
  };

  void rare_wakeup(NetworkHost& host, std::uint64_t cookie);  // every kind but kLinkDone
  void serve(NetworkHost& host, LinkId link, Time now);
  [[gnu::noinline]] void wait_for_head(NetworkHost& host, LinkId link);  // head not yet arrived
  void finish_packet(NetworkHost& host, LinkId link);
  // A paced transfer's packet leaves its first link. The rare paths (this, wait_for_head,
  // note_rate, rare_wakeup) are kept out of line so that the packet-hop's own path saves
  // and restores few registers.
  [[gnu::noinline]] void leave_paced(NetworkHost& host, LinkId link);
  // The next packet of paced transfer `s` joins its first link's queue: now, or when made.
  void pace(NetworkHost& host, Slot s);
  void pace_at(NetworkHost& host, Slot s);
  // keep_link_rates: the link's rate from `at` on.
  [[gnu::noinline]] void note_rate(LinkId link, Time at, std::int64_t milli_Bps);
  Time serialization(const Packet& p, LinkId link) const {
    if (p.plain) return full_packet_time_[link];
    return transfer_time(p.bytes, topology_.link(link).bandwidth / transfers_[p.transfer].stretch);
  }
  Packet packet(Slot transfer, std::int64_t bytes, Time ready) const {
    return {transfer, 0,     bytes == packet_bytes_ && transfers_[transfer].stretch == 1,
            bytes,    ready, 0};
  }

  Time alpha_;
  std::int64_t packet_bytes_;
  bool cut_through_;
  const Topology& topology_;
  Router& router_;
  std::vector<LinkState> links_;
  std::vector<Time> full_packet_time_;  // per link: a whole packet at its bandwidth, unstretched
  std::vector<Time> latency_;           // per link, read at every hop
  std::vector<Transfer> transfers_;
  std::vector<Slot> free_;
  std::uint64_t packet_hops_ = 0;
  bool keep_rates_ = false;
  LinkRates link_rates_;  // per link: every change
};

}  // namespace collsim
