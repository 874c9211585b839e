#include "traces/trace_file.h"

#include "isa/error.h"
#include "traces/json_writer.h"
#include "traces/perfetto_writer.h"

namespace tpusim::traces {
namespace {

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsGzipPath(const std::string& path) { return EndsWith(path, ".gz"); }

}  // namespace

std::optional<TraceFormat> ParseTraceFormat(const std::string& name) {
  if (name == "perfetto") return TraceFormat::kPerfetto;
  if (name == "json") return TraceFormat::kJson;
  return std::nullopt;
}

TraceFormat TraceFormatFromPath(const std::string& path) {
  const bool gzip = IsGzipPath(path);
  const std::string base = gzip ? path.substr(0, path.size() - 3) : path;
  if (EndsWith(base, ".perfetto-trace") || EndsWith(base, ".pftrace")) {
    return gzip ? TraceFormat::kPerfettoGz : TraceFormat::kPerfetto;
  }
  if (EndsWith(base, ".json")) return gzip ? TraceFormat::kJsonGz : TraceFormat::kJson;
  throw Error("trace file " + path +
              ": unknown extension (use .perfetto-trace, .pftrace or .json, each optionally "
              "followed by .gz, or give --trace-format)");
}

TraceFormat TraceFormatFor(const std::string& path, std::optional<TraceFormat> format) {
  if (!format.has_value()) return TraceFormatFromPath(path);
  const bool gzip = IsGzipPath(path);
  switch (*format) {
    case TraceFormat::kPerfetto:
    case TraceFormat::kPerfettoGz:
      return gzip || *format == TraceFormat::kPerfettoGz ? TraceFormat::kPerfettoGz
                                                         : TraceFormat::kPerfetto;
    case TraceFormat::kJson:
    case TraceFormat::kJsonGz:
      return gzip || *format == TraceFormat::kJsonGz ? TraceFormat::kJsonGz : TraceFormat::kJson;
  }
  return *format;
}

std::unique_ptr<TraceSink> OpenTraceFile(const std::string& path, TraceFormat format) {
  switch (format) {
    case TraceFormat::kPerfetto: return std::make_unique<PerfettoTraceWriter>(path, false);
    case TraceFormat::kPerfettoGz: return std::make_unique<PerfettoTraceWriter>(path, true);
    case TraceFormat::kJson: return std::make_unique<ChromeJsonTraceWriter>(path, false);
    case TraceFormat::kJsonGz: return std::make_unique<ChromeJsonTraceWriter>(path, true);
  }
  throw Error("trace file " + path + ": unknown trace format");
}

}  // namespace tpusim::traces
