// Line plots as standalone SVG files (no dependencies): several series of (x, y) points, optional
// log axes, vertical markers with labels (e.g. a crossover batch). Used by `unmask bench arena`
// and `unmask plan --svg`.
#ifndef UNMASK_TOOLS_COMMON_SVG_PLOT_H_
#define UNMASK_TOOLS_COMMON_SVG_PLOT_H_

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace unmask::tools {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); non-finite or, on a log axis,
                                                  // non-positive values are skipped
  bool dashed = false;
  std::vector<std::string> point_labels;  // optional, one per point (drawn beside the marker)
};

struct PlotMarker {
  double x = 0;
  std::string label;
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  bool log_y = false;
  std::vector<PlotSeries> series;
  std::vector<PlotMarker> markers;  // vertical dashed lines
  std::vector<std::string> notes;   // lines of small text under the plot
};

// The plot as an SVG document (840 x 520 px plus notes). Series colours follow a fixed palette in
// order. A plot without any drawable point still renders its axes and says "no data".
std::string RenderSvg(const LinePlot& plot);

// Writes RenderSvg(plot) to `path`. Errors: Internal naming the path when it cannot be written.
Status WriteSvg(const LinePlot& plot, const std::string& path);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_SVG_PLOT_H_
