#include "traces/perfetto_writer.h"

#include "isa/error.h"

namespace tpusim::traces {
namespace {

using perfetto::protos::CounterDescriptor;
using perfetto::protos::DebugAnnotation;
using perfetto::protos::TrackDescriptor;
using perfetto::protos::TrackEvent;

void SetAnnotation(const Annotation& annotation, DebugAnnotation& out) {
  out.set_name(annotation.name);
  std::visit(
      [&out](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          out.set_int_value(value);
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          out.set_uint_value(value);
        } else if constexpr (std::is_same_v<T, double>) {
          out.set_double_value(value);
        } else if constexpr (std::is_same_v<T, bool>) {
          out.set_bool_value(value);
        } else {
          out.set_string_value(value);
        }
      },
      annotation.value);
}

void AppendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

}  // namespace

PerfettoTraceWriter::PerfettoTraceWriter(const std::string& path, bool gzip)
    : sink_(path, gzip) {}

void PerfettoTraceWriter::WritePacket() {
  bytes_.clear();
  packet_.AppendToString(&bytes_);
  // Trace.packet (field 1, length-delimited): tag 0x0A, varint length, the packet's bytes.
  std::string header(1, '\x0A');
  AppendVarint(header, bytes_.size());
  sink_.Write(header);
  sink_.Write(bytes_);
  packet_.Clear();
}

void PerfettoTraceWriter::WriteTrackDescriptor(const TrackInfo& track) {
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
  packet_.set_timestamp(PsToNs(end_ps));
  packet_.set_trusted_packet_sequence_id(kSequenceId);
  TrackEvent& e = *packet_.mutable_track_event();
  e.set_type(TrackEvent::TYPE_SLICE_END);
  e.set_track_uuid(track);
  WritePacket();
}

void PerfettoTraceWriter::WriteSlice(const Slice& slice) {
  if (finished_) throw Error("trace: slice '" + slice.name + "' written after Finish");
  registry_.BeginSlice(slice, [this](TrackId track, uint64_t end_ps) {
    WriteSliceEnd(track, end_ps);
  });
  packet_.set_timestamp(PsToNs(slice.begin_ps));
  packet_.set_trusted_packet_sequence_id(kSequenceId);
  TrackEvent& e = *packet_.mutable_track_event();
  e.set_type(TrackEvent::TYPE_SLICE_BEGIN);
  e.set_track_uuid(slice.track);
  e.set_name(slice.name);
  if (!slice.category.empty()) e.add_categories(slice.category);
  for (const Annotation& annotation : slice.annotations) {
    SetAnnotation(annotation, *e.add_debug_annotations());
  }
  for (uint64_t id : slice.flow_out) e.add_flow_ids(id);
  for (uint64_t id : slice.flow_in) e.add_terminating_flow_ids(id);
  WritePacket();
}

void PerfettoTraceWriter::WriteCounter(TrackId track, uint64_t time_ps, double value) {
  if (finished_) throw Error("trace: counter sample written after Finish");
  registry_.CheckCounter(track, time_ps, value);
  packet_.set_timestamp(PsToNs(time_ps));
  packet_.set_trusted_packet_sequence_id(kSequenceId);
  TrackEvent& e = *packet_.mutable_track_event();
  e.set_type(TrackEvent::TYPE_COUNTER);
  e.set_track_uuid(track);
  e.set_double_counter_value(value);
  WritePacket();
}

void PerfettoTraceWriter::Finish() {
  if (finished_) return;
  finished_ = true;
  registry_.EndAll([this](TrackId track, uint64_t end_ps) { WriteSliceEnd(track, end_ps); });
  sink_.Close();
}

}  // namespace tpusim::traces
