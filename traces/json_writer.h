// Writes a trace in Chrome's JSON trace event format, streamed: {"traceEvents":[...],
// "displayTimeUnit":"ns"}. A process is a pid with `M` process_name/process_sort_index events;
// each slice track is a thread of its process (tid = the track's id) named by its path below the
// process ("Group / Track"); a slice is an `X` event; a counter track's samples are `C` events of
// the process named by the track's path; a flow is an `s` event at the starting slice's begin and
// an `f` event ("bp":"e") at the consuming slice's begin. Times are microseconds written exactly
// from whole nanoseconds ("1234.567"), rounded from ps as the Perfetto writer does. Thread sort
// indexes follow the track tree (depth first, by order), so they are written at Finish, when all
// tracks are known; tracks are few, so this holds nothing per slice.
#pragma once

#include <string>

#include "traces/byte_sink.h"
#include "traces/track_registry.h"
#include "traces/trace_sink.h"

namespace tpusim::traces {

class ChromeJsonTraceWriter final : public TraceSink {
 public:
  ChromeJsonTraceWriter(const std::string& path, bool gzip);

  TrackId AddProcess(const std::string& name, int32_t pid, int32_t order) override;
  TrackId AddSliceTrack(TrackId parent, const std::string& name, int32_t order) override;
  TrackId AddCounterTrack(TrackId parent, const std::string& name, CounterUnit unit,
                          const std::string& unit_name, int32_t order) override;
  void WriteSlice(const Slice& slice) override;
  void WriteCounter(TrackId track, uint64_t time_ps, double value) override;
  void Finish() override;

  std::size_t bytes_buffered() const { return sink_.bytes_buffered(); }

 private:
  std::string PathName(TrackId track) const;  // names from below the process, " / "-joined
  void BeginEvent();                           // writes the separator before an event
  void WriteMetadata();

  ByteSink sink_;
  TrackRegistry registry_;
  std::string event_;  // reused buffer for one event's text
  bool first_event_ = true;
  bool finished_ = false;
};

// JSON text helpers (exposed for tests).
void AppendJsonString(std::string& out, const std::string& text);
// Whole nanoseconds as microseconds with exactly three decimals: 1234567 -> "1234.567".
void AppendMicros(std::string& out, uint64_t ns);

}  // namespace tpusim::traces
