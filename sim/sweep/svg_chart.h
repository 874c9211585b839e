// A small SVG chart for `tpusim sweep-plot`: points and lines of named series over linear or
// log10 axes (or categories along x), with ticks, labels, a legend and a tooltip on every point.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tpusim::sim {

struct ChartSeries {
  std::string name = {};
  std::vector<std::pair<double, double>> points = {};  // (x, y); on a log axis, values <= 0 are left out
  bool line = true;                                // joined in x order, or points only
  bool markers = true;
  std::string color = {};                          // empty: the next of the palette
};

struct Chart {
  std::string title = {};
  std::string x_label = {};
  std::string y_label = {};
  bool x_log = false;
  bool y_log = false;
  std::vector<std::string> x_categories = {};  // when given, x values are indices into it
  std::vector<ChartSeries> series = {};
};

// The chart as an <svg> element of `width` x `height` px. A chart without any point to draw says
// so in its middle.
std::string RenderChart(const Chart& chart, int width = 800, int height = 420);

}  // namespace tpusim::sim
