// The tracks a trace writer has declared, and the checks of trace_sink.h's ordering contract that
// every writer makes. Holds per track only what the contract needs: the slices still open on it
// (as deep as slices nest), the last begin and counter time; per flow, only flows started and not
// yet ended. Nothing grows with the number of slices written.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/trace_sink.h"

namespace tpusim::traces {

enum class TrackKind : uint8_t { kProcess, kSlice, kCounter };

struct TrackInfo {
  TrackId id = 0;
  TrackId parent = 0;  // 0 for a process
  TrackKind kind = TrackKind::kSlice;
  std::string name;
  int32_t pid = 0;     // the process's pid (a track's: its process's)
  int32_t order = 0;
  CounterUnit unit = CounterUnit::kCount;
  std::string unit_name;
};

class TrackRegistry {
 public:
  // Each returns the new track's id (1, 2, ... in declaration order); throws tpusim::Error for a
  // parent that is not declared or cannot have children.
  const TrackInfo& AddProcess(const std::string& name, int32_t pid, int32_t order);
  const TrackInfo& AddSliceTrack(TrackId parent, const std::string& name, int32_t order);
  const TrackInfo& AddCounterTrack(TrackId parent, const std::string& name, CounterUnit unit,
                                   const std::string& unit_name, int32_t order);

  const TrackInfo& Track(TrackId id) const;  // throws for an undeclared id
  const std::vector<TrackInfo>& tracks() const { return tracks_; }

  // Checks `slice` against the contract and records it as open on its track. Slices on the track
  // that end before it begins (do not contain it) are closed first: `end_slice(track, end_ps)` is
  // called for each, innermost first, so a writer can emit their ENDs before this BEGIN.
  // A zero-length slice at a slice's end time lies inside it.
  using EndSlice = std::function<void(TrackId track, uint64_t end_ps)>;
  void BeginSlice(const Slice& slice, const EndSlice& end_slice);
  // Closes every open slice (for Finish), innermost first per track.
  void EndAll(const EndSlice& end_slice);

  void CheckCounter(TrackId track, uint64_t time_ps, double value);

  std::size_t open_flows() const { return open_flows_.size(); }
  std::size_t open_slices() const;

 private:
  struct OpenSlice {
    std::string name;
    uint64_t begin_ps;
    uint64_t end_ps;
  };
  struct TrackState {
    std::vector<OpenSlice> open;  // nested, outermost first
    uint64_t last_begin_ps = 0;
    uint64_t last_counter_ps = 0;
    bool has_counter = false;
  };
  TrackInfo& Declare(TrackId parent, const std::string& name, TrackKind kind, int32_t order);
  std::string Describe(TrackId id) const;

  std::vector<TrackInfo> tracks_;    // index = id - 1
  std::vector<TrackState> states_;   // index = id - 1
  std::unordered_map<uint64_t, uint64_t> open_flows_;  // flow id -> begin_ps of its start
};

// Picoseconds to whole nanoseconds, to nearest (half a nanosecond rounds up). Monotonic, so
// rounding never turns nested or ordered slices into overlapping ones.
inline uint64_t PsToNs(uint64_t ps) { return ps / 1000 + (ps % 1000 >= 500 ? 1 : 0); }

}  // namespace tpusim::traces
