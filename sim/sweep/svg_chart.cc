#include "sim/sweep/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "traces/xml_text.h"

namespace tpusim::sim {
namespace {

using traces::XmlEscape;

// Tableau's 10 colours: distinct, and readable on white.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr int kLeft = 78, kRight = 300, kTop = 34, kBottom = 52;  // margins: ticks, legend
constexpr std::size_t kLegendEntries = 14;

struct Axis {
  bool log = false;
  double lo = 0, hi = 1;  // in plotted units (log10 of the value on a log axis)

  double Of(double value) const { return log ? std::log10(value) : value; }
  bool Drawable(double value) const { return std::isfinite(value) && (!log || value > 0); }
};

// Ticks at 1, 2 or 5 x 10^k apart (linear), or at whole decades (log; with 2 and 5 between when
// there are fewer than three), in plotted units.
std::vector<double> Ticks(const Axis& axis) {
  std::vector<double> ticks;
  if (axis.log) {
    for (double d = std::ceil(axis.lo); d <= axis.hi + 1e-9; d += 1) ticks.push_back(d);
    if (ticks.size() < 3) {
      std::vector<double> dense;
      for (double d = std::floor(axis.lo); d <= axis.hi + 1e-9; d += 1) {
        for (double m : {1.0, 2.0, 5.0}) {
          const double t = d + std::log10(m);
          if (t >= axis.lo - 1e-9 && t <= axis.hi + 1e-9) dense.push_back(t);
        }
      }
      ticks = dense;
    }
    return ticks;
  }
  const double span = axis.hi - axis.lo;
  const double raw = span / 5;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  for (double t = std::ceil(axis.lo / step) * step; t <= axis.hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

std::string TickLabel(const Axis& axis, double t) {
  const double value = axis.log ? std::pow(10, t) : t;
  return fmt::format("{:.4g}", std::abs(value) < 1e-12 ? 0.0 : value);
}

Axis Fit(bool log, const std::vector<double>& values, bool categorical, std::size_t categories) {
  Axis axis{.log = log};
  if (categorical) {
    axis.lo = -0.5;
    axis.hi = static_cast<double>(std::max<std::size_t>(categories, 1)) - 0.5;
    return axis;
  }
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values) {
    if (!axis.Drawable(v)) continue;
    lo = std::min(lo, axis.Of(v));
    hi = std::max(hi, axis.Of(v));
  }
  if (!std::isfinite(lo)) return axis;
  const double pad = hi > lo ? (hi - lo) * 0.06 : (log ? 0.3 : std::max(std::abs(lo) * 0.1, 1.0));
  axis.lo = lo - pad;
  axis.hi = hi + pad;
  if (!log && lo >= 0 && axis.lo < 0) axis.lo = 0;
  return axis;
}

}  // namespace

std::string RenderChart(const Chart& chart, int width, int height) {
  const bool categorical = !chart.x_categories.empty();
  std::vector<double> xs, ys;
  for (const ChartSeries& s : chart.series) {
    for (const auto& [x, y] : s.points) {
      xs.push_back(x);
      ys.push_back(y);
    }
  }
  const Axis x_axis = Fit(chart.x_log && !categorical, xs, categorical, chart.x_categories.size());
  const Axis y_axis = Fit(chart.y_log, ys, false, 0);
  const double plot_w = width - kLeft - kRight, plot_h = height - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x_axis.Of(x) - x_axis.lo) / (x_axis.hi - x_axis.lo) * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - (y_axis.Of(y) - y_axis.lo) / (y_axis.hi - y_axis.lo) * plot_h; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
      width, height);
  svg += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n", kLeft,
                     XmlEscape(chart.title));
  // Grid, ticks and their labels.
  if (categorical) {
    for (std::size_t i = 0; i < chart.x_categories.size(); ++i) {
      const double x = px(static_cast<double>(i));
      svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#eee\"/>\n", x, kTop,
                         kTop + plot_h);
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x, kTop + plot_h + 16,
                         XmlEscape(chart.x_categories[i]));
    }
  } else {
    for (double t : Ticks(x_axis)) {
      const double x = kLeft + (t - x_axis.lo) / (x_axis.hi - x_axis.lo) * plot_w;
      svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#eee\"/>\n", x, kTop,
                         kTop + plot_h);
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x, kTop + plot_h + 16,
                         TickLabel(x_axis, t));
    }
  }
  for (double t : Ticks(y_axis)) {
    const double y = kTop + plot_h - (t - y_axis.lo) / (y_axis.hi - y_axis.lo) * plot_h;
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>\n", kLeft, y,
                       kLeft + plot_w);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, y + 4,
                       TickLabel(y_axis, t));
  }
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#444\"/>\n", kLeft,
                     kTop, plot_w, plot_h);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>\n", kLeft + plot_w / 2, height - 12,
                     XmlEscape(chart.x_label), x_axis.log ? " (log)" : "");
  svg += fmt::format("<text transform=\"translate(16,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}{}</text>\n",
                     kTop + plot_h / 2, XmlEscape(chart.y_label), y_axis.log ? " (log)" : "");
  if (xs.empty()) {
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#888\">no points</text>\n",
                       kLeft + plot_w / 2, kTop + plot_h / 2);
  }

  // The series, and the legend beside the plot.
  std::size_t palette = 0;
  for (std::size_t s = 0; s < chart.series.size(); ++s) {
    const ChartSeries& series = chart.series[s];
    const std::string color = series.color.empty() ? kPalette[palette++ % std::size(kPalette)] : series.color;
    std::vector<std::pair<double, double>> points;
    for (const auto& p : series.points) {
      if (x_axis.Drawable(p.first) && y_axis.Drawable(p.second)) points.push_back(p);
    }
    if (series.line) {
      std::sort(points.begin(), points.end());
      std::string path;
      for (const auto& [x, y] : points) path += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>\n", path, color);
    }
    if (series.markers) {
      for (const auto& [x, y] : points) {
        const std::string x_text = categorical && x >= 0 && x < static_cast<double>(chart.x_categories.size())
                                       ? chart.x_categories[static_cast<std::size_t>(x)]
                                       : fmt::format("{:.6g}", x);
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {} = {}, {} = {:.6g}</title>"
                           "</circle>\n",
                           px(x), py(y), color, XmlEscape(series.name), XmlEscape(chart.x_label), XmlEscape(x_text),
                           XmlEscape(chart.y_label), y);
      }
    }
    if (s < kLegendEntries) {
      const double ly = kTop + 8 + static_cast<double>(s) * 16;
      svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>\n", kLeft + plot_w + 12,
                         ly - 8, color);
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", kLeft + plot_w + 26, ly + 1,
                         XmlEscape(series.name.size() > 46 ? series.name.substr(0, 45) + "…" : series.name));
    } else if (s == kLegendEntries) {
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#888\">and {} more</text>\n", kLeft + plot_w + 12,
                         kTop + 9 + static_cast<double>(s) * 16, chart.series.size() - kLegendEntries);
    }
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tpusim::sim
