// Writes a trace in Perfetto's native protobuf format (traces/perfetto/*.proto), streamed: each
// TracePacket goes out as one length-delimited `packet` field (1) of a Trace as soon as it is
// made, so the file is a valid Trace whose first byte is 0x0A, and memory stays flat.
//
// Every packet is on one trusted packet sequence; names are written as strings (no interning, so
// no sequence flags). A slice is a TYPE_SLICE_BEGIN at its begin (name, category, annotations,
// flow_ids, terminating_flow_ids) and a TYPE_SLICE_END at its end; the END is written when the
// next slice on the track begins after it (or at Finish), so that at equal timestamps an END comes
// before a later slice's BEGIN and a child's END before its parent's (docs/traces.md).
#pragma once

#include <memory>
#include <string>

#include "traces/byte_sink.h"
#include "traces/perfetto/trace_packet.pb.h"
#include "traces/track_registry.h"
#include "traces/trace_sink.h"

namespace tpusim::traces {

class PerfettoTraceWriter final : public TraceSink {
 public:
  // The one trusted_packet_sequence_id of every packet.
  static constexpr uint32_t kSequenceId = 1;

  PerfettoTraceWriter(const std::string& path, bool gzip);

  TrackId AddProcess(const std::string& name, int32_t pid, int32_t order) override;
  TrackId AddSliceTrack(TrackId parent, const std::string& name, int32_t order) override;
  TrackId AddCounterTrack(TrackId parent, const std::string& name, CounterUnit unit,
                          const std::string& unit_name, int32_t order) override;
  void WriteSlice(const Slice& slice) override;
  void WriteCounter(TrackId track, uint64_t time_ps, double value) override;
  void Finish() override;

  std::size_t bytes_buffered() const { return sink_.bytes_buffered(); }
  std::size_t buffer_capacity() const { return sink_.buffer_capacity(); }
  const TrackRegistry& registry() const { return registry_; }

 private:
  void WriteTrackDescriptor(const TrackInfo& track);
  void WriteSliceEnd(TrackId track, uint64_t end_ps);
  void WritePacket();  // writes packet_ and clears it

  ByteSink sink_;
  TrackRegistry registry_;
  perfetto::protos::TracePacket packet_;  // reused: keeps its allocations between packets
  std::string bytes_;                     // reused likewise
  bool finished_ = false;
};

}  // namespace tpusim::traces
