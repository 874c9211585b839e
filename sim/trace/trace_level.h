// How much a trace records (--trace-level; docs/traces.md, "Trace levels").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tpusim::sim {

enum class TraceLevel : uint8_t {
  kOps,    // XLA Modules, XLA Ops and the counters
  kUnits,  // plus unit slices, merged per kernel where a unit's operations run back to back
  kAll,    // plus every instruction and transfer as its own slice
};

std::optional<TraceLevel> ParseTraceLevel(const std::string& name);  // "ops" | "units" | "all"

}  // namespace tpusim::sim
