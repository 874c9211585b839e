// Array views: a chain of stride-1 slices, transposes and reshapes that only add or drop size-1
// dims reads a box of the array at its bottom, element for element, its dims permuted. An element-wise kernel computes such a
// chain where it reads it: one box DMA per block from the source array in HBM into its tiles
// (compiler/lower/broadcast_block_dmas.h), as XLA's loop fusion reads a fused slice's operand at
// an offset, so the slice (the MLP's gate and up halves of one dot, a rotary embedding's halves,
// a norm's scale reshaped to its rows) is never written to HBM as a kernel of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "compiler/hlo/ir.h"
#include "isa/shape.h"

namespace tpusim::compiler {

// Whether `x` is one step of an array view: a slice with every stride 1, a transpose, or a
// reshape whose dims other than the size-1 ones are its operand's in the same order (and not the
// same dims: that is no view), of the operand's element type, on arrays.
bool IsArrayViewStep(const hlo::Instruction& x);

// The box of `source` that a chain of view steps ending at `source` reads.
struct ArrayView {
  const hlo::Instruction* source = nullptr;
  // Per dim of the chain's result: the source dim it walks (in any order, through transposes), or
  // -1 for a size-1 dim that a reshape added (it is no dim of the source).
  std::vector<int64_t> source_dim;
  // Per source dim: the first index the box reads. A source dim no result dim walks is one index.
  std::vector<int64_t> start;
};

// The view of `x` down its chain of view steps to the first instruction that is no step or for
// which `is_source` is true. Nullopt where `x` is no view step.
std::optional<ArrayView> ResolveArrayView(const hlo::Instruction& x,
                                          const std::function<bool(const hlo::Instruction&)>& is_source);

// The view's DMA operands in one index space, so that a box of the result's tiles has the source
// box of the same dims: the result's dims after the source dims that no result dim walks (each one
// index, size 1 in `tiles`, as the most major dims: the same bytes).
struct ArrayViewSpace {
  isa::Shape tiles;                // `result_tiles` with the source's one-index dims added
  isa::Shape source;               // the source array with the result's added size-1 dims
  std::vector<int64_t> start;      // where the box of tiles index 0 begins in `source`
};
ArrayViewSpace ArrayViewDmaSpace(const ArrayView& view, const isa::Shape& result_tiles, const isa::Shape& source);

}  // namespace tpusim::compiler
