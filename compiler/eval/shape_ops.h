// Data-movement HLO ops on Literals: they copy elements bytewise (any element type, NaN payloads
// kept) and never round. Gather and scatter are in gather_scatter.h, sort and top-k in sort.h.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compiler/hlo/literal.h"
#include "isa/element_type.h"

namespace tpusim::eval {

// broadcast: output dims `out_dims`; operand dim i becomes output dim dimensions[i] (HLO's
// `dimensions=`, increasing); the other output dims repeat the operand. An operand dim of size 1
// may also stretch to any output size. Seed 003's Broadcast(operand, sizes) is dimensions =
// {len(sizes), ..., len(sizes) + rank - 1}.
hlo::Literal Broadcast(const hlo::Literal& operand, std::span<const int64_t> out_dims,
                       std::span<const int64_t> dimensions);

// reshape: the row-major elements re-read with `out_dims` (same element count).
hlo::Literal Reshape(const hlo::Literal& operand, std::span<const int64_t> out_dims);

// transpose: output dim i is operand dim permutation[i].
hlo::Literal Transpose(const hlo::Literal& operand, std::span<const int64_t> permutation);

// slice: per dim, elements start, start + stride, ... below limit (0 <= start <= limit <= size,
// stride >= 1).
hlo::Literal Slice(const hlo::Literal& operand, std::span<const int64_t> starts,
                   std::span<const int64_t> limits, std::span<const int64_t> strides);

// dynamic-slice: a box of `sizes` at `starts`, each start clamped to [0, size - slice size] so the
// box fits (XLA's rule; the seed's older text says modulo).
hlo::Literal DynamicSlice(const hlo::Literal& operand, std::span<const int64_t> starts,
                          std::span<const int64_t> sizes);

// dynamic-update-slice: `operand` with the box at `starts` replaced by `update`, starts clamped to
// [0, size - update size].
hlo::Literal DynamicUpdateSlice(const hlo::Literal& operand, const hlo::Literal& update,
                                std::span<const int64_t> starts);

// concatenate: operands (same type and rank, equal dims except `dimension`) joined in order.
hlo::Literal Concatenate(std::span<const hlo::Literal> operands, int64_t dimension);

struct PadDimension {
  int64_t low = 0;       // edge padding before the first element; negative crops
  int64_t high = 0;      // edge padding after the last element; negative crops
  int64_t interior = 0;  // elements between each pair of neighbours; >= 0
};

// pad: interior padding first, then edge padding (negative edges remove elements of the interior-
// padded operand), all with the scalar `padding_value` (seed 003).
hlo::Literal Pad(const hlo::Literal& operand, const hlo::Literal& padding_value,
                 std::span<const PadDimension> padding);

// reverse: each listed dim's index i becomes size - 1 - i.
hlo::Literal Reverse(const hlo::Literal& operand, std::span<const int64_t> dimensions);

// iota: an array of `type` and `dims` whose element is its index along `iota_dimension`,
// converted to `type` with XLA's convert semantics.
hlo::Literal Iota(isa::ElementType type, std::span<const int64_t> dims, int64_t iota_dimension);

// copy: the same value.
hlo::Literal Copy(const hlo::Literal& operand);

}  // namespace tpusim::eval
