#include "traces/trace_check.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/wire_format_lite.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "isa/error.h"
#include "traces/perfetto/trace_packet.pb.h"

namespace tpusim::traces {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using perfetto::protos::DebugAnnotation;
using perfetto::protos::TracePacket;
using perfetto::protos::TrackEvent;

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read trace file " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string Gunzip(const std::string& path, const std::string& compressed) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) throw Error("cannot start gzip decompression");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char chunk[1 << 16];
  int status = Z_OK;
  while (status == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof(chunk);
    status = inflate(&z, Z_NO_FLUSH);
    out.append(chunk, sizeof(chunk) - z.avail_out);
    if (status == Z_BUF_ERROR && z.avail_in == 0) break;  // truncated stream
  }
  inflateEnd(&z);
  if (status != Z_STREAM_END) throw Error("trace file " + path + ": broken or truncated gzip data");
  return out;
}

// Every unknown field in `message` and the messages inside it, as "path: field N".
void FindUnknownFields(const Message& message, const std::string& path,
                       std::vector<std::string>& found) {
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  const google::protobuf::UnknownFieldSet& unknown = reflection.GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    found.push_back(path + ": unknown field " + std::to_string(unknown.field(i).number()));
  }
  std::vector<const FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const std::string sub = path + "." + field->name();
    if (field->is_repeated()) {
      for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
        FindUnknownFields(reflection.GetRepeatedMessage(message, field, i),
                          sub + "[" + std::to_string(i) + "]", found);
      }
    } else {
      FindUnknownFields(reflection.GetMessage(message, field), sub, found);
    }
  }
}

// A TrackEvent kept until all packets are read (descriptors may come anywhere in a file).
struct Event {
  uint64_t packet = 0;  // index = file position
  uint64_t time_ns = 0;
  uint64_t track = 0;
  TrackEvent::Type type = TrackEvent::TYPE_UNSPECIFIED;
  std::string name;
  std::vector<Annotation> annotations;
  std::vector<uint64_t> flow_ids;
  std::vector<uint64_t> terminating_flow_ids;
  std::optional<double> counter_value;
};

// Interned names per sequence (the checker resolves them though tpusim writes none).
struct Interned {
  std::unordered_map<uint64_t, std::string> event_names;
  std::unordered_map<uint64_t, std::string> annotation_names;
};

Annotation ToAnnotation(const DebugAnnotation& a, const Interned& interned) {
  Annotation out;
  if (a.has_name()) {
    out.name = a.name();
  } else if (a.has_name_iid()) {
    auto it = interned.annotation_names.find(a.name_iid());
    out.name = it != interned.annotation_names.end() ? it->second : "";
  }
  switch (a.value_case()) {
    case DebugAnnotation::kBoolValue: out.value = a.bool_value(); break;
    case DebugAnnotation::kUintValue: out.value = a.uint_value(); break;
    case DebugAnnotation::kIntValue: out.value = a.int_value(); break;
    case DebugAnnotation::kDoubleValue: out.value = a.double_value(); break;
    case DebugAnnotation::kStringValue: out.value = a.string_value(); break;
    case DebugAnnotation::kPointerValue: out.value = a.pointer_value(); break;
    default: out.value = std::string(); break;  // nested dicts and arrays: not read back
  }
  return out;
}

class Checker {
 public:
  explicit Checker(ParsedTrace& trace) : trace_(trace) {}

  void Problem(uint64_t packet, const std::string& what) {
    trace_.problems.push_back("packet " + std::to_string(packet) + ": " + what);
  }

  void ReadPacket(uint64_t index, const TracePacket& packet) {
    std::vector<std::string> unknown;
    FindUnknownFields(packet, "TracePacket", unknown);
    for (const std::string& u : unknown) Problem(index, u);
    const uint32_t sequence = packet.trusted_packet_sequence_id();
    if (packet.has_interned_data()) {
      Interned& interned = interned_[sequence];
      for (const auto& n : packet.interned_data().event_names()) interned.event_names[n.iid()] = n.name();
      for (const auto& n : packet.interned_data().debug_annotation_names()) {
        interned.annotation_names[n.iid()] = n.name();
      }
    }
    if (packet.has_track_descriptor()) ReadDescriptor(index, packet);
    if (packet.has_track_event()) ReadEvent(index, packet);
  }

  void ReadDescriptor(uint64_t index, const TracePacket& packet) {
    const auto& d = packet.track_descriptor();
    if (!d.has_uuid() || d.uuid() == 0) {
      Problem(index, "TrackDescriptor without a uuid");
      return;
    }
    if (!declared_.insert(d.uuid()).second) {
      Problem(index, "TrackDescriptor uuid " + std::to_string(d.uuid()) + " declared twice");
      return;
    }
    ParsedTrack track;
    track.uuid = d.uuid();
    track.parent_uuid = d.parent_uuid();
    track.is_process = d.has_process();
    track.is_counter = d.has_counter();
    track.name = track.is_process && d.process().has_process_name() ? d.process().process_name()
                                                                     : d.name();
    track.order = d.sibling_order_rank();
    descriptor_packet_[track.uuid] = index;
    trace_.tracks.push_back(track);
  }

  void ReadEvent(uint64_t index, const TracePacket& packet) {
    if (!packet.has_trusted_packet_sequence_id()) {
      Problem(index, "TrackEvent without trusted_packet_sequence_id (Perfetto drops it)");
      return;
    }
    const TrackEvent& e = packet.track_event();
    const Interned& interned = interned_[packet.trusted_packet_sequence_id()];
    Event event;
    event.packet = index;
    event.time_ns = packet.timestamp();
    if (!packet.has_timestamp()) Problem(index, "TrackEvent without a timestamp");
    if (!e.has_track_uuid()) {
      Problem(index, "TrackEvent without track_uuid");
      return;
    }
    event.track = e.track_uuid();
    event.type = e.type();
    if (e.has_name()) {
      event.name = e.name();
    } else if (e.has_name_iid()) {
      auto it = interned.event_names.find(e.name_iid());
      if (it == interned.event_names.end()) {
        Problem(index, "name_iid " + std::to_string(e.name_iid()) + " was not interned");
      } else {
        event.name = it->second;
      }
    }
    for (const DebugAnnotation& a : e.debug_annotations()) {
      event.annotations.push_back(ToAnnotation(a, interned));
    }
    event.flow_ids.assign(e.flow_ids().begin(), e.flow_ids().end());
    event.terminating_flow_ids.assign(e.terminating_flow_ids().begin(),
                                      e.terminating_flow_ids().end());
    if (e.has_double_counter_value()) event.counter_value = e.double_counter_value();
    if (e.has_counter_value()) event.counter_value = static_cast<double>(e.counter_value());
    events_.push_back(std::move(event));
  }

  void CheckTracks() {
    for (const ParsedTrack& track : trace_.tracks) {
      if (track.parent_uuid != 0 && !declared_.contains(track.parent_uuid)) {
        Problem(descriptor_packet_[track.uuid],
                "track " + std::to_string(track.uuid) + " has undeclared parent " +
                    std::to_string(track.parent_uuid));
      }
    }
  }

  // Replays the events as Perfetto's importer orders them: by (timestamp, file position).
  void CheckEvents() {
    std::stable_sort(events_.begin(), events_.end(),
                     [](const Event& a, const Event& b) { return a.time_ns < b.time_ns; });
    std::unordered_map<uint64_t, const ParsedTrack*> tracks;
    for (const ParsedTrack& t : trace_.tracks) tracks[t.uuid] = &t;
    std::unordered_map<uint64_t, std::vector<std::pair<std::size_t, uint64_t>>> open;  // slice, packet
    std::set<uint64_t> started_flows;
    std::set<uint64_t> ended_flows;
    for (Event& e : events_) {
      auto it = tracks.find(e.track);
      if (it == tracks.end()) {
        Problem(e.packet, "event on undeclared track " + std::to_string(e.track));
        continue;
      }
      const bool counter_track = it->second->is_counter;
      switch (e.type) {
        case TrackEvent::TYPE_COUNTER:
          if (!counter_track) {
            Problem(e.packet, "counter value on track " + std::to_string(e.track) +
                                  ", which is not a counter track");
          } else if (!e.counter_value.has_value()) {
            Problem(e.packet, "TYPE_COUNTER event without a value");
          } else {
            trace_.counters.push_back(ParsedCounterSample{e.track, e.time_ns, *e.counter_value});
          }
          break;
        case TrackEvent::TYPE_SLICE_BEGIN:
        case TrackEvent::TYPE_INSTANT: {
          if (counter_track) {
            Problem(e.packet, "slice '" + e.name + "' on counter track " + std::to_string(e.track));
            break;
          }
          for (uint64_t id : e.terminating_flow_ids) {
            if (!started_flows.contains(id)) {
              Problem(e.packet, "terminating flow id " + std::to_string(id) +
                                    " was not started by an earlier-or-equal slice");
            } else if (!ended_flows.insert(id).second) {
              Problem(e.packet, "flow id " + std::to_string(id) + " terminated twice");
            }
          }
          for (uint64_t id : e.flow_ids) {
            if (!started_flows.insert(id).second) {
              Problem(e.packet, "flow id " + std::to_string(id) + " started twice");
            }
          }
          ParsedSlice slice;
          slice.track = e.track;
          slice.name = e.name;
          slice.begin_ns = slice.end_ns = e.time_ns;
          slice.depth = static_cast<uint32_t>(open[e.track].size());
          slice.annotations = std::move(e.annotations);
          slice.flow_out = e.flow_ids;
          slice.flow_in = e.terminating_flow_ids;
          trace_.slices.push_back(std::move(slice));
          if (e.type == TrackEvent::TYPE_SLICE_BEGIN) {
            open[e.track].emplace_back(trace_.slices.size() - 1, e.packet);
          }
          break;
        }
        case TrackEvent::TYPE_SLICE_END: {
          std::vector<std::pair<std::size_t, uint64_t>>& stack = open[e.track];
          if (stack.empty()) {
            Problem(e.packet, "SLICE_END on track " + std::to_string(e.track) +
                                  " with no open slice");
            break;
          }
          trace_.slices[stack.back().first].end_ns = e.time_ns;
          stack.pop_back();
          break;
        }
        default:
          Problem(e.packet, "TrackEvent without a known type");
      }
    }
    for (const auto& [track, stack] : open) {
      for (const auto& [slice, packet] : stack) {
        Problem(packet, "slice '" + trace_.slices[slice].name + "' on track " +
                            std::to_string(track) + " never ends");
      }
    }
  }

 private:
  ParsedTrace& trace_;
  std::set<uint64_t> declared_;
  std::unordered_map<uint64_t, uint64_t> descriptor_packet_;
  std::unordered_map<uint32_t, Interned> interned_;
  std::vector<Event> events_;
};

}  // namespace

const ParsedTrack* ParsedTrace::FindTrack(const std::string& name, uint64_t parent_uuid) const {
  for (const ParsedTrack& track : tracks) {
    if (track.name == name && track.parent_uuid == parent_uuid) return &track;
  }
  return nullptr;
}

ParsedTrace ReadAndCheckPerfettoTrace(const std::string& path) {
  std::string bytes = ReadFileBytes(path);
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
      static_cast<unsigned char>(bytes[1]) == 0x8b) {
    bytes = Gunzip(path, bytes);
  }
  ParsedTrace trace;
  if (bytes.empty()) {
    trace.problems.push_back("the trace is empty");
    return trace;
  }
  if (static_cast<unsigned char>(bytes[0]) != 0x0A) {
    trace.problems.push_back("first byte is not 0x0A (Perfetto would not recognise a protobuf trace)");
  }
  Checker checker(trace);
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT32_MAX);
  uint64_t index = 0;
  TracePacket packet;
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) {
      if (in.CurrentPosition() != static_cast<int>(bytes.size())) {
        throw Error("trace file " + path + ": not a protobuf trace (bad field tag at byte " +
                    std::to_string(in.CurrentPosition()) + ")");
      }
      break;
    }
    const int offset = in.CurrentPosition();
    if (tag != 0x0A) {
      trace.problems.push_back("byte " + std::to_string(offset) + ": Trace field " +
                               std::to_string(tag >> 3) + " is not a packet (unknown field)");
      if (!google::protobuf::internal::WireFormatLite::SkipField(&in, tag)) {
        throw Error("trace file " + path + ": not a protobuf trace (cannot skip field at byte " +
                    std::to_string(offset) + ")");
      }
      continue;
    }
    uint32_t length = 0;
    std::string payload;
    if (!in.ReadVarint32(&length) || !in.ReadString(&payload, static_cast<int>(length))) {
      throw Error("trace file " + path + ": truncated packet " + std::to_string(index) +
                  " at byte " + std::to_string(offset));
    }
    packet.Clear();
    if (!packet.ParseFromString(payload)) {
      trace.problems.push_back("packet " + std::to_string(index) + ": does not parse as a TracePacket");
    } else {
      checker.ReadPacket(index, packet);
    }
    ++index;
  }
  trace.packets = index;
  checker.CheckTracks();
  checker.CheckEvents();
  return trace;
}

}  // namespace tpusim::traces
