// SPDX-License-Identifier: BSD-3-Clause
// A line chart drawn as SVG by Skein itself: axes, ticks, grid, labels, a legend and one marker per
// point, so that skein-bench's scaling table can be looked at without a plotting library.
#pragma once

#include <string>
#include <vector>

namespace skein_bench {

struct PlotPoint {
  double x = 0, y = 0;
  std::string label;    // written beside the marker (may be empty)
  std::string tooltip;  // the marker's <title>: what a viewer shows on hover
};

struct PlotSeries {
  std::string name;       // in the legend
  std::string css_class;  // every marker is <circle class="point CSS_CLASS">: scripts count them
  std::string colour;     // an SVG colour, e.g. "#1f77b4"
  bool dashed = false;
  bool markers = true;
  std::vector<PlotPoint> points;
};

struct LineChart {
  std::string title, subtitle, x_label, y_label;
  std::vector<double> x_ticks;  // where the x axis is labelled (empty: nice round steps)
  std::vector<PlotSeries> series;
};

// The chart as a standalone SVG document (linear axes from 0 to just past the largest value).
// Throws skein::LogicError when a point is not finite or negative, since it could not be drawn.
std::string render_svg(const LineChart& chart);

}  // namespace skein_bench
