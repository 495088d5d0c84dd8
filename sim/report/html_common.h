#pragma once
// What the HTML pages (report.html of a scenario's collectives or of a training step)
// share: escaping, colours, number formats, the time axis and the page's frame (style,
// hover panel), so that both pages look alike and escape alike.
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace collsim::html {

constexpr int kPlotLeft = 170;   // where time axes start (row labels to the left)
constexpr int kPlotWidth = 960;  // pixels for the whole run

// Text for HTML and SVG, text and attributes alike: & < > " escaped.
std::string escape(std::string_view text);

// Well-separated hues per index (golden angle); utilisation from pale to dark red.
std::string collective_colour(std::size_t c, int lightness = 50);
std::string load_colour(double u);
std::string percent(double u);         // "12.5%"
std::string gbps(double bytes_per_s);  // "12.5 GB/s"

// A time axis under a plot that spans [0, span] seconds over kPlotWidth pixels at `y`,
// its grid lines up to `grid_top`.
void time_axis(std::ostream& out, double span, int y, int grid_top);

// A row of `bins` time columns over kPlotWidth at [y, y + h): level(k) gives column k's
// colour and shade in quarters (0: empty); runs of equal columns are one rect, so that
// a busy row of a long step stays a handful of rects.
struct Shade {
  std::string colour;
  int quarters = 0;  // 0 to 4: fill-opacity quarters / 4
  bool operator==(const Shade&) const = default;
};
void shaded_row(std::ostream& out, int bins, int y, int h, const std::function<Shade(int)>& level);

// The utilisation colour scale (pale to dark red, 0-100%) as a 200 px bar at (x + 70, y),
// with the gradient's <defs> (id "load"): once per SVG.
void load_scale(std::ostream& out, int x, int y);

// The pages' CSS (also inside a standalone SVG, for its text classes).
std::string_view style_rules();
// <!DOCTYPE html> to <body>, with the shared style; `title` is escaped here.
void page_start(std::ostream& out, std::string_view title);
// The panel that shows the <title> of what the pointer is over (page_end's script fills it).
void hover_panel(std::ostream& out, std::string_view prompt);
// The hover script, </body></html>.
void page_end(std::ostream& out);

}  // namespace collsim::html
