#include "sim/sweep/sweep_plot.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "isa/error.h"
#include "sim/config/text_proto.h"
#include "sim/module_loading.h"
#include "traces/xml_text.h"

namespace tpusim::sim {
namespace {

namespace fs = std::filesystem;

std::optional<double> Number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::size_t used = 0;
  try {
    const double value = std::stod(text, &used);
    if (used == text.size() && std::isfinite(value)) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::size_t Column(const CsvTable& table, const std::string& name) {
  const auto it = std::find(table.header.begin(), table.header.end(), name);
  if (it == table.header.end()) throw Error("results.csv has no column '" + name + "'");
  return static_cast<std::size_t>(it - table.header.begin());
}

bool SpansDecade(const std::vector<double>& values) {
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return !values.empty() && *lo > 0 && *hi / *lo >= 8;
}

// Whether the points differ in column `c`.
bool Varies(const std::vector<const std::vector<std::string>*>& rows, std::size_t c) {
  for (const auto* row : rows) {
    if ((*row)[c] != (*rows[0])[c]) return true;
  }
  return false;
}

// "tensor_core.mxu.count" -> "count": legends name an axis by its field.
std::string LastPart(const std::string& path) { return path.substr(path.rfind('.') + 1); }

// Every op of every point that ran, on the roofline of its point's chip.
Chart RooflineChart(const CsvTable& results, const fs::path& dir) {
  Chart chart{.title = "Every op of every point on its roofline", .x_label = "FLOP per byte of HBM",
              .y_label = "achieved FLOP/s", .x_log = true, .y_log = true};
  const std::size_t id = Column(results, "id"), workload = Column(results, "workload"), status = Column(results, "status");
  std::map<std::string, ChartSeries> by_workload;
  std::map<std::pair<double, double>, bool> roofs;  // (peak FLOP/s, HBM bytes/s)
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& row : results.rows) {
    if (row[status] != "ok") continue;
    const fs::path report_path = dir / "points" / (row[id] + ".json");
    if (!fs::exists(report_path)) continue;
    const nlohmann::json report = nlohmann::json::parse(ReadTextFile(report_path.string()), nullptr, false);
    if (report.is_discarded()) throw Error(report_path.string() + ": not a JSON report");
    roofs[{report.value("peak_flops_per_s", 0.0), report.value("hbm_bytes_per_s", 0.0)}] = true;
    ChartSeries& series = by_workload[row[workload]];
    series.name = row[workload] + " ops";
    series.line = false;
    for (const nlohmann::json& op : report.value("ops", nlohmann::json::array())) {
      const double flops = op.value("flops", 0.0), bytes = op.value("bytes_accessed", 0.0), us = op.value("time_us", 0.0);
      if (flops <= 0 || bytes <= 0 || us <= 0) continue;
      series.points.emplace_back(flops / bytes, flops / (us * 1e-6));
      lo = std::min(lo, flops / bytes);
      hi = std::max(hi, flops / bytes);
    }
  }
  for (auto& [name, series] : by_workload) chart.series.push_back(std::move(series));
  for (const auto& [roof, unused] : roofs) {
    const auto [peak, bandwidth] = roof;
    if (peak <= 0 || bandwidth <= 0 || !std::isfinite(lo)) continue;
    const double ridge = peak / bandwidth;
    ChartSeries line{.name = fmt::format("roofline {:.4g} TFLOP/s, {:.4g} GB/s", peak / 1e12, bandwidth / 1e9),
                     .markers = false, .color = "#999"};
    for (double x : {std::min(lo / 2, ridge), ridge, std::max(hi * 2, ridge * 2)}) {
      line.points.emplace_back(x, std::min(peak, bandwidth * x));
    }
    chart.series.push_back(std::move(line));
  }
  return chart;
}

std::string HtmlTable(const CsvTable& table) {
  std::string html = "<table>\n<tr>";
  for (const std::string& h : table.header) html += "<th>" + traces::XmlEscape(h) + "</th>";
  html += "</tr>\n";
  for (const auto& row : table.rows) {
    html += "<tr>";
    for (const std::string& field : row) html += "<td>" + traces::XmlEscape(field) + "</td>";
    html += "</tr>\n";
  }
  return html + "</table>\n";
}

std::string FileName(const std::string& title) {
  std::string name;
  for (char c : title) name += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
  return name;
}

struct PlotOptions {
  std::string dir;
  std::string cost;
};

void RunPlot(const PlotOptions& options) {
  const fs::path dir(options.dir);
  const std::string csv_path = (dir / "results.csv").string();
  const CsvTable results = ParseCsv(ReadTextFile(csv_path), csv_path);
  std::vector<Chart> charts = SweepCharts(results, options.cost);
  charts.push_back(RooflineChart(results, dir));
  fs::create_directories(dir / "plots");
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>tpusim sweep: " +
      traces::XmlEscape(dir.filename().string()) +
      "</title>\n<style>body{font-family:sans-serif;margin:24px}table{border-collapse:collapse;font-size:12px}"
      "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f4f4f4}"
      "svg{margin:8px 0;border:1px solid #ddd}</style>\n</head>\n<body>\n<h1>tpusim sweep: " +
      traces::XmlEscape(dir.filename().string()) + "</h1>\n<p>" + std::to_string(results.rows.size()) +
      " points (results.csv). Hover a point for its values.</p>\n";
  for (std::size_t i = 0; i < charts.size(); ++i) {
    const std::string svg = RenderChart(charts[i]);
    const std::string file = fmt::format("{:02}_{}.svg", i, FileName(charts[i].title));
    WriteFile((dir / "plots" / file).string(), svg);
    html += "<section>\n" + svg + "</section>\n";
  }
  html += "<h2>Results</h2>\n" + HtmlTable(results) + "</body>\n</html>\n";
  WriteFile((dir / "index.html").string(), html);
  fmt::print("{}: {} charts (plots/), {} points\n", (dir / "index.html").string(), charts.size(), results.rows.size());
}

}  // namespace

std::vector<Chart> SweepCharts(const CsvTable& results, const std::string& cost) {
  const std::size_t workload = Column(results, "workload"), config = Column(results, "config");
  const std::size_t status = Column(results, "status"), time = Column(results, "device_time_us");
  std::vector<std::size_t> axes;
  for (std::size_t c = config + 1; c < status; ++c) axes.push_back(c);
  std::vector<const std::vector<std::string>*> ok;
  for (const auto& row : results.rows) {
    if (row[status] == "ok") ok.push_back(&row);
  }
  std::vector<double> times;
  for (const auto* row : ok) times.push_back(Number((*row)[time]).value_or(0));
  const bool time_log = SpansDecade(times);

  std::vector<Chart> charts;
  for (std::size_t a : axes) {
    const std::string& path = results.header[a];
    Chart chart{.title = "Device time against " + path, .x_label = path, .y_label = "device time (us)",
                .y_log = time_log};
    bool numeric = true;
    std::vector<double> xs;
    for (const auto* row : ok) {
      const std::optional<double> x = Number((*row)[a]);
      numeric = numeric && x.has_value();
      if (x) xs.push_back(*x);
    }
    if (numeric) {
      chart.x_log = SpansDecade(xs);
    } else {
      for (const auto* row : ok) {
        if (std::find(chart.x_categories.begin(), chart.x_categories.end(), (*row)[a]) == chart.x_categories.end()) {
          chart.x_categories.push_back((*row)[a]);
        }
      }
    }
    // A line per combination of everything else the points vary in, named by what varies.
    std::map<std::string, ChartSeries> lines;
    std::vector<std::string> order;
    for (const auto* row : ok) {
      std::vector<std::string> parts;
      if (Varies(ok, workload)) parts.push_back((*row)[workload]);
      if (Varies(ok, config)) parts.push_back((*row)[config]);
      for (std::size_t other : axes) {
        if (other != a) parts.push_back(LastPart(results.header[other]) + "=" + (*row)[other]);
      }
      std::string key;
      for (const std::string& part : parts) key += (key.empty() ? "" : ", ") + part;
      if (key.empty()) key = (*row)[workload];
      if (!lines.contains(key)) order.push_back(key);
      ChartSeries& line = lines[key];
      line.name = key;
      const double x = numeric ? *Number((*row)[a])
                               : static_cast<double>(std::find(chart.x_categories.begin(), chart.x_categories.end(),
                                                               (*row)[a]) - chart.x_categories.begin());
      line.points.emplace_back(x, Number((*row)[time]).value_or(0));
    }
    for (const std::string& key : order) chart.series.push_back(std::move(lines[key]));
    charts.push_back(std::move(chart));
  }

  if (!cost.empty()) {
    const std::size_t c = Column(results, cost);
    Chart chart{.title = "Device time against " + cost + ", and the Pareto front", .x_label = cost,
                .y_label = "device time (us)", .y_log = time_log};
    std::vector<std::pair<double, double>> all;
    for (const auto* row : ok) {
      const std::optional<double> x = Number((*row)[c]);
      if (!x) throw Error("--cost " + cost + ": not a number in point " + (*row)[0] + ": '" + (*row)[c] + "'");
      all.emplace_back(*x, Number((*row)[time]).value_or(0));
    }
    std::vector<double> xs;
    for (const auto& p : all) xs.push_back(p.first);
    chart.x_log = SpansDecade(xs);
    std::sort(all.begin(), all.end());
    ChartSeries front{.name = "Pareto front", .color = "#e15759"};
    double best = std::numeric_limits<double>::infinity();
    for (const auto& p : all) {
      if (p.second < best) {
        front.points.push_back(p);
        best = p.second;
      }
    }
    chart.series.push_back({.name = "points", .points = all, .line = false, .color = "#4e79a7"});
    chart.series.push_back(std::move(front));
    charts.push_back(std::move(chart));
  }
  return charts;
}

Command AddSweepPlotCommand(CLI::App& app) {
  auto options = std::make_shared<PlotOptions>();
  CLI::App* command = app.add_subcommand(
      "sweep-plot", "Draw a sweep's results (DIR/results.csv) as SVG charts in DIR/plots and DIR/index.html");
  command->add_option("DIR", options->dir, "The sweep's output directory")->required();
  command->add_option("--cost", options->cost,
                      "A numeric results column (an axis) to draw device time against, with the Pareto front");
  return {command, [options] { RunPlot(*options); }};
}

}  // namespace tpusim::sim
