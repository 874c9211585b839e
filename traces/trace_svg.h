// An SVG timeline of a trace read back by ReadAndCheckPerfettoTrace, for documents and for a
// first look without Perfetto's UI (`tpusim trace-svg`): one row per track in the trace's own
// order (processes as headers, tracks indented under their parents, siblings by sibling order),
// slices as boxes at their nesting depth with their names where they fit and a tooltip, counters
// as step lines, flows as arrows (end of the source slice to the start of the target), a time
// axis in microseconds. Slices narrower than a pixel are merged per row and
// depth into one box ("N slices"), so a big trace gives a small picture.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "traces/trace_check.h"

namespace tpusim::traces {

struct SvgOptions {
  int width_px = 1400;              // the whole picture, labels included
  std::optional<uint64_t> from_ns;  // the time window; the whole trace when not given
  std::optional<uint64_t> to_ns;
};

// Throws tpusim::Error for a width too small to draw in or an empty time window.
std::string RenderTraceSvg(const ParsedTrace& trace, const SvgOptions& options = {});

}  // namespace tpusim::traces
