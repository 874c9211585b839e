// Boxes whose source or destination walks a dim with a step other than 1 (strided slices,
// interior padding, reverse): the dims with unit steps on both sides form the DMA's box, and the
// others are walked by scalar-core loops that move the DMA's starts (registers) one step at a
// time. The outermost walked dim is cut into one range per DMA engine.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/lower/dma_region.h"

namespace tpusim::compiler {

struct StridedSide {
  DmaArray array;
  std::vector<int64_t> start;
  std::vector<int64_t> step;  // per dim; may be negative (reverse)
};

// dst[dst.start + i * dst.step] = src[src.start + i * src.step] for i in [0, size). Emits the DMAs
// (not waited for). CannotLower past kMaxStridedDmas DMAs.
void EmitStridedCopy(DmaEmitter& emitter, const StridedSide& src, const StridedSide& dst,
                     const std::vector<int64_t>& size);

inline constexpr int64_t kMaxStridedDmas = int64_t{1} << 20;

}  // namespace tpusim::compiler
