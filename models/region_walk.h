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
#include <vector>

#include "isa/layout_index.h"
#include "isa/shape.h"

namespace tpusim::models {

// `bytes` bytes at source_offset in the source image go to destination_offset in the
// destination image; offsets are relative to each image's start.
struct ByteRun {
  int64_t source_offset = 0;
  int64_t destination_offset = 0;
  int64_t bytes = 0;
};

// The offsets along each dim of the layouts a DMA engine walks, kept between walks: a program's
// DMAs reuse a few array shapes, and every entry costs a LayoutMap::LinearIndex. An entry is
// computed the first time a walk needs it, so a walk over a slice of a large array pays for its
// slice only. Dims longer than kMaxCachedDim are not kept, and at most kMaxTables tables are
// (the oldest goes first): 32 MiB at most.
class DimTableCache {
 public:
  static constexpr int64_t kMaxCachedDim = int64_t{1} << 16;
  static constexpr std::size_t kMaxTables = 64;

  // out[k] = the linear index of the element at start + k along dim d (index 0 in the other
  // dims), k in [0, out.size()); the same values LinearIndex gives.
  void Slice(const isa::LayoutMap& map, std::size_t d, int64_t start, std::span<int64_t> out);

 private:
  struct Table {
    isa::Shape shape;
    std::size_t dim = 0;
    std::vector<int64_t> linear;  // by index along the dim; kUnknown until computed
  };
  static constexpr int64_t kUnknown = -1;
  std::vector<Table> tables_;  // the most recently made last
};

// For walks whose user only needs which bytes a box covers, not the order of its runs (timing-only
// DMA plans): a box walked element by element is announced first, and skipped when the memo
// already knows its runs. Boxes with equal `pattern` have the same runs relative to their base
// offsets (the offsets of the box's first element on each side); patterns are valid within one
// walk. A box with one run on both sides is never announced.
class BoxMemo {
 public:
  virtual ~BoxMemo() = default;
  // True: the memo accounts for the box and the walk skips it. False: the walk emits the box's
  // runs (and nothing else) and then calls EndBox.
  virtual bool BeginBox(std::span<const int32_t> pattern, int64_t source_base, int64_t destination_base) = 0;
  virtual void EndBox() = 0;
};

// Calls `emit` with runs that together cover every element of the region exactly once; a run
// that continues the previous one on both sides is merged into it (not across the boxes a memo
// is told about). Boxes are visited in the
// source's physical dim order (major to minor), so aligned copies come out in source address
// order. Both maps have whole-byte elements of one width and the region lies inside both arrays
// (ValidateTransfer checks this).
void WalkRegion(const isa::LayoutMap& source, std::span<const int64_t> source_start,
                const isa::LayoutMap& destination, std::span<const int64_t> destination_start,
                std::span<const int64_t> sizes, const std::function<void(const ByteRun&)>& emit,
                DimTableCache* cache = nullptr, BoxMemo* memo = nullptr);

}  // namespace tpusim::models
