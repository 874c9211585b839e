#include "traces/track_registry.h"

#include <cmath>

#include "isa/error.h"

namespace tpusim::traces {
namespace {

std::string Interval(uint64_t begin_ps, uint64_t end_ps) {
  return "[" + std::to_string(begin_ps) + " ps, " + std::to_string(end_ps) + " ps]";
}

}  // namespace

std::string TrackRegistry::Describe(TrackId id) const {
  return "track " + std::to_string(id) + " ('" + tracks_[id - 1].name + "')";
}

const TrackInfo& TrackRegistry::Track(TrackId id) const {
  if (id == 0 || id > tracks_.size()) {
    throw Error("trace: track " + std::to_string(id) + " was not declared");
  }
  return tracks_[id - 1];
}

TrackInfo& TrackRegistry::Declare(TrackId parent, const std::string& name, TrackKind kind,
                                  int32_t order) {
  TrackInfo info;
  info.id = tracks_.size() + 1;
  info.parent = parent;
  info.kind = kind;
  info.name = name;
  info.order = order;
  if (kind != TrackKind::kProcess) {
    if (parent == 0 || parent > tracks_.size()) {
      throw Error("trace: track '" + name + "' declared under undeclared parent track " +
                  std::to_string(parent));
    }
    const TrackInfo& p = tracks_[parent - 1];
    if (p.kind == TrackKind::kCounter) {
      throw Error("trace: track '" + name + "' declared under counter " + Describe(parent) +
                  ", which cannot have children");
    }
    info.pid = p.pid;
  }
  tracks_.push_back(std::move(info));
  states_.emplace_back();
  return tracks_.back();
}

const TrackInfo& TrackRegistry::AddProcess(const std::string& name, int32_t pid, int32_t order) {
  TrackInfo& info = Declare(0, name, TrackKind::kProcess, order);
  info.pid = pid;
  return info;
}

const TrackInfo& TrackRegistry::AddSliceTrack(TrackId parent, const std::string& name,
                                              int32_t order) {
  return Declare(parent, name, TrackKind::kSlice, order);
}

const TrackInfo& TrackRegistry::AddCounterTrack(TrackId parent, const std::string& name,
                                                CounterUnit unit, const std::string& unit_name,
                                                int32_t order) {
  TrackInfo& info = Declare(parent, name, TrackKind::kCounter, order);
  info.unit = unit;
  info.unit_name = unit_name;
  return info;
}

void TrackRegistry::BeginSlice(const Slice& slice, const EndSlice& end_slice) {
  const TrackInfo& track = Track(slice.track);
  const std::string what = "trace: slice '" + slice.name + "' " +
                           Interval(slice.begin_ps, slice.end_ps) + " on " +
                           Describe(slice.track);
  if (track.kind != TrackKind::kSlice) {
    throw Error(what + ": slices go on slice tracks, this is a " +
                (track.kind == TrackKind::kProcess ? "process" : "counter") + " track");
  }
  if (slice.end_ps < slice.begin_ps) throw Error(what + ": ends before it begins");
  TrackState& state = states_[slice.track - 1];
  if (slice.begin_ps < state.last_begin_ps) {
    throw Error(what + ": written after a slice that begins later (" +
                std::to_string(state.last_begin_ps) +
                " ps); slices on a track must come in order of begin time");
  }
  while (!state.open.empty()) {
    const OpenSlice& top = state.open.back();
    const bool inside = slice.begin_ps >= top.begin_ps && slice.end_ps <= top.end_ps;
    if (inside) break;
    if (top.end_ps > slice.begin_ps) {
      throw Error(what + ": overlaps slice '" + top.name + "' " +
                  Interval(top.begin_ps, top.end_ps) +
                  " without lying inside it (a parent must be written before its children)");
    }
    end_slice(slice.track, top.end_ps);
    state.open.pop_back();
  }
  for (uint64_t id : slice.flow_in) {
    auto it = open_flows_.find(id);
    if (it == open_flows_.end()) {
      throw Error(what + ": ends flow " + std::to_string(id) +
                  ", which no earlier written slice started (or another slice ended already)");
    }
    if (it->second > slice.begin_ps) {
      throw Error(what + ": ends flow " + std::to_string(id) + ", which starts later (" +
                  std::to_string(it->second) + " ps)");
    }
    open_flows_.erase(it);
  }
  for (uint64_t id : slice.flow_out) {
    if (!open_flows_.emplace(id, slice.begin_ps).second) {
      throw Error(what + ": starts flow " + std::to_string(id) + ", which another slice started");
    }
  }
  state.last_begin_ps = slice.begin_ps;
  state.open.push_back(OpenSlice{slice.name, slice.begin_ps, slice.end_ps});
}

void TrackRegistry::EndAll(const EndSlice& end_slice) {
  for (std::size_t i = 0; i < states_.size(); ++i) {
    std::vector<OpenSlice>& open = states_[i].open;
    while (!open.empty()) {
      end_slice(i + 1, open.back().end_ps);
      open.pop_back();
    }
  }
}

void TrackRegistry::CheckCounter(TrackId id, uint64_t time_ps, double value) {
  const TrackInfo& track = Track(id);
  const std::string what = "trace: counter sample at " + std::to_string(time_ps) + " ps on " +
                           Describe(id);
  if (track.kind != TrackKind::kCounter) throw Error(what + ": not a counter track");
  if (!std::isfinite(value)) throw Error(what + ": value is not finite");
  TrackState& state = states_[id - 1];
  if (state.has_counter && time_ps < state.last_counter_ps) {
    throw Error(what + ": earlier than the previous sample (" +
                std::to_string(state.last_counter_ps) + " ps)");
  }
  state.has_counter = true;
  state.last_counter_ps = time_ps;
}

std::size_t TrackRegistry::open_slices() const {
  std::size_t n = 0;
  for (const TrackState& s : states_) n += s.open.size();
  return n;
}

}  // namespace tpusim::traces
