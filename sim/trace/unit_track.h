// One hardware unit's slice track. Each operation occupies the unit for its busy time (what the
// run statistics charge it), beginning at its start or, if the unit is still occupied by the
// previous operation, when that ends; so operations never overlap and their busy times sum to the
// unit's busy time. Without aggregating (--trace-level all) each operation is a slice of its own,
// written at once. Aggregating (--trace-level units), operations join the open slice, which spans
// the first one's begin to the last one's end and carries their count and summed busy cycles,
// until Close() (the recorder closes at kernel boundaries and after each sem.wait: one slice per
// unit per kernel step). An operation that ends a flow which began after the open slice began
// starts a new slice (a flow may not end in a slice that begins before it starts).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "traces/trace_sink.h"

namespace tpusim::sim {

struct UnitOp {
  uint64_t begin_ps = 0;     // when it started on the unit
  uint64_t duration_ps = 0;  // its busy time
  double busy_cycles = 0;
  std::string_view name;     // mnemonic (static storage)
  uint32_t pc = 0;
  uint64_t start_cycle = 0;  // the model's own cycles, for annotations
  uint64_t end_cycle = 0;
  uint64_t flow_in = 0;           // a flow this operation ends (0: none)
  uint64_t flow_begin_ps = 0;     // where that flow's slice began
  uint64_t flow_out = 0;          // a flow this operation starts (0: none)
  // Only written at kAll (built only then, to keep aggregation cheap).
  std::vector<traces::Annotation> details;
};

class UnitTrack {
 public:
  UnitTrack(traces::TraceSink* sink, traces::TrackId track, std::string category, bool aggregate)
      : sink_(sink), track_(track), category_(std::move(category)), aggregate_(aggregate) {}

  void Add(UnitOp op);
  void Close();

 private:
  void Open(UnitOp& op, uint64_t begin);

  traces::TraceSink* sink_;
  traces::TrackId track_;
  std::string category_;
  bool aggregate_;
  uint64_t end_ps_ = 0;
  // The open slice.
  bool open_ = false;
  traces::Slice slice_;
  uint64_t count_ = 0;
  double busy_cycles_ = 0;
  uint64_t first_cycle_ = 0, last_cycle_ = 0;
  uint32_t first_pc_ = 0;
  std::array<std::string_view, 3> names_{};
  std::size_t name_count_ = 0;
  bool more_names_ = false;
};

}  // namespace tpusim::sim
