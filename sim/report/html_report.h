#pragma once
// report.html: one self-contained page (inline SVG, a few lines of script, no
// network) with the summary, a per-rank timeline, a link-utilisation heatmap,
// bytes per link kind, and the topology drawn with its load.
#include <memory>
#include <ostream>

#include "report/traffic.h"
#include "simulate/op_sink.h"

namespace collsim {

// The page's timeline, gathered as a run's ops go by (simulate/op_sink.h).
class PageTimeline final : public OpSink {
 public:
  PageTimeline(const Scenario& s, const ScenarioResult& r);
  ~PageTimeline();
  void collective(std::size_t c, const Schedule* whole) override;
  void op(const RetiredOp& op) override;
  void collective_done() override;
  struct State;

 private:
  std::unique_ptr<State> state_;
  friend void write_html_report(std::ostream&, const Scenario&, const ScenarioResult&,
                                const TrafficReport&, const PageTimeline&);
};

void write_html_report(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                       const TrafficReport& traffic, const PageTimeline& timeline);
// The same with the timeline gathered from r's per-op record (record_ops).
void write_html_report(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                       const TrafficReport& traffic);

}  // namespace collsim
