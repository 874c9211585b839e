// Issue 20, item 2: `tpusim sweep-plot` (sim/sweep/sweep_plot.h, svg_chart.h): the charts a
// results table gives (a line per combination of the other axes, categories for words, the Pareto
// front), and the page rendered by headless Chromium (Debian's package, which .ci/setup installs):
// no console error, and a screenshot that is not blank.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/sweep/sweep_plot.h"
#include "sim/sweep/sweep_results.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::sim::Chart;
using tpusim::sim::CsvTable;

CsvTable Results() {
  return tpusim::sim::ParseCsv(
      "id,workload,config,hbm.channel_count,mode,status,device_time_us,error\n"
      "0000-a,w,tpu_v4,16,fast,ok,10,\n"
      "0001-b,w,tpu_v4,16,slow,ok,30,\n"
      "0002-c,w,tpu_v4,32,fast,ok,8,\n"
      "0003-d,w,tpu_v4,32,slow,failed,,it broke\n",
      "results.csv");
}

// The pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium's screenshots are), as
// RGB triples; throws on anything else.
std::vector<uint8_t> DecodePng(const std::string& png, uint32_t& width, uint32_t& height) {
  auto u32 = [&](std::size_t at) {
    return (uint32_t{static_cast<uint8_t>(png[at])} << 24) | (uint32_t{static_cast<uint8_t>(png[at + 1])} << 16) |
           (uint32_t{static_cast<uint8_t>(png[at + 2])} << 8) | uint32_t{static_cast<uint8_t>(png[at + 3])};
  };
  REQUIRE(png.size() > 33);
  REQUIRE(png.compare(1, 3, "PNG") == 0);
  std::string idat;
  int channels = 0;
  for (std::size_t at = 8; at + 8 <= png.size();) {
    const uint32_t length = u32(at);
    const std::string type = png.substr(at + 4, 4);
    if (type == "IHDR") {
      width = u32(at + 8);
      height = u32(at + 12);
      REQUIRE(static_cast<uint8_t>(png[at + 16]) == 8);  // bit depth
      const int color = static_cast<uint8_t>(png[at + 17]);
      REQUIRE((color == 2 || color == 6));
      channels = color == 2 ? 3 : 4;
      REQUIRE(png[at + 20] == 0);  // not interlaced
    } else if (type == "IDAT") {
      idat += png.substr(at + 8, length);
    }
    at += 12 + length;
  }
  const std::size_t stride = width * static_cast<std::size_t>(channels);
  std::vector<uint8_t> raw(height * (stride + 1));
  uLongf size = raw.size();
  REQUIRE(uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) == Z_OK);
  std::vector<uint8_t> rows(height * stride);
  for (uint32_t y = 0; y < height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    for (std::size_t x = 0; x < stride; ++x) {
      const int a = x >= static_cast<std::size_t>(channels) ? rows[y * stride + x - channels] : 0;
      const int b = y > 0 ? rows[(y - 1) * stride + x] : 0;
      const int c = x >= static_cast<std::size_t>(channels) && y > 0 ? rows[(y - 1) * stride + x - channels] : 0;
      int predictor = 0;
      switch (filter) {
        case 1: predictor = a; break;
        case 2: predictor = b; break;
        case 3: predictor = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          predictor = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c);
          break;
        }
        default: break;
      }
      rows[y * stride + x] = static_cast<uint8_t>(raw[y * (stride + 1) + 1 + x] + predictor);
    }
  }
  std::vector<uint8_t> rgb;
  for (std::size_t i = 0; i < rows.size(); i += channels) rgb.insert(rgb.end(), {rows[i], rows[i + 1], rows[i + 2]});
  return rgb;
}

}  // namespace

TEST_CASE("sweep plot: a chart per axis, a line per combination of the others, categories for words, the Pareto front",
          "[sweep]") {
  const std::vector<Chart> charts = tpusim::sim::SweepCharts(Results(), "hbm.channel_count");
  REQUIRE(charts.size() == 3);
  // Against the channels: lines for mode=fast (16 -> 10, 32 -> 8) and mode=slow (16 -> 30; its
  // 32-channel point failed). One workload and config: the lines are named by the other axis.
  CHECK(charts[0].x_label == "hbm.channel_count");
  REQUIRE(charts[0].series.size() == 2);
  CHECK(charts[0].series[0].name == "mode=fast");
  CHECK(charts[0].series[0].points == std::vector<std::pair<double, double>>{{16, 10}, {32, 8}});
  CHECK(charts[0].series[1].points == std::vector<std::pair<double, double>>{{16, 30}});
  CHECK_FALSE(charts[0].x_log);  // 16 to 32: less than 8x
  // Words along x are categories, in the order they come.
  CHECK(charts[1].x_categories == std::vector<std::string>{"fast", "slow"});
  CHECK(charts[1].series[0].name == "channel_count=16");
  CHECK(charts[1].series[0].points == std::vector<std::pair<double, double>>{{0, 10}, {1, 30}});
  // The Pareto front of time against channels: (16, 10) and (32, 8); (16, 30) is beaten.
  CHECK(charts[2].series[1].name == "Pareto front");
  CHECK(charts[2].series[1].points == std::vector<std::pair<double, double>>{{16, 10}, {32, 8}});
  // Drawn: a circle with its tooltip per point, names escaped.
  Chart chart = charts[0];
  chart.series[0].name = "a<b & c";
  const std::string svg = tpusim::sim::RenderChart(chart);
  CHECK(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  std::size_t circles = 0;
  for (std::size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  CHECK(circles == 3);
  CHECK_THAT(svg, Catch::Contains("a&lt;b &amp; c: hbm.channel_count = 32, device time (us) = 8"));
  CHECK_THAT(RunExpectingError("sweep-plot " + TempDir("plot_missing").string()), Catch::Contains("results.csv"));
}

TEST_CASE("sweep plot: index.html renders in headless Chromium without a console error, and not blank",
          "[sweep][run]") {
  const fs::path dir = TempDir("sweep_plot");
  WriteText(dir / "add.hlo", "HloModule add\nENTRY e {\n  x = f32[256,512] parameter(0)\n  ROOT n = f32[256,512] negate(x)\n}\n");
  WriteText(dir / "s.pbtxt", "workloads { hlo: \"add.hlo\" }\naxes { path: \"hbm.channel_count\" values: [\"8\", \"16\", \"32\"] }\n"
                             "axes { path: \"tensor_core_count\" values: [\"1\", \"2\"] }\n");
  RunOk("sweep " + (dir / "s.pbtxt").string() + " -o " + (dir / "out").string() + " --quiet");
  CHECK_THAT(RunOk("sweep-plot " + (dir / "out").string() + " --cost hbm.channel_count"),
             Catch::Contains("index.html: 4 charts (plots/), 6 points"));
  const std::string html = ReadText(dir / "out" / "index.html");
  CHECK(html.starts_with("<!DOCTYPE html>"));
  CHECK_THAT(html, Catch::Contains("Device time against hbm.channel_count"));
  CHECK(fs::exists(dir / "out" / "plots" / "03_every_op_of_every_point_on_its_roofline.svg"));

  const fs::path shot = dir / "shot.png";
  const std::string command = "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,1800 "
                              "--enable-logging=stderr --v=0 --screenshot=" + shot.string() + " file://" +
                              (dir / "out" / "index.html").string() + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string log;
  char buffer[4096];
  while (std::fgets(buffer, sizeof(buffer), pipe)) log += buffer;
  const int status = pclose(pipe);
  INFO(log);
  REQUIRE(status == 0);  // not installed: 127 (.ci/setup installs Debian's chromium)
  CHECK_THAT(log, !Catch::Contains("CONSOLE"));
  uint32_t width = 0, height = 0;
  const std::vector<uint8_t> rgb = DecodePng(ReadText(shot), width, height);
  CHECK(width == 1100);
  CHECK(height == 1800);
  std::size_t inked = 0;
  for (std::size_t i = 0; i < rgb.size(); i += 3) inked += rgb[i] < 250 || rgb[i + 1] < 250 || rgb[i + 2] < 250;
  // Titles, axes, lines and points: a few percent of the page, where a blank page has none.
  CHECK(inked > rgb.size() / 3 / 100);
}
