#include "sim/trace_svg_command.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "isa/error.h"
#include "traces/trace_check.h"
#include "traces/trace_svg.h"

namespace tpusim::sim {
namespace {

struct TraceSvgOptions {
  std::string trace_path;
  std::string output_path;
  int width_px = 1400;
  std::optional<double> from_us;
  std::optional<double> to_us;
};

std::optional<uint64_t> MicrosToNs(const std::optional<double>& us, const char* flag) {
  if (!us.has_value()) return std::nullopt;
  if (!std::isfinite(*us) || *us < 0) throw Error(fmt::format("{} {}: must be a time >= 0 in us", flag, *us));
  return static_cast<uint64_t>(std::llround(*us * 1000.0));
}

void RunTraceSvg(const TraceSvgOptions& options) {
  const traces::ParsedTrace trace = traces::ReadAndCheckPerfettoTrace(options.trace_path);
  for (const std::string& problem : trace.problems) {
    spdlog::warn("{}: {}", options.trace_path, problem);
  }
  traces::SvgOptions svg;
  svg.width_px = options.width_px;
  svg.from_ns = MicrosToNs(options.from_us, "--from-us");
  svg.to_ns = MicrosToNs(options.to_us, "--to-us");
  const std::string text = traces::RenderTraceSvg(trace, svg);
  std::ofstream out(options.output_path, std::ios::binary);
  if (!out || !(out << text) || !out.flush()) {
    throw Error("cannot write " + options.output_path);
  }
  fmt::print("{}: {} tracks, {} slices, {} counter samples, {} problems -> {}\n",
             options.trace_path, trace.tracks.size(), trace.slices.size(), trace.counters.size(),
             trace.problems.size(), options.output_path);
}

}  // namespace

Command AddTraceSvgCommand(CLI::App& app) {
  auto options = std::make_shared<TraceSvgOptions>();
  CLI::App* command = app.add_subcommand(
      "trace-svg",
      "Check a Perfetto trace (.perfetto-trace, .pftrace, optionally .gz) as `--trace` writes it "
      "and render it as an SVG timeline: one row per track, slices, counters, a time axis in us.");
  command->add_option("TRACE", options->trace_path, "The trace file")->required();
  command->add_option("-o,--output", options->output_path, "The SVG file to write")->required();
  command->add_option("--width", options->width_px, "Width of the picture in pixels")
      ->capture_default_str();
  command->add_option("--from-us", options->from_us, "Start of the time window (us)");
  command->add_option("--to-us", options->to_us, "End of the time window (us)");
  return Command{command, [options] { RunTraceSvg(*options); }};
}

}  // namespace tpusim::sim
