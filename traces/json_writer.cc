#include "traces/json_writer.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "isa/error.h"

namespace tpusim::traces {
namespace {

void AppendInt(std::string& out, int64_t value) { out += std::to_string(value); }

void AppendDouble(std::string& out, double value) {
  if (!std::isfinite(value)) {  // JSON has no NaN or infinity: keep them readable as strings
    out += std::isnan(value) ? "\"NaN\"" : (value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    return;
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);  // shortest exact
  out.append(buffer, result.ptr);
}

void AppendAnnotationValue(std::string& out, const Annotation& annotation) {
  std::visit(
      [&out](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          AppendInt(out, value);
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          out += std::to_string(value);
        } else if constexpr (std::is_same_v<T, double>) {
          AppendDouble(out, value);
        } else if constexpr (std::is_same_v<T, bool>) {
          out += value ? "true" : "false";
        } else {
          AppendJsonString(out, value);
        }
      },
      annotation.value);
}

}  // namespace

void AppendJsonString(std::string& out, const std::string& text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out.push_back(kHex[u >> 4]);
          out.push_back(kHex[u & 15]);
        } else {
          out.push_back(c);  // UTF-8 passes through
        }
    }
  }
  out.push_back('"');
}

void AppendMicros(std::string& out, uint64_t ns) {
  out += std::to_string(ns / 1000);
  const unsigned frac = static_cast<unsigned>(ns % 1000);
  out.push_back('.');
  out.push_back(static_cast<char>('0' + frac / 100));
  out.push_back(static_cast<char>('0' + frac / 10 % 10));
  out.push_back(static_cast<char>('0' + frac % 10));
}

ChromeJsonTraceWriter::ChromeJsonTraceWriter(const std::string& path, bool gzip)
    : sink_(path, gzip) {
  sink_.Write(std::string_view("{\"traceEvents\":[\n"));
}

void ChromeJsonTraceWriter::BeginEvent() {
  event_.clear();
  if (!first_event_) event_ += ",\n";
  first_event_ = false;
}

std::string ChromeJsonTraceWriter::PathName(TrackId id) const {
  std::string name;
  for (TrackId t = id; t != 0; t = registry_.Track(t).parent) {
    const TrackInfo& info = registry_.Track(t);
    if (info.kind == TrackKind::kProcess) break;
    name = name.empty() ? info.name : info.name + " / " + name;
  }
  return name;
}

TrackId ChromeJsonTraceWriter::AddProcess(const std::string& name, int32_t pid, int32_t order) {
  return registry_.AddProcess(name, pid, order).id;
}

TrackId ChromeJsonTraceWriter::AddSliceTrack(TrackId parent, const std::string& name,
                                             int32_t order) {
  return registry_.AddSliceTrack(parent, name, order).id;
}

TrackId ChromeJsonTraceWriter::AddCounterTrack(TrackId parent, const std::string& name,
                                               CounterUnit unit, const std::string& unit_name,
                                               int32_t order) {
  return registry_.AddCounterTrack(parent, name, unit, unit_name, order).id;
}

void ChromeJsonTraceWriter::WriteSlice(const Slice& slice) {
  if (finished_) throw Error("trace: slice '" + slice.name + "' written after Finish");
  registry_.BeginSlice(slice, [](TrackId, uint64_t) {});  // X events carry their duration
  const TrackInfo& track = registry_.Track(slice.track);
  const uint64_t begin_ns = PsToNs(slice.begin_ps);
  const uint64_t end_ns = PsToNs(slice.end_ps);
  std::string where = ",\"pid\":" + std::to_string(track.pid) +
                      ",\"tid\":" + std::to_string(track.id) + ",\"ts\":";
  AppendMicros(where, begin_ns);

  BeginEvent();
  event_ += "{\"ph\":\"X\",\"name\":";
  AppendJsonString(event_, slice.name);
  event_ += ",\"cat\":";
  AppendJsonString(event_, slice.category);
  event_ += where;
  event_ += ",\"dur\":";
  AppendMicros(event_, end_ns - begin_ns);
  if (!slice.annotations.empty()) {
    event_ += ",\"args\":{";
    for (std::size_t i = 0; i < slice.annotations.size(); ++i) {
      if (i > 0) event_.push_back(',');
      AppendJsonString(event_, slice.annotations[i].name);
      event_.push_back(':');
      AppendAnnotationValue(event_, slice.annotations[i]);
    }
    event_.push_back('}');
  }
  event_.push_back('}');
  // Flows match on (cat, name, id); "bp":"e" binds the end to the slice enclosing its time.
  for (uint64_t id : slice.flow_out) {
    event_ += ",\n{\"ph\":\"s\",\"name\":\"flow\",\"cat\":\"flow\",\"id\":" + std::to_string(id) +
              where + "}";
  }
  for (uint64_t id : slice.flow_in) {
    event_ += ",\n{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"flow\",\"cat\":\"flow\",\"id\":" +
              std::to_string(id) + where + "}";
  }
  sink_.Write(event_);
}

void ChromeJsonTraceWriter::WriteCounter(TrackId track_id, uint64_t time_ps, double value) {
  if (finished_) throw Error("trace: counter sample written after Finish");
  registry_.CheckCounter(track_id, time_ps, value);
  const TrackInfo& track = registry_.Track(track_id);
  BeginEvent();
  event_ += "{\"ph\":\"C\",\"name\":";
  AppendJsonString(event_, PathName(track_id));
  event_ += ",\"pid\":" + std::to_string(track.pid) + ",\"ts\":";
  AppendMicros(event_, PsToNs(time_ps));
  event_ += ",\"args\":{\"value\":";
  AppendDouble(event_, value);
  event_ += "}}";
  sink_.Write(event_);
}

void ChromeJsonTraceWriter::WriteMetadata() {
  const std::vector<TrackInfo>& tracks = registry_.tracks();
  // Children of each track in (order, declaration) order, for a depth-first thread order.
  std::vector<std::vector<TrackId>> children(tracks.size() + 1);
  for (const TrackInfo& t : tracks) children[t.parent].push_back(t.id);
  for (std::vector<TrackId>& list : children) {
    std::stable_sort(list.begin(), list.end(), [&tracks](TrackId a, TrackId b) {
      return tracks[a - 1].order < tracks[b - 1].order;
    });
  }
  int64_t thread_rank = 0;
  std::vector<TrackId> stack(children[0].rbegin(), children[0].rend());
  while (!stack.empty()) {
    const TrackInfo& t = tracks[stack.back() - 1];
    stack.pop_back();
    const std::string pid = std::to_string(t.pid);
    if (t.kind == TrackKind::kProcess) {
      BeginEvent();
      event_ += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + pid + ",\"args\":{\"name\":";
      AppendJsonString(event_, t.name);
      event_ += "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + pid +
                ",\"args\":{\"sort_index\":" + std::to_string(t.order) + "}}";
      sink_.Write(event_);
    } else if (t.kind == TrackKind::kSlice) {
      const std::string tid = std::to_string(t.id);
      BeginEvent();
      event_ += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + pid + ",\"tid\":" + tid +
                ",\"args\":{\"name\":";
      AppendJsonString(event_, PathName(t.id));
      event_ += "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + pid +
                ",\"tid\":" + tid + ",\"args\":{\"sort_index\":" + std::to_string(thread_rank++) +
                "}}";
      sink_.Write(event_);
    }
    stack.insert(stack.end(), children[t.id].rbegin(), children[t.id].rend());
  }
}

void ChromeJsonTraceWriter::Finish() {
  if (finished_) return;
  finished_ = true;
  WriteMetadata();
  sink_.Write(std::string_view("\n],\"displayTimeUnit\":\"ns\"}\n"));
  sink_.Close();
}

}  // namespace tpusim::traces
