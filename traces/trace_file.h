// Opening a trace file for writing, in the format its name or the caller asks for.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "traces/trace_sink.h"

namespace tpusim::traces {

enum class TraceFormat : uint8_t {
  kPerfetto,    // native protobuf (.perfetto-trace, .pftrace)
  kPerfettoGz,  // the same, gzip-compressed (.perfetto-trace.gz, .pftrace.gz)
  kJson,        // Chrome JSON trace event format (.json)
  kJsonGz,      // the same, gzip-compressed (.json.gz)
};

// "perfetto" | "json" (the command line's --trace-format); nullopt for anything else.
std::optional<TraceFormat> ParseTraceFormat(const std::string& name);
// From the file name's extension; a ".gz" suffix selects the compressed variant. Throws
// tpusim::Error naming the file for an extension it does not know.
TraceFormat TraceFormatFromPath(const std::string& path);
// `format` given explicitly (--trace-format) with a ".gz" path compresses too.
TraceFormat TraceFormatFor(const std::string& path, std::optional<TraceFormat> format);

// Creates (truncates) `path`; throws tpusim::Error naming the file if it cannot.
std::unique_ptr<TraceSink> OpenTraceFile(const std::string& path, TraceFormat format);

}  // namespace tpusim::traces
