// Arrays as sequences of vreg tiles. With the TPU default layouts a 32-bit array's byte image is a
// sequence of S x L tiles (T(8,128): one tile is one vreg, 4 KiB) and a bf16 array's a sequence of
// S x L tiles of 2 KiB (T(8,128)(2,1): one `vld ..., sublanes=0xf` then `vunpack.lo.bf16` gives the
// tile as f32 rows) and an 8-bit array's (s8, u8: T(8,128)(4,1)) a sequence of 1 KiB tiles, S/4 word
// rows each holding 4 packed rows (row r in word row r/4, byte r%4); rank-1 arrays (T(1024),
// T(1024)(128)(2,1), T(1024)(128)(4,1)) are tiles of S*L consecutive
// elements, a scalar is one element. Element-wise kernels stream such tiles: tile t of every
// operand with the output's dims and tile geometry holds the same elements as tile t of the output.
#pragma once

#include <cstdint>
#include <optional>

#include "isa/shape.h"

namespace tpusim::compiler {

struct VtileGeometry {
  int64_t tiles = 0;       // tiles in the image
  int64_t tile_bytes = 0;  // bytes of one tile in memory (4096 for 32-bit, 2048 for bf16, 1024 for 8-bit at 8x128)
  int element_bits = 32;
  // The tiles as strips: `strips` strips of `strip_tiles` tiles. Rank >= 2: a strip is S rows of
  // the two most minor physical dims (ceil(minor / L) tiles); rank <= 1: a strip is one tile.
  int64_t strips = 0;
  int64_t strip_tiles = 1;
  int64_t strips_per_matrix = 1;  // rank >= 2: ceil(rows / S); the last of each is partial
  // Valid rows (rank >= 2) or elements (rank <= 1) in the partial strip's tiles; 0 if none is partial.
  int64_t partial_rows = 0;
  int64_t partial_elements = 0;
  int64_t partial_lanes = 0;  // rank >= 2: valid lanes in a strip's last tile; 0 if full
};

// The geometry of `shape` (an array with a layout) for a machine with `sublanes` x `lanes` vregs,
// or nullopt when its layout is not one the element-wise kernels stream (another tiling, f16,
// f8, memory space other than HBM...).
std::optional<VtileGeometry> GetVtileGeometry(const isa::Shape& shape, int64_t sublanes, int64_t lanes);

// Whether tile t of `a` and of `b` hold the same elements.
bool SameTiling(const isa::Shape& a, const isa::Shape& b, int64_t sublanes, int64_t lanes);

}  // namespace tpusim::compiler
