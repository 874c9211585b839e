#include "sim/trace/trace_level.h"

namespace tpusim::sim {

std::optional<TraceLevel> ParseTraceLevel(const std::string& name) {
  if (name == "ops") return TraceLevel::kOps;
  if (name == "units") return TraceLevel::kUnits;
  if (name == "all") return TraceLevel::kAll;
  return std::nullopt;
}

}  // namespace tpusim::sim
