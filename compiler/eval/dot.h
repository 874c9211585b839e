// HLO dot with general dimension numbers (batch and contracting dims on each side).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/hlo/literal.h"
#include "isa/element_type.h"

namespace tpusim::eval {

struct DotDimensions {
  std::vector<int64_t> lhs_batch_dims;
  std::vector<int64_t> rhs_batch_dims;
  std::vector<int64_t> lhs_contracting_dims;
  std::vector<int64_t> rhs_contracting_dims;
};

// dot: out[batch, lhs free, rhs free] = sum over the contracting index of lhs * rhs. Output dims:
// the batch dims (in lhs_batch_dims order), then lhs's other dims, then rhs's, each in increasing
// order. Float outputs of bf16, f16, f8 and f32 accumulate in f32 (f64 for f64): each product is
// rounded to the accumulator type, added in increasing row-major order of the contracting index
// (contracting dims taken in lhs_contracting_dims order), and the sum is rounded once to
// `result_type`. Integer outputs multiply and add with wrapping in the output's width. Operands
// are converted to the accumulator type first (so mixed types such as s8 x bf16 -> f32 work).
hlo::Literal Dot(const hlo::Literal& lhs, const hlo::Literal& rhs, const DotDimensions& dims,
                 isa::ElementType result_type);

}  // namespace tpusim::eval
