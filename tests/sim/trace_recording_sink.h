// An in-memory traces::TraceSink for the trace tests: keeps every declaration and event, and
// checks the sink's ordering contract (traces/trace_sink.h) as a writer would, recording each
// violation in `problems` instead of throwing.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "traces/trace_sink.h"

namespace tpusim::trace_test {

struct RecordedTrack {
  traces::TrackId id = 0;
  traces::TrackId parent = 0;
  std::string name;
  int32_t order = 0;
  bool process = false;
  bool counter = false;
};

struct RecordedCounter {
  traces::TrackId track = 0;
  uint64_t time_ps = 0;
  double value = 0;
};

class RecordingSink : public traces::TraceSink {
 public:
  traces::TrackId AddProcess(const std::string& name, int32_t /*pid*/, int32_t order) override {
    return Add({0, 0, name, order, true, false});
  }
  traces::TrackId AddSliceTrack(traces::TrackId parent, const std::string& name, int32_t order) override {
    return Add({0, parent, name, order, false, false});
  }
  traces::TrackId AddCounterTrack(traces::TrackId parent, const std::string& name, traces::CounterUnit /*unit*/,
                                  const std::string& /*unit_name*/, int32_t order) override {
    return Add({0, parent, name, order, false, true});
  }
  void WriteSlice(const traces::Slice& slice) override {
    const RecordedTrack* track = Find(slice.track);
    if (track == nullptr || track->counter || track->process) Problem("slice '" + slice.name + "' on a bad track");
    if (slice.end_ps < slice.begin_ps) Problem("slice '" + slice.name + "' ends before it begins");
    uint64_t& last = last_begin_[slice.track];
    if (slice.begin_ps < last) Problem("slice '" + slice.name + "' begins before the previous one on its track");
    last = slice.begin_ps;
    for (uint64_t id : slice.flow_out) {
      if (!flow_begin_.emplace(id, slice.begin_ps).second) Problem("flow started twice");
    }
    for (uint64_t id : slice.flow_in) {
      const auto it = flow_begin_.find(id);
      if (it == flow_begin_.end()) {
        Problem("flow " + std::to_string(id) + " ended before it started");
      } else if (it->second > slice.begin_ps) {
        Problem("flow " + std::to_string(id) + " ends at a slice that begins before its start");
      }
      if (!flow_ended_.insert(id).second) Problem("flow ended twice");
    }
    slices.push_back(slice);
  }
  void WriteCounter(traces::TrackId track, uint64_t time_ps, double value) override {
    const RecordedTrack* found = Find(track);
    if (found == nullptr || !found->counter) Problem("counter value on a non-counter track");
    uint64_t& last = last_counter_[track];
    if (time_ps < last) Problem("counter sample out of time order on " + (found ? found->name : "?"));
    last = time_ps;
    counters.push_back({track, time_ps, value});
  }
  void Finish() override { finished = true; }

  const RecordedTrack* Named(const std::string& name) const {
    for (const RecordedTrack& track : tracks) {
      if (track.name == name) return &track;
    }
    return nullptr;
  }
  std::vector<const traces::Slice*> SlicesOn(const std::string& track_name) const {
    std::vector<const traces::Slice*> found;
    const RecordedTrack* track = Named(track_name);
    for (const traces::Slice& slice : slices) {
      if (track != nullptr && slice.track == track->id) found.push_back(&slice);
    }
    return found;
  }

  std::vector<RecordedTrack> tracks;
  std::vector<traces::Slice> slices;
  std::vector<RecordedCounter> counters;
  std::vector<std::string> problems;
  bool finished = false;

 private:
  traces::TrackId Add(RecordedTrack track) {
    if (track.parent != 0 && Find(track.parent) == nullptr) Problem("track '" + track.name + "' has no parent");
    track.id = tracks.size() + 1;
    tracks.push_back(track);
    return track.id;
  }
  const RecordedTrack* Find(traces::TrackId id) const {
    return id >= 1 && id <= tracks.size() ? &tracks[id - 1] : nullptr;
  }
  void Problem(const std::string& what) { problems.push_back(what); }

  std::map<traces::TrackId, uint64_t> last_begin_;
  std::map<traces::TrackId, uint64_t> last_counter_;
  std::map<uint64_t, uint64_t> flow_begin_;
  std::set<uint64_t> flow_ended_;
};

// A named annotation's value, or nullptr.
inline const traces::Annotation* AnnotationOf(const traces::Slice& slice, const std::string& name) {
  for (const traces::Annotation& annotation : slice.annotations) {
    if (annotation.name == name) return &annotation;
  }
  return nullptr;
}

}  // namespace tpusim::trace_test
