#pragma once
// Where the bytes went: per link, per rank, and which link held each step back.
#include <cstdint>
#include <memory>
#include <vector>

#include "scenario/scenario.h"
#include "simulate/op_sink.h"
#include "simulate/run_scenario.h"

namespace collsim {

struct LinkTraffic {
  std::int64_t bytes = 0;
  double busy_s = 0;        // at least one transfer in flight on it
  double utilisation = 0;   // bytes / (capacity x makespan)
  int peak_transfers = 0;   // most transfers in flight on it at once (the model's count)
  std::vector<float> bins;  // utilisation per time bin (needs per-op timing)
};

struct RankTraffic {
  std::int64_t sent = 0;
  std::int64_t received = 0;
  double busy_s = 0;  // some transfer of it (either end) in flight
  double idle_s = 0;  // the rest of the makespan
};

// The link that needed the longest to carry its bytes: bytes / capacity, where the legs
// of a switch that reduces count at its sharp_efficiency of the capacity (the simulator
// stretches them so).
struct Bottleneck {
  std::size_t collective = 0;
  int step = -1;  // -1: the whole collective
  LinkId link = -1;
  double seconds = 0;  // bytes on it / the rate it carries them at
  std::int64_t bytes = 0;
  // bytes / (capacity x seconds): below 1 where a reducing switch's legs slowed it.
  double share_of_rate = 1;
};

// A bottleneck's bytes at its link's full rate: its seconds, unless a switch slowed them.
double full_rate_seconds(const Topology& t, const Bottleneck& b);

// One collective's own share: what it moved, judged over its own window
// [start_s, end_s], so collectives that ran one after another can be compared.
struct CollectiveTraffic {
  double start_s = 0;
  double end_s = 0;
  struct LinkBytes {
    LinkId link;
    std::int64_t bytes;
    double utilisation;  // bytes / (capacity x (end_s - start_s))
  };
  std::vector<LinkBytes> links;    // the links it used, by link id
  std::vector<RankTraffic> ranks;  // by its own rank index (CollectiveSpec::ranks[i])
  double duration_s() const { return end_s - start_s; }
  // Its links, busiest first (ties: lower link id), at most n of them.
  std::vector<LinkBytes> hottest(std::size_t n) const;
};

struct TrafficReport {
  double makespan_s = 0;
  int bins = 0;
  double bin_s = 0;
  std::vector<LinkTraffic> links;
  std::vector<RankTraffic> ranks;              // by topology rank
  std::vector<Bottleneck> per_collective;      // one per collective
  std::vector<Bottleneck> per_step;            // every step of every collective that carries bytes
  std::vector<CollectiveTraffic> collectives;  // one per collective, in scenario order
  bool timed = false;                          // whether per-op timing was there (bins, rank busy)
};

// Reads the run's record: each op's recorded route (nothing is routed again) and the
// network model's link counters (bytes, busy time, peak concurrency). `bins` time bins
// over the makespan; per-op timing (SimulationOptions::record_ops) gives bins and rank
// busy time, without it those are left out.
// A transfer's bytes are spread evenly over its lifetime when binned.
TrafficReport analyse_traffic(const Scenario& s, const ScenarioResult& r, int bins = 100);

// The same in parts, for a walk of the ops fed from elsewhere (report/op_reports.h):
// the run-wide counters first (with `timed`, `bins` empty utilisation bins over the
// makespan), then the walk fills per collective its links and ranks, each step's
// bottleneck, and with per-op times the bins and the ranks' busy time.
TrafficReport traffic_totals(const Scenario& s, const ScenarioResult& r, bool timed,
                             int bins = 100);
class TrafficWalk final : public OpSink {
 public:
  // `r`: the run's figures (collectives, outcomes); `rep`: from traffic_totals.
  TrafficWalk(const Scenario& s, const ScenarioResult& r, TrafficReport& rep);
  ~TrafficWalk();
  void collective(std::size_t c, const Schedule* whole) override;
  void op(const RetiredOp& op) override;
  void collective_done() override;
  void finish();  // after the last collective: each rank's busy time over the run
  // Where the links' rates may be handed over as the run goes (a timed report: its bins
  // from them, as from a stored run's points); null otherwise.
  RateListener* rates() override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace collsim
