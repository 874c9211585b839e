// The DMAs that fill one block of an element-wise kernel's VMEM tiles with a broadcast of an HBM
// array, or with an array view of one (compiler/lower/array_view.h: a box of the source, nothing
// replicated) (docs/compiler.md, "Element-wise kernels"): the block's tiles hold the broadcast's values
// exactly as a streamed operand of the result's dims would, so the kernel body reads them like
// any other operand, and the broadcast array itself is never written to HBM.
//
// Per piece of the block -- a run of whole matrices (the two most minor physical dims) along the
// most minor major dim, the strips of one matrix that the block holds, or (a block that is part of
// one strip, where not even two strips fit VMEM) a run of column tiles of one strip -- one DMA reads the
// operand's box from HBM into the first column / row / matrix of the tiles, then VMEM-to-VMEM DMAs
// double it along the broadcast dims (lanes, rows, then matrices), each reading what the previous
// wrote (or, lanes_in_registers, one DMA per tile column the kernel reads fills its lane 0) -- so
// a piece's DMAs go on one engine, which runs its DMAs in order (docs/isa.md). The
// other major dims are one index per piece, so need no replication.
// Only the elements are written: the tiles' padding keeps whatever VMEM held (the kernel masks
// its results where the layout has padding).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/lower/program_builder.h"
#include "isa/shape.h"

namespace tpusim::compiler {

struct BroadcastBlock {
  uint64_t source_address = 0;  // the operand in HBM
  isa::Shape source;            // the operand seen in the result's index space (ExpandedView)
  // Where the box of the tiles' index 0 begins in `source` (empty: at 0): an array view's source
  // (compiler/lower/array_view.h), which no DMA replicates (its dims are at least the tiles').
  std::vector<int64_t> source_start;
  isa::Shape tiles;             // the result's dims with the operand's element type and tiles, no memory space
  uint64_t vmem = 0;            // the block's first tile
  int64_t first_strip = 0;      // the block: strips [first_strip, first_strip + strips) of the result
  int64_t strips = 0;
  int64_t strips_per_matrix = 1;
  int64_t strip_bytes = 0;      // bytes of one strip of `tiles`
  int64_t sublanes = 8;
  // A block of part of one strip (strips == 1): its tiles hold columns [first_column,
  // first_column + columns) of the strip, clipped to the array; first_column is a multiple of the
  // tile's columns, so the tiles are contiguous. columns == 0: the block is whole strips.
  int64_t first_column = 0;
  int64_t columns = 0;
  // The kernel replicates the operand along the lanes itself (a per-row value broadcast across
  // its row: vperm from lane 0), reading only lane 0 of the tile columns that are multiples of
  // `lane_tile_stride` (0: the first alone) in each piece: the DMAs fill those, where the element
  // columns were doubled by DMA (a whole block of VMEM copied per broadcast operand, which kept a
  // layer norm's normalization DMA-bound).
  bool lanes_in_registers = false;
  int64_t lane_tile_stride = 0;
};

// Emits the block's DMAs, each signalling `semaphore`; a matrix's DMAs go on one engine, the
// matrices round-robin from `next_engine` (advanced). Returns the number of DMAs.
int EmitBroadcastBlockDmas(ProgramBuilder& out, const BroadcastBlock& block, uint32_t semaphore, uint32_t& next_engine);

}  // namespace tpusim::compiler
