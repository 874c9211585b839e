#include "traces/perfetto_writer.h"

#include "isa/error.h"
#include "traces/perfetto/trace.pb.h"
#include "traces/proto_encoder.h"

namespace tpusim::traces {
namespace {

using perfetto::protos::CounterDescriptor;
using perfetto::protos::DebugAnnotation;
using perfetto::protos::Trace;
using perfetto::protos::TracePacket;
using perfetto::protos::TrackDescriptor;
using perfetto::protos::TrackEvent;

void AppendAnnotation(std::string& out, const Annotation& annotation) {
  wire::AppendBytesField(out, DebugAnnotation::kNameFieldNumber, annotation.name);
  std::visit(
      [&out](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          wire::AppendVarintField(out, DebugAnnotation::kIntValueFieldNumber,
                                  static_cast<uint64_t>(value));
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          wire::AppendVarintField(out, DebugAnnotation::kUintValueFieldNumber, value);
        } else if constexpr (std::is_same_v<T, double>) {
          wire::AppendDoubleField(out, DebugAnnotation::kDoubleValueFieldNumber, value);
        } else if constexpr (std::is_same_v<T, bool>) {
          wire::AppendVarintField(out, DebugAnnotation::kBoolValueFieldNumber, value ? 1 : 0);
        } else {
          wire::AppendBytesField(out, DebugAnnotation::kStringValueFieldNumber, value);
        }
      },
      annotation.value);
}

}  // namespace

PerfettoTraceWriter::PerfettoTraceWriter(const std::string& path, bool gzip)
    : sink_(path, gzip) {}

void PerfettoTraceWriter::WritePacket() {
  bytes_.clear();
  packet_.AppendToString(&bytes_);
  WriteFramed(bytes_);
  packet_.Clear();
}

void PerfettoTraceWriter::WriteFramed(std::string_view packet) {
  // Trace.packet (field 1, length-delimited): tag 0x0A, varint length, the packet's bytes.
  frame_.clear();
  wire::AppendTag(frame_, Trace::kPacketFieldNumber, wire::kLengthDelimited);
  wire::AppendVarint(frame_, packet.size());
  sink_.Write(frame_);
  sink_.Write(packet);
}

void PerfettoTraceWriter::WriteEventPacket(uint64_t time_ps) {
  // TracePacket { timestamp, trusted_packet_sequence_id, track_event = event_ }
  bytes_.clear();
  wire::AppendVarintField(bytes_, TracePacket::kTimestampFieldNumber, PsToNs(time_ps));
  wire::AppendVarintField(bytes_, TracePacket::kTrustedPacketSequenceIdFieldNumber, kSequenceId);
  wire::AppendBytesField(bytes_, TracePacket::kTrackEventFieldNumber, event_);
  WriteFramed(bytes_);
}

void PerfettoTraceWriter::WriteTrackDescriptor(const TrackInfo& track) {
  // On the same sequence as the events, as Perfetto's SDK writes them (the importer does not
  // need it for these tracks, but one sequence for everything leaves nothing to doubt).
  packet_.set_trusted_packet_sequence_id(kSequenceId);
  TrackDescriptor& d = *packet_.mutable_track_descriptor();
  d.set_uuid(track.id);
  d.set_sibling_order_rank(track.order);
  if (track.kind == TrackKind::kProcess) {
    d.mutable_process()->set_pid(track.pid);
    d.mutable_process()->set_process_name(track.name);
  } else {
    d.set_parent_uuid(track.parent);
    d.set_name(track.name);
    d.set_sibling_merge_behavior(TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE);
    // Perfetto ignores child_ordering on process tracks; on a slice track it orders the tracks
    // grouped under it by sibling_order_rank.
    if (track.kind == TrackKind::kSlice) d.set_child_ordering(TrackDescriptor::EXPLICIT);
  }
  if (track.kind == TrackKind::kCounter) {
    CounterDescriptor& c = *d.mutable_counter();
    switch (track.unit) {
      case CounterUnit::kCount: c.set_unit(CounterDescriptor::UNIT_COUNT); break;
      case CounterUnit::kBytes: c.set_unit(CounterDescriptor::UNIT_SIZE_BYTES); break;
      case CounterUnit::kRate: break;  // only unit_name says what it is
      case CounterUnit::kPercent: c.set_unit_name("%"); break;
    }
    if (!track.unit_name.empty()) c.set_unit_name(track.unit_name);
  }
  WritePacket();
}

TrackId PerfettoTraceWriter::AddProcess(const std::string& name, int32_t pid, int32_t order) {
  const TrackInfo& track = registry_.AddProcess(name, pid, order);
  WriteTrackDescriptor(track);
  return track.id;
}

TrackId PerfettoTraceWriter::AddSliceTrack(TrackId parent, const std::string& name,
                                           int32_t order) {
  const TrackInfo& track = registry_.AddSliceTrack(parent, name, order);
  WriteTrackDescriptor(track);
  return track.id;
}

TrackId PerfettoTraceWriter::AddCounterTrack(TrackId parent, const std::string& name,
                                             CounterUnit unit, const std::string& unit_name,
                                             int32_t order) {
  const TrackInfo& track = registry_.AddCounterTrack(parent, name, unit, unit_name, order);
  WriteTrackDescriptor(track);
  return track.id;
}

void PerfettoTraceWriter::WriteSliceEnd(TrackId track, uint64_t end_ps) {
  event_.clear();
  wire::AppendVarintField(event_, TrackEvent::kTypeFieldNumber, TrackEvent::TYPE_SLICE_END);
  wire::AppendVarintField(event_, TrackEvent::kTrackUuidFieldNumber, track);
  WriteEventPacket(end_ps);
}

void PerfettoTraceWriter::WriteSlice(const Slice& slice) {
  if (finished_) throw Error("trace: slice '" + slice.name + "' written after Finish");
  registry_.BeginSlice(slice, [this](TrackId track, uint64_t end_ps) {
    WriteSliceEnd(track, end_ps);
  });
  event_.clear();
  wire::AppendVarintField(event_, TrackEvent::kTypeFieldNumber, TrackEvent::TYPE_SLICE_BEGIN);
  wire::AppendVarintField(event_, TrackEvent::kTrackUuidFieldNumber, slice.track);
  wire::AppendBytesField(event_, TrackEvent::kNameFieldNumber, slice.name);
  if (!slice.category.empty()) {
    wire::AppendBytesField(event_, TrackEvent::kCategoriesFieldNumber, slice.category);
  }
  for (const Annotation& annotation : slice.annotations) {
    annotation_.clear();
    AppendAnnotation(annotation_, annotation);
    wire::AppendBytesField(event_, TrackEvent::kDebugAnnotationsFieldNumber, annotation_);
  }
  // repeated fixed64, unpacked (proto2's default, as upstream declares them).
  for (uint64_t id : slice.flow_out) {
    wire::AppendFixed64Field(event_, TrackEvent::kFlowIdsFieldNumber, id);
  }
  for (uint64_t id : slice.flow_in) {
    wire::AppendFixed64Field(event_, TrackEvent::kTerminatingFlowIdsFieldNumber, id);
  }
  WriteEventPacket(slice.begin_ps);
}

void PerfettoTraceWriter::WriteCounter(TrackId track, uint64_t time_ps, double value) {
  if (finished_) throw Error("trace: counter sample written after Finish");
  registry_.CheckCounter(track, time_ps, value);
  event_.clear();
  wire::AppendVarintField(event_, TrackEvent::kTypeFieldNumber, TrackEvent::TYPE_COUNTER);
  wire::AppendVarintField(event_, TrackEvent::kTrackUuidFieldNumber, track);
  wire::AppendDoubleField(event_, TrackEvent::kDoubleCounterValueFieldNumber, value);
  WriteEventPacket(time_ps);
}

void PerfettoTraceWriter::Finish() {
  if (finished_) return;
  finished_ = true;
  registry_.EndAll([this](TrackId track, uint64_t end_ps) { WriteSliceEnd(track, end_ps); });
  sink_.Close();
}

}  // namespace tpusim::traces
