// The element walk of a DMA: which bytes of the source image go where in the destination image,
// as runs contiguous on both sides, so that the data path copies each run with one memcpy and the
// timing sees the bursts the runs touch.
//
// For separable layouts (no `*` tiles) an element's byte offset is a sum of one table entry per
// dim, and the region is cut into boxes: the first tile of each layout (the whole minor dim when
// untiled), the smaller of the two per dim, aligned to the source's tile grid. A box whose
// elements are contiguous in the source and placed identically in the destination is one run;
// any other box (edges of unaligned regions, a transposing or re-tiling destination) is walked
// element by element. Other layouts are walked element by element through LayoutMap.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "isa/layout_index.h"

namespace tpusim::models {

// `bytes` bytes at source_offset in the source image go to destination_offset in the
// destination image; offsets are relative to each image's start.
struct ByteRun {
  int64_t source_offset = 0;
  int64_t destination_offset = 0;
  int64_t bytes = 0;
};

// Calls `emit` with runs that together cover every element of the region exactly once; a run
// that continues the previous one on both sides is merged into it. Boxes are visited in the
// source's physical dim order (major to minor), so aligned copies come out in source address
// order. Both maps have whole-byte elements of one width and the region lies inside both arrays
// (ValidateTransfer checks this).
void WalkRegion(const isa::LayoutMap& source, std::span<const int64_t> source_start,
                const isa::LayoutMap& destination, std::span<const int64_t> destination_start,
                std::span<const int64_t> sizes, const std::function<void(const ByteRun&)>& emit);

}  // namespace tpusim::models
