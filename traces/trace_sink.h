// The trace the simulator writes, as a stream of declarations and events, independent of the file
// format. Producers (sim/'s trace recorder) declare tracks and then write slices, counter samples
// and flows; a TraceSink turns them into a file as they come (PerfettoTraceWriter: Perfetto's
// native protobuf, optionally gzip-compressed; ChromeJsonTraceWriter: Chrome's JSON trace event
// format). Nothing is held back beyond a writer's output buffer, so memory does not grow with
// the length of the trace.
//
// Time is in picoseconds from the start of the trace (SystemC's resolution); writers convert to
// their format's unit (Perfetto: ns, rounded to nearest; JSON: us with exactly three decimals).
// Exact cycle counts belong in annotations (the producer adds them).
//
// Ordering contract (what Perfetto's importer needs; docs/traces.md):
//  - every track is declared (AddProcess/AddSliceTrack/AddCounterTrack) before its first event;
//  - on one slice track, slices are written in order of their begin time, and a slice that lies
//    inside another one on the same track is written after it (parents before children); a
//    writer emits BEGIN at `begin_ps` and END at `end_ps` and keeps those pairs balanced;
//  - counter samples on one counter track are written in non-decreasing time order;
//  - a flow id is started (Slice::flow_out) by exactly one slice and ended (Slice::flow_in) by at
//    most one slice, which begins no earlier than the starting slice.
// Writers check the contract and throw tpusim::Error on a violation (a bug in the producer).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tpusim::traces {

using TrackId = uint64_t;  // unique per trace; 0 means "none"

// A named value shown with a slice (Perfetto debug annotation; JSON "args").
struct Annotation {
  std::string name;
  std::variant<int64_t, uint64_t, double, bool, std::string> value;
};

// What a counter track counts; sets the unit Perfetto shows.
enum class CounterUnit : uint8_t {
  kCount,      // plain number (outstanding DMAs)
  kBytes,      // bytes (VMEM in use)
  kRate,       // a named rate, e.g. "GB/s" (HBM bandwidth)
  kPercent,    // 0..100 (MXU utilization)
};

struct Slice {
  TrackId track = 0;
  std::string name;
  uint64_t begin_ps = 0;
  uint64_t end_ps = 0;  // >= begin_ps
  std::string category;  // e.g. "xla_op", "mxu", "dma"; may be empty
  std::vector<Annotation> annotations;
  std::vector<uint64_t> flow_out;  // flows that start at this slice
  std::vector<uint64_t> flow_in;   // flows that end at this slice
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;

  // A process (one per chip). `order` sorts processes (ascending).
  virtual TrackId AddProcess(const std::string& name, int32_t pid, int32_t order) = 0;
  // A track of slices under `parent` (a process or another slice track, which then groups it).
  // Siblings are shown in ascending `order`; tracks never merge with a sibling of the same name.
  virtual TrackId AddSliceTrack(TrackId parent, const std::string& name, int32_t order) = 0;
  // A counter track under `parent`. `unit_name` labels kRate values (e.g. "GB/s").
  virtual TrackId AddCounterTrack(TrackId parent, const std::string& name, CounterUnit unit,
                                  const std::string& unit_name, int32_t order) = 0;

  virtual void WriteSlice(const Slice& slice) = 0;
  virtual void WriteCounter(TrackId track, uint64_t time_ps, double value) = 0;

  // Flushes and closes the file; throws tpusim::Error if it cannot be written. No calls after.
  virtual void Finish() = 0;
};

}  // namespace tpusim::traces
