// The MXU's arithmetic (docs/isa.md, "MXU"): rows of LHS elements times the latched weights,
//   out[i][c] = sum over k < R of lhs[i][k] * W[k][c],
// with the machine's exact rounding: products exact (bf16, f16, f8: their significands fit f32's,
// and are formed in f64, where the exponent cannot overflow either) or rounded to f32 (f32 inputs),
// then added in f32 in increasing k, each addition rounded to nearest even, starting from the
// first product (the sum starts at -0, which x + -0 = x leaves unchanged). s8 products and sums
// are s32, wrapping. A NaN result is the canonical 0x7FC00000, as everywhere in the machine.
#pragma once

#include <cstdint>
#include <span>

#include "isa/element_type.h"

namespace tpusim::models {

// `lhs` holds rows x depth raw elements of `type` (the low bits of each word), row-major;
// `weights` depth x columns, row-major; `out` receives rows x columns words, row-major: f32
// bits, or s32 for s8. `type` must be an MXU input type (IsMxuInputType).
void MatmulRows(isa::ElementType type, std::span<const uint32_t> lhs,
                std::span<const uint32_t> weights, uint32_t rows, uint32_t depth, uint32_t columns,
                std::span<uint32_t> out);

// The same, but each sum starts from the word already in `out` (f32 bits, or s32 for s8) instead
// of -0: out[i][c] = (..((out[i][c] + p_0) + p_1) .. + p_{depth-1}), each addition rounded (the
// MXU accumulators continue the sum of earlier K blocks in increasing k).
void MatmulRowsAccumulate(isa::ElementType type, std::span<const uint32_t> lhs,
                          std::span<const uint32_t> weights, uint32_t rows, uint32_t depth,
                          uint32_t columns, std::span<uint32_t> out);

}  // namespace tpusim::models
