// The small trace the [traces] tests write through every sink: a process, a group track with a
// slice track, a DMA track and a counter track under it; nested slices with equal end times, a
// zero-length slice at its parents' end, a sibling beginning where they end, a flow from the DMA
// to the op, and counter samples. The expected values below follow from the ps times written
// (ns = ps rounded to nearest).
#pragma once

#include <string>

#include "traces/trace_sink.h"

namespace tpusim::traces_test {

struct SampleTracks {
  traces::TrackId process, group, ops, dma, hbm;
};

// Writes the sample trace into `sink` (without calling Finish).
SampleTracks WriteSampleTrace(traces::TraceSink& sink);

// A fresh path under a per-run temporary directory.
std::string TempTracePath(const std::string& name);

}  // namespace tpusim::traces_test
