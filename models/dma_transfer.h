// What one DMA moves: a rectangular region of an array, from an image in one memory to an image
// in another, each side with its own shape, layout and base address. Element k of the region
// (k = 0 .. sizes-1 per dim) is read at
//   source.base_address + LayoutMap(source.shape).ByteOffset(source.start + k)
// and written at the destination's own offset of destination.start + k, so a DMA can re-tile or
// transpose (a {1,0} source and a {0,1} destination of the same dims). Padding bytes of the
// destination are not written.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/shape.h"
#include "models/memory.h"
#include "models/semaphore.h"

namespace tpusim::models {

struct DmaEndpoint {
  Memory* memory = nullptr;
  uint64_t base_address = 0;   // where the array's image starts
  isa::Shape shape;            // array shape; no layout means row-major, untiled
  std::vector<int64_t> start;  // the region's first element in this array, one entry per dim
};

struct DmaTransfer {
  DmaEndpoint source;
  DmaEndpoint destination;
  std::vector<int64_t> sizes;      // the region's extent per dim; both arrays have this rank
  Semaphore* semaphore = nullptr;  // if set, gets semaphore_increment when the last write lands
  int64_t semaphore_increment = 1;
  uint64_t id = 0;                 // the caller's tag, echoed in DmaCompletion

  // The whole of `source_shape` (at `source_base` in `source`) to `destination_shape`, which must
  // have the same dims.
  static DmaTransfer WholeArray(Memory& source, uint64_t source_base,
                                const isa::Shape& source_shape, Memory& destination,
                                uint64_t destination_base, const isa::Shape& destination_shape);
};

// Throws tpusim::Error saying what is wrong unless: both memories are set; both shapes are dense
// arrays of the same element type with whole-byte elements (E(n) a multiple of 8, equal on both
// sides); start and sizes have the arrays' rank; the region lies inside both arrays; both images
// (LayoutMap::byte_size bytes at base_address) lie inside their memories; the increment >= 0.
void ValidateTransfer(const DmaTransfer& transfer);

}  // namespace tpusim::models
