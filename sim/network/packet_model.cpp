#include "network/packet_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/slot_pool.h"

namespace collsim {
namespace {

enum : std::uint64_t { kLinkDone = 0, kLinkReady = 1, kDeliver = 2, kPace = 3 };

}  // namespace

PacketModel::PacketModel(const NetworkParams& params, const Topology& topology, Router& router)
    : alpha_(params.alpha),
      packet_bytes_(params.packet_bytes),
      cut_through_(params.cut_through),
      topology_(topology),
      router_(router),
      links_(topology.links().size()) {
  for (const Link& l : topology.links()) {
    full_packet_time_.push_back(transfer_time(packet_bytes_, l.bandwidth));
    latency_.push_back(l.latency);
  }
}

// Starts the head packet if the link is free and the packet has arrived. Inline, as
// finish_packet: twice each packet-hop, and a call's saving and restoring of registers
// cost as much as the work.
[[gnu::always_inline]] inline void PacketModel::serve(NetworkHost& host, LinkId link, Time now) {
  LinkState& ls = links_[link];
  if (ls.sending || ls.waiting || ls.queue.empty()) return;
  const Packet& head = ls.queue.front();
  if (head.ready > now) return wait_for_head(host, link);
  ls.sending = true;
  const Time end = std::max(add_time(now, serialization(head, link)), head.not_before_finish);
  host.schedule_wakeup(end, make_cookie(kLinkDone, link));
  if (keep_rates_ && end > now)  // bytes over picoseconds, in thousandths of a B/s
    note_rate(
        link, now,
        std::llround(static_cast<double>(head.bytes) * 1e15 / static_cast<double>(end - now)));
}

void PacketModel::wait_for_head(NetworkHost& host, LinkId link) {
  links_[link].waiting = true;
  host.schedule_wakeup(links_[link].queue.front().ready, make_cookie(kLinkReady, link));
}

void PacketModel::start_transfer(NetworkHost& host, TransferId id, PathId path,
                                 std::int64_t bytes, const TransferCost& cost) {
  const Slot s = take_slot(transfers_, free_);
  // A message without data (a barrier's) still travels as one empty packet.
  const std::int64_t packets =
      std::max<std::int64_t>(1, (bytes + packet_bytes_ - 1) / packet_bytes_);
  const auto path_links = router_.links(path);
  transfers_[s] = {id,
                   path,
                   static_cast<std::uint32_t>(path_links.size()),
                   router_.info(path).first,
                   packets,
                   packets,
                   bytes,
                   cost.stretch,
                   cost.ceiling_Bps};
  if (path_links.size() > std::numeric_limits<decltype(Packet::hop)>::max())
    throw std::invalid_argument("the packet model follows paths of at most 65,535 links");
  for (LinkId l : path_links) host.link_counters().enter(l, bytes, host.now());
  const LinkId first = path_links.front();
  const Time ready = add_time(host.now(), cost.start_up(alpha_));  // start-up before the first byte
  const std::int64_t first_bytes = std::min(packet_bytes_, bytes);
  if (cost.ceiling_Bps > 0) {  // paced: a packet joins the queue once the sender has made it
    transfers_[s].made = add_time(ready, transfer_time(first_bytes, cost.ceiling_Bps));
    return pace_at(host, s);
  }
  links_[first].queue.push_back(packet(s, first_bytes, ready));
  serve(host, first, host.now());
}

// Paced transfer `s`'s next packet joins its first link's queue when made (Transfer::made).
void PacketModel::pace_at(NetworkHost& host, Slot s) {
  const Time made = transfers_[s].made;
  if (made <= host.now()) return pace(host, s);
  host.schedule_wakeup(made, make_cookie(kPace, static_cast<std::uint64_t>(s)));
}

// A packet's end is nearly every wakeup: it goes straight on, and the rare kinds are handled
// apart, so that the registers they need are not saved and restored on every packet-hop.
void PacketModel::wakeup(NetworkHost& host, std::uint64_t c) {
  if (cookie_kind(c) == kLinkDone) return finish_packet(host, static_cast<LinkId>(cookie_index(c)));
  rare_wakeup(host, c);
}

void PacketModel::rare_wakeup(NetworkHost& host, std::uint64_t c) {
  const std::uint64_t index = cookie_index(c);
  switch (cookie_kind(c)) {
    case kLinkReady:
      links_[index].waiting = false;
      serve(host, static_cast<LinkId>(index), host.now());
      break;
    case kPace:
      pace(host, static_cast<Slot>(index));
      break;
    case kDeliver: {
      const Transfer& t = transfers_[index];
      for (LinkId l : router_.links(t.path)) host.link_counters().leave(l, host.now());
      free_.push_back(static_cast<Slot>(index));
      host.transfer_finished(t.id);
      break;
    }
  }
}

void PacketModel::keep_link_rates(RateListener* to) {
  keep_rates_ = true;
  link_rates_.start(links_.size(), to);
}

std::vector<std::vector<RatePoint>> PacketModel::take_link_rates() {
  return link_rates_.take();
}

// The link's rate from `at` on: a packet that ends there and the next that starts at the
// same instant make one point.
void PacketModel::note_rate(LinkId link, Time at, std::int64_t milli_Bps) {
  link_rates_.note(link, at, milli_Bps, true);
}

void PacketModel::finish_packet(NetworkHost& host, LinkId link) {
  LinkState& ls = links_[link];
  Packet p = ls.queue.front();
  Transfer& t = transfers_[p.transfer];
  const Time now = host.now();
  if (p.hop == 0 && t.ceiling_Bps > 0) {  // paced: the next joins the queue once made
    leave_paced(host, link);
  } else if (p.hop == 0 && --t.unsent > 0) {
    // The train's next packet queues behind what arrived meanwhile: trains sharing a first
    // link take turns a packet each, as senders interleave, where the first listed once
    // went whole before the others (two equal broadcasts from one GPU: 1.12 and 2.17 ms by
    // their order in the file, for 2.11 each).
    t.unsent_bytes -= p.bytes;
    ls.queue.pop_front();
    ls.queue.push_back(packet(p.transfer, std::min(packet_bytes_, t.unsent_bytes), p.ready));
  } else {
    ls.queue.pop_front();
  }
  ls.sending = false;
  if (keep_rates_) note_rate(link, now, 0);
  ++packet_hops_;
  const Time latency = latency_[link];
  if (std::uint32_t{p.hop} + 1 < t.hops) {
    const LinkId next = router_.link_at(t.first, p.hop + 1u);
    // Cut-through: the head left a serialization ago and is already at the next link.
    p.ready = add_time(cut_through_ ? now - serialization(p, link) : now, latency);
    p.not_before_finish = cut_through_ ? add_time(now, latency) : 0;
    ++p.hop;
    links_[next].queue.push_back(p);
    serve(host, next, now);
  } else if (--t.packets_left == 0) {
    host.schedule_wakeup(add_time(now, latency),
                         make_cookie(kDeliver, static_cast<std::uint64_t>(p.transfer)));
  }
  serve(host, link, now);
}

// The packet of a paced transfer at the front of its first link `link` leaves it; the sender
// makes the next, if any.
void PacketModel::leave_paced(NetworkHost& host, LinkId link) {
  const Packet p = links_[link].queue.front();
  links_[link].queue.pop_front();
  Transfer& t = transfers_[p.transfer];
  if (--t.unsent == 0) return;
  t.unsent_bytes -= p.bytes;
  // The sender makes the next one after this one, and no sooner than this one left its
  // queue: held back by the link, it does not then catch up faster than its ceiling.
  const Time left_queue = host.now() - serialization(p, link);
  t.made = add_time(std::max(t.made, left_queue),
                    transfer_time(std::min(packet_bytes_, t.unsent_bytes), t.ceiling_Bps));
  pace_at(host, p.transfer);
}

void PacketModel::pace(NetworkHost& host, Slot s) {
  const Transfer& t = transfers_[s];
  const LinkId first = router_.links(t.path).front();
  links_[first].queue.push_back(packet(s, std::min(packet_bytes_, t.unsent_bytes), host.now()));
  serve(host, first, host.now());
}

}  // namespace collsim
