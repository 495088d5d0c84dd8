#pragma once
// report.html: one self-contained page (inline SVG, a few lines of script, no
// network) with the summary, a per-rank timeline, a link-utilisation heatmap,
// bytes per link kind, and the topology drawn with its load.
#include <ostream>

#include "report/traffic.h"

namespace collsim {

void write_html_report(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                       const TrafficReport& traffic);

}  // namespace collsim
