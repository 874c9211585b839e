// Reading a written Perfetto trace back with the project's schema (traces/perfetto/*.proto) and
// checking what Perfetto's importer requires (../shared/REFERENCE.md section 3, docs/traces.md):
// first byte 0x0A; every TrackEvent packet has trusted_packet_sequence_id; every event's track
// was declared; counter values only on counter tracks and slices only on the others; BEGIN/END
// balanced per track once events are ordered by (timestamp, file position), with no negative
// duration; every terminating flow id was started by an earlier-or-equal slice; no field the
// schema does not know (unknown fields) anywhere. Also reads .gz files.
//
// The parsed content is returned so tests can compare it with what the simulator promises.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/trace_sink.h"

namespace tpusim::traces {

struct ParsedTrack {
  uint64_t uuid = 0;
  uint64_t parent_uuid = 0;  // 0 for a top-level (process) track
  std::string name;          // the track's name, or the process name for a process track
  bool is_process = false;
  bool is_counter = false;
  int32_t order = 0;         // sibling_order_rank
};

struct ParsedSlice {
  uint64_t track = 0;
  std::string name;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint32_t depth = 0;  // how many slices of the same track enclose it (0: a top-level slice)
  std::vector<Annotation> annotations;  // as written (uint/int/double/bool/string)
  std::vector<uint64_t> flow_out;
  std::vector<uint64_t> flow_in;
};

struct ParsedCounterSample {
  uint64_t track = 0;
  uint64_t time_ns = 0;
  double value = 0;
};

struct ParsedTrace {
  std::vector<ParsedTrack> tracks;  // in declaration order
  std::vector<ParsedSlice> slices;  // ordered by (begin, file position)
  std::vector<ParsedCounterSample> counters;
  uint64_t packets = 0;
  std::vector<std::string> problems;  // every violation found, each naming the packet index

  const ParsedTrack* FindTrack(const std::string& name, uint64_t parent_uuid) const;
};

// Throws tpusim::Error only if the file cannot be read or is not a protobuf trace at all;
// violations go into `problems`.
ParsedTrace ReadAndCheckPerfettoTrace(const std::string& path);

}  // namespace tpusim::traces
